package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// ranMark is an eval that counts its runs in the page: a plan the client
// was told failed must leave it unset.
const ranMark = "window.__ran = (window.__ran || 0) + 1"

// planOutcome is how one plan to a frozen node's tab ended.
type planOutcome struct {
	who     string
	code    protocol.Code
	err     string
	elapsed time.Duration
	knows   bool // the client knew the tab's node
	notLive bool // errors.Is ErrNodeNotLive
}

// freeze stops a node's process (SIGSTOP: a GC pause, a swapped VM or a
// partition look the same from outside) and resumes it at the test's end,
// so that its cleanup can stop it.
func freeze(t *testing.T, n *node) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.cmd.Process.Signal(syscall.SIGCONT) })
	waitFor(t, "the node's process stops", 10*time.Second, func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.cmd.Process.Pid))
		_, rest, _ := strings.Cut(string(stat), ") ")
		return err == nil && strings.HasPrefix(rest, "T")
	})
}

// plansToFrozen sends plans to tab while its node is frozen, at once and
// side by side: through bc (the Go client) with a short and a default
// deadline, and through the CLI (env) with --timeout 8s (scaled) and its
// default. Finding the node frozen takes about 4 s: the short deadline
// leaves room for a busy machine.
func plansToFrozen(t *testing.T, bc *busclient.Client, env []string, tab string) []planOutcome {
	t.Helper()
	var mu sync.Mutex
	var out []planOutcome
	var wg sync.WaitGroup
	add := func(who string, start time.Time, err error) {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, planOutcome{who: who, code: protocol.CodeOf(err), err: fmt.Sprint(err), elapsed: time.Since(start)})
	}
	for _, d := range []time.Duration{testscale.D(8 * time.Second), 45 * time.Second} {
		wg.Go(func() {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			res, err := bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: ranMark}})
			if err == nil {
				err = fmt.Errorf("the plan answered: %+v", res)
			}
			add(fmt.Sprintf("go client, deadline %s", d), start, err)
		})
	}
	for _, args := range [][]string{{"--timeout", testscale.D(8 * time.Second).String()}, nil} {
		wg.Go(func() {
			start := time.Now()
			r := framebus(t, env, "", append([]string{"eval", ranMark, "--tab", tab}, args...)...)
			m := r.reply(t)
			code, _ := m["code"].(string)
			msg, _ := m["error"].(string)
			add(fmt.Sprintf("cli %q", args), start, &protocol.Error{Code: protocol.Code(code), Message: msg})
		})
	}
	wg.Wait()
	return out
}

// checkUnavailable fails unless every plan failed with node_unavailable
// (not timeout: each gave up before its deadline) naming the node.
func checkUnavailable(t *testing.T, node string, outs []planOutcome) {
	t.Helper()
	for _, o := range outs {
		t.Logf("%s: %s after %s: %s", o.who, o.code, o.elapsed.Round(10*time.Millisecond), o.err)
		if o.code != protocol.CodeNodeUnavailable || !strings.Contains(o.err, "node "+node) {
			t.Errorf("%s: %s %s; want node_unavailable naming node %s", o.who, o.code, o.err, node)
		}
	}
}

// afterThaw resumes a frozen node and waits until its tab answers again;
// no plan the client was told failed has run.
func afterThaw(t *testing.T, bc *busclient.Client, n *node, tab string) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var res protocol.PlanResult
	waitFor(t, "the thawed node's tab answers", 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
		defer cancel()
		var err error
		res, err = bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "window.__ran ?? 0"}})
		return err == nil && res.OK
	})
	if v := string(res.Results[len(res.Results)-1].Value); v != "0" {
		t.Errorf("after the thaw, %s plans told node_unavailable had run", v)
		_ = bc.Frames(context.Background(), tab, 0, 0, func(f busclient.Frame) error {
			t.Logf("frame %d %s %s plan %s at %s", f.Sequence, f.Action, f.Source, f.PlanID, f.Time.Format("15:04:05.000"))
			return nil
		})
	}
}

