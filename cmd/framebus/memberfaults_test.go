package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/serving"
)

// Issue 33, items 1 and 6, at the command line, in a cluster of three:
// node one (serve, with the tab) and bus members two and three; the
// CLI logs in at member two.
//   - Node one frozen (SIGSTOP): framebus plan with a 1 s deadline
//     answers outcome_unknown naming its plan (or, if the CLI was too
//     slow to send it in time, node_unavailable), exit 1; once node one
//     is thawed the plan has not run and does not.
//   - Member two killed (kill -9) while the tab runs the CLI's eval: the
//     CLI reconnects to another member, sends the plan again under its
//     id, and prints the eval's own result; the eval ran once.
//   - Node one killed while the tab runs the CLI's eval: node_unavailable,
//     saying that the plan had been sent and may have run.
func TestCLIThroughClusterFaults(t *testing.T) {
	secret := clusterSecretFile(t)
	listen, routes := bustest.ClusterRoutes(t, 3)
	config := func(i int, extra string) string { return memberConfig(t, listen[i], routes, secret, extra) }
	profiles := filepath.Join(testdir.Enterable(t), "profiles")
	one := launchNode(t, binary, envNode+"=one", envConfig+"="+config(0, "browser:\n  profileDir: "+profiles+"\n"))
	two := startBusMember(t, "two", config(1, ""), t.TempDir())
	three := startBusMember(t, "three", config(2, ""), t.TempDir())
	one.ready(t)
	tab := one.tab()
	agentFile := one.credsFile(serving.AgentCredsFile)
	atTwo := testEnv(envCreds + "=" + credentialsAt(t, agentFile, two.state.Bus))
	atThree := testEnv(envCreds + "=" + credentialsAt(t, agentFile, three.state.Bus))
	waitFor(t, "node one's tab answers at member two", 30*time.Second, func() bool {
		return framebus(t, atTwo, "", "eval", "1", "--tab", tab).status == 0
	})
	mustOK(t, atTwo, "navigate", site("/"), "--tab", tab)
	evalAtThree := func(expr string) string {
		t.Helper()
		var r result
		waitFor(t, "an eval through member three", 60*time.Second, func() bool {
			r = framebus(t, atThree, "", "eval", expr, "--tab", tab)
			return r.status == 0
		})
		return fmt.Sprint(r.reply(t)["value"])
	}

	// Node one frozen.
	thaw := freezeProcess(t, one.process)
	// A deadline shorter than a node's liveness (it would be reported
	// node_unavailable after 3 s) and than a stall (2 s, refused anyway).
	r := framebus(t, atTwo, planFile(t, "cli-frozen", "window.lateRuns = (window.lateRuns || 0) + 1", time.Second), "plan", "--tab", tab)
	m := r.reply(t)
	// The CLI may start so slowly that the deadline has passed before it
	// sends: then node one's lost liveness (node_unavailable, leaving a
	// cancel of the plan) answers first; or, on a loaded machine, nothing
	// at member two answers for the tab or lists tabs at all (unavailable:
	// not sent). Each says what became of the plan, by its id, and never
	// that no node runs.
	notSent := m["code"] == "unavailable" && strings.Contains(fmt.Sprint(m["error"]), "was not sent")
	if msg := fmt.Sprint(m["error"]); r.status != exitFailed || m["code"] != "outcome_unknown" && m["code"] != "node_unavailable" && !notSent || !strings.Contains(msg, "plan cli-frozen") {
		t.Errorf("framebus plan to a frozen node: exit %d, %s; want outcome_unknown naming plan cli-frozen", r.status, r.stdout)
	}
	thaw()
	if runs := evalAtThree("window.lateRuns ?? 0"); runs != "0" {
		t.Errorf("the plan the CLI was told outcome_unknown of ran %s times after the thaw", runs)
	}

	// Member two killed while the eval waits on the hold server.
	var hits atomic.Int64
	started, release, never := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		released := release
		if r.URL.Path == "/never" {
			released = never
		} else {
			hits.Add(1)
		}
		started <- struct{}{}
		select {
		case <-released:
		case <-r.Context().Done():
		}
	}))
	defer hold.Close()
	defer close(never) // first: a handler still waiting lets Close return
	expr := fmt.Sprintf("(async () => { window.heldRuns = (window.heldRuns || 0) + 1; await fetch(%q, {mode: 'no-cors'}); return window.heldRuns })()", hold.URL+"/hold")
	cli := startProcess(t, atTwo, "eval", expr, "--tab", tab)
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatalf("the eval did not reach the hold server\nstdout: %s\nstderr: %s", cli.stdout, cli.stderr)
	}
	if err := two.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-two.done
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	select {
	case <-cli.done:
	case <-ctx.Done():
		t.Fatalf("the CLI did not finish\nstdout: %s\nstderr: %s", cli.stdout, cli.stderr)
	}
	out := result{stdout: cli.stdout.String(), stderr: cli.stderr.String(), status: cli.cmd.ProcessState.ExitCode()}
	if m := out.reply(t); out.status != 0 || m["ok"] != true || fmt.Sprint(m["value"]) != "1" {
		t.Errorf("the eval whose member was killed: exit %d, %s %s; want its result, 1", out.status, out.stdout, out.stderr)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the eval reached the hold server %d times, want once", n)
	}
	if runs := evalAtThree("window.heldRuns"); runs != "1" {
		t.Errorf("the eval ran %s times, want once", runs)
	}

	// Node one killed while the tab runs the CLI's eval (through
	// member three): node_unavailable, saying that the plan had been
	// sent and may have run.
	cli = startProcess(t, atThree, "eval", strings.ReplaceAll(expr, "/hold", "/never"), "--tab", tab)
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatalf("the eval did not reach the hold server\nstdout: %s\nstderr: %s", cli.stdout, cli.stderr)
	}
	if err := one.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cli.done:
	case <-ctx.Done():
		t.Fatalf("the CLI did not finish\nstdout: %s\nstderr: %s", cli.stdout, cli.stderr)
	}
	out = result{stdout: cli.stdout.String(), stderr: cli.stderr.String(), status: cli.cmd.ProcessState.ExitCode()}
	if m := out.reply(t); out.status != exitFailed || m["code"] != "node_unavailable" || !strings.Contains(fmt.Sprint(m["error"]), "had been sent to it: it may have run") {
		t.Errorf("the eval whose node was killed: exit %d, %s %s; want node_unavailable saying the plan may have run", out.status, out.stdout, out.stderr)
	}
}