// A cluster of three members, the tab's node its own process (node one;
// node two and a bus member b beside it), the client at b. Node one
// freezes: the plans waiting for its tab, with short and default
// deadlines, through the Go client and the CLI, fail with
// node_unavailable once the registry forgets it (within about NodeTTL
// plus a second), and so do new plans. A watch of its tab ends the same
// way; one that keeps waiting says when the node answers again and goes
// on. None of the plans runs when the node comes back.
func TestFrozenNodeInACluster(t *testing.T) {
	secret := clusterSecretFile(t)
	listen, routes := bustest.ClusterRoutes(t, 3)
	b := startBusMember(t, "b", memberConfig(t, listen[2], routes, secret, ""), t.TempDir())
	var nodes []*node
	for i, name := range []string{"one", "two"} {
		nodes = append(nodes, launchNode(t, binary, envNode+"="+name, envConfig+"="+memberConfig(t, listen[i], routes, secret, "")))
	}
	for _, n := range nodes {
		n.ready(t)
	}
	one, two := nodes[0], nodes[1]
	creds := credentialsAt(t, two.credsFile(serving.AgentCredsFile), b.state.Bus)
	env := testEnv(envCreds+"="+creds, envBusURL+"="+b.state.Bus)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
	defer cancel()
	bc, err := busclient.Connect(ctx, busclient.Options{CredentialsFile: creds})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	waitForTwoNodesTabs(t, ctx, bc, one, two, 60*time.Second)
	tab := one.tab()
	if res, err := bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1"}}); err != nil || !res.OK {
		t.Fatalf("a plan before the freeze: %+v %v", res, err)
	}
	watch := startProcess(t, env, "watch", "--tab", tab)
	waiting := startProcess(t, env, "watch", "--tab", tab, "--keep-waiting")
	for _, w := range []*process{watch, waiting} {
		waitFor(t, "the watch subscribes", 60*time.Second, func() bool { return strings.Contains(w.stderr.String(), "watching") })
	}

	freeze(t, one)
	checkUnavailable(t, "one", plansToFrozen(t, bc, env, tab))
	start := time.Now()
	_, err = bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: ranMark}})
	t.Logf("a new plan: %s after %s: %v", protocol.CodeOf(err), time.Since(start).Round(10*time.Millisecond), err)
	if protocol.CodeOf(err) != protocol.CodeNodeUnavailable || !errors.Is(err, busclient.ErrNodeNotLive) {
		t.Errorf("a new plan to the frozen node's tab: %v; want node_unavailable, ErrNodeNotLive", err)
	}
	waitFor(t, "the watch ends", 60*time.Second, watch.exited)
	if code := watch.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(watch.stdout.String(), `"code":"node_unavailable"`) ||
		!strings.Contains(watch.stderr.String(), "the tab's node is not live") {
		t.Errorf("the watch of the frozen node's tab: exit %d\nstdout: %s\nstderr: %s", code, watch.stdout, watch.stderr)
	}
	waitFor(t, "the waiting watch says the node is lost", 60*time.Second, func() bool {
		return strings.Contains(waiting.stderr.String(), "waiting for it to come back")
	})

	afterThaw(t, bc, one, tab)
	waitFor(t, "the waiting watch says the node is back", 60*time.Second, func() bool {
		return strings.Contains(waiting.stderr.String(), "answers again")
	})
	res, err := bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "2"}})
	if err != nil || !res.OK {
		t.Fatalf("a plan after the thaw: %+v %v", res, err)
	}
	waitFor(t, "the waiting watch prints the frame made after the thaw", 60*time.Second, func() bool {
		fs := frameLines(t, waiting.stdout.String())
		return len(fs) > 0 && fs[len(fs)-1].Sequence == res.Sequence
	})
	if waiting.exited() {
		t.Errorf("the watch with --keep-waiting ended: %s %s", waiting.stdout, waiting.stderr)
	}
}

// A lone node freezes: its process is also the NATS server the client is
// connected to, so nothing answers at all, not even the server's pongs.
// The plans waiting for its tab, and new ones, give up once it has
// answered nothing for NodeTTL, instead of waiting for their deadlines:
// node_unavailable naming the node from a client that knows it (it listed
// the tabs), unavailable saying the bus server is silent from one that
// does not; none of them runs when it comes back.
func TestFrozenLoneNode(t *testing.T) {
	n := startNode(t, envNode+"=lone")
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
	defer cancel()
	var clients []*busclient.Client
	for range 2 {
		bc, err := busclient.Connect(ctx, busclient.Options{CredentialsFile: n.credsFile(serving.AgentCredsFile)})
		if err != nil {
			t.Fatal(err)
		}
		defer bc.Close()
		clients = append(clients, bc)
	}
	knows, blind := clients[0], clients[1]
	if _, err := knows.Tabs(ctx); err != nil {
		t.Fatal(err)
	}
	tab := n.tab()
	if res, err := blind.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1"}}); err != nil || !res.OK {
		t.Fatalf("a plan before the freeze: %+v %v", res, err)
	}
	freeze(t, n)
	var outs []planOutcome
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, bc := range clients {
		for _, d := range []time.Duration{testscale.D(8 * time.Second), 45 * time.Second} {
			wg.Go(func() {
				start := time.Now()
				pctx, cancel := context.WithTimeout(ctx, d)
				defer cancel()
				_, err := bc.Plan(pctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: ranMark}})
				mu.Lock()
				defer mu.Unlock()
				outs = append(outs, planOutcome{who: fmt.Sprintf("client that listed the tabs %t, deadline %s", bc == knows, d), code: protocol.CodeOf(err),
					err: fmt.Sprint(err), elapsed: time.Since(start), knows: bc == knows, notLive: errors.Is(err, busclient.ErrNodeNotLive)})
			})
		}
	}
	wg.Wait()
	for _, o := range outs {
		t.Logf("%s: %s after %s: %s", o.who, o.code, o.elapsed.Round(10*time.Millisecond), o.err)
		switch {
		case !o.notLive:
			t.Errorf("%s: %s; want ErrNodeNotLive", o.who, o.err)
		case o.knows && (o.code != protocol.CodeNodeUnavailable || !strings.Contains(o.err, "node lone")):
			t.Errorf("%s: %s %s; want node_unavailable naming node lone", o.who, o.code, o.err)
		case !o.knows && o.code != protocol.CodeUnavailable:
			t.Errorf("%s: %s %s; want unavailable: the bus server is silent", o.who, o.code, o.err)
		}
	}
	start := time.Now()
	_, err := knows.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: ranMark}})
	t.Logf("a new plan: %s after %s: %v", protocol.CodeOf(err), time.Since(start).Round(10*time.Millisecond), err)
	if protocol.CodeOf(err) != protocol.CodeNodeUnavailable || !errors.Is(err, busclient.ErrNodeNotLive) {
		t.Errorf("a new plan to the frozen lone node's tab: %v; want node_unavailable, ErrNodeNotLive", err)
	}
	afterThaw(t, blind, n, tab)
}

// A watch of one tab ends when the tab does: closed, it prints the close
// frame (its last), logs "tab closed" and exits 0, and a watch from 1
// started after replays to it and exits the same; its node killed (the
// client at the node's own server, which dies with it), it logs the loss
// and exits 1 with node_unavailable, unless it keeps waiting.
func TestWatchEndsWithItsTab(t *testing.T) {
	n := startNode(t, envNode+"=watched")
	opened := mustOK(t, n.env, "tab", "new", site("/index.html"))
	info, _ := opened["tab"].(map[string]any)
	second, _ := info["tab"].(string)
	if second == "" {
		t.Fatalf("tab new: %v", opened)
	}
	closing := startProcess(t, n.env, "watch", "--tab", second)
	dying := startProcess(t, n.env, "watch", "--tab", n.tab())
	waiting := startProcess(t, n.env, "watch", "--tab", n.tab(), "--keep-waiting")
	for _, w := range []*process{closing, dying, waiting} {
		waitFor(t, "the watch subscribes", 60*time.Second, func() bool { return strings.Contains(w.stderr.String(), "watching") })
	}

	mustOK(t, n.env, "tab", "close", second)
	waitFor(t, "the watch of the closed tab ends", 60*time.Second, closing.exited)
	frames := frameLines(t, closing.stdout.String())
	if code := closing.cmd.ProcessState.ExitCode(); code != 0 || len(frames) == 0 || frames[len(frames)-1].Action != protocol.FrameClose ||
		!strings.Contains(closing.stderr.String(), "tab closed") {
		t.Fatalf("the watch of a tab closed: exit %d\nstdout: %s\nstderr: %s", code, closing.stdout, closing.stderr)
	}
	closeFrame := frames[len(frames)-1]
	replay := framebus(t, n.env, "", "watch", "--tab", second, "--from", "1")
	frames = frameLines(t, replay.stdout)
	if replay.status != 0 || len(frames) != int(closeFrame.Sequence) || frames[len(frames)-1] != closeFrame {
		t.Errorf("watch --from 1 of the closed tab: exit %d, frames %+v; want 1 to its close frame %d\nstderr: %s", replay.status, frames, closeFrame.Sequence, replay.stderr)
	}

	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watch of the dead node's tab ends", 60*time.Second, dying.exited)
	if code := dying.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(dying.stdout.String(), `"code":"node_unavailable"`) ||
		!strings.Contains(dying.stderr.String(), "the tab's node is not live") {
		t.Errorf("the watch of a dead node's tab: exit %d\nstdout: %s\nstderr: %s", code, dying.stdout, dying.stderr)
	}
	waitFor(t, "the waiting watch says the node is lost", 60*time.Second, func() bool {
		return strings.Contains(waiting.stderr.String(), "waiting for it to come back")
	})
	if waiting.exited() {
		t.Errorf("the watch with --keep-waiting ended: %s %s", waiting.stdout, waiting.stderr)
	}
}
