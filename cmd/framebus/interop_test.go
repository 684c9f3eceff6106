package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// Clients nobody here wrote drive a node: the nats CLI and the npm NATS
// client, knowing only the documented subjects, JSON and credentials.
// .ci/run installs both; a machine without them fails these tests (they
// are part of what framebus promises), it does not skip them.

// mustReadCredentials reads a credentials file.
func mustReadCredentials(t *testing.T, path string) protocol.Credentials {
	t.Helper()
	c, err := serving.ReadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// localCredentials is the agent credential serve wrote beside its state file.
func (n *node) localCredentials(t *testing.T) protocol.Credentials {
	t.Helper()
	return mustReadCredentials(t, filepath.Join(filepath.Dir(n.stateFile), "credentials.json"))
}

// addCredentials makes a credential of role with framebus creds add.
func (n *node) addCredentials(t *testing.T, name, role string) (protocol.Credentials, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".json")
	mustOK(t, n.env, "creds", "add", name, "--role", role, "--out", path)
	return mustReadCredentials(t, path), path
}

// natsCLI runs the nats CLI as the user of creds, for at most two minutes.
func natsCLI(t *testing.T, creds protocol.Credentials, args ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("nats")
	if err != nil {
		t.Fatalf("the nats CLI is not installed (.ci/run installs it: go install github.com/nats-io/natscli/nats@v0.5.1): %v", err)
	}
	all := []string{"--server", creds.URL, "--user", creds.User, "--password=" + creds.Password, "--inbox-prefix", creds.InboxPrefix, "--no-context"}
	if creds.JSAPIPrefix != "" {
		all = append(all, "--js-api-prefix", creds.JSAPIPrefix)
	}
	all = append(all, args...)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	t.Cleanup(cancel)
	cmd := testchild.DieWithTest(exec.CommandContext(ctx, path, all...))
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no contexts of the machine's
	return cmd
}

func TestNatsCLIAgainstANode(t *testing.T) {
	t.Parallel() // its own node
	n := startNode(t)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	agent := n.localCredentials(t)
	observer, _ := n.addCredentials(t, "watcher", protocol.RoleObserver)
	subj := protocol.Subjects{Prefix: agent.Prefix}
	tab := n.tab()

	// The observer subscribes to the tab's frames.
	sub := natsCLI(t, observer, "sub", subj.TabFrames(tab), "--count", "1")
	var subOut, subErr lockedBuffer
	sub.Stdout, sub.Stderr = &subOut, &subErr
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "nats sub subscribes", 30*time.Second, func() bool {
		return strings.Contains(subOut.String()+subErr.String(), "Subscribing")
	})

	// The agent sends a plan with nats request.
	plan := `{"id":"nats-cli-1","actions":[{"type":"navigate","url":"` + site("/product.html?id=cli") + `","wait":true}]}`
	out, err := natsCLI(t, agent, "request", subj.TabPlan(tab), plan, "--timeout", "60s", "--raw").CombinedOutput()
	if err != nil {
		t.Fatalf("nats request as the agent: %v\n%s", err, out)
	}
	res, err := protocol.DecodePlanResult([]byte(lastLine(string(out))))
	if err != nil || !res.OK || res.Sequence < 2 {
		t.Fatalf("the agent's plan: %v %+v\n%s", err, res, out)
	}
	// nats sub says "Subscribing" just before it subscribes: a frame
	// published in between does not reach it. Another frame of the page
	// (an eval makes one) is sent until one does.
	subDone := make(chan error, 1)
	go func() { subDone <- sub.Wait() }()
	for again, giveUp := time.NewTicker(testscale.D(5*time.Second)), time.After(testscale.D(time.Minute)); ; {
		select {
		case err := <-subDone:
			again.Stop()
			if err != nil {
				t.Fatalf("nats sub: %v\n%s", err, subErr.String())
			}
		case <-again.C:
			t.Log("nats sub has no frame yet: the page makes another")
			if out, err := natsCLI(t, agent, "request", subj.TabPlan(tab), `{"actions":[{"type":"eval","expression":"1"}]}`, "--timeout", "60s", "--raw").CombinedOutput(); err != nil {
				t.Fatalf("nats request as the agent: %v\n%s", err, out)
			}
			continue
		case <-giveUp:
			t.Fatalf("nats sub got no frame\n%s", subErr.String())
		}
		break
	}
	f, err := protocol.DecodeFrame([]byte(jsonLine(subOut.String())))
	if err != nil || f.Tab != tab || !strings.Contains(f.URL, "id=cli") {
		t.Fatalf("the observer's frame: %v %+v\n%s", err, f, subOut.String())
	}

	// The observer may not send one: the server refuses it (the nats CLI
	// reports the violation and times out), and the tab did not move.
	denied := `{"id":"nats-cli-2","actions":[{"type":"navigate","url":"` + site("/read.html") + `","wait":true}]}`
	out, _ = natsCLI(t, observer, "request", subj.TabPlan(tab), denied, "--timeout", "3s", "--raw").CombinedOutput()
	if want := `Permissions Violation for Publish to "` + subj.TabPlan(tab) + `"`; !strings.Contains(string(out), want) {
		t.Errorf("the observer's nats request does not report %s:\n%s", want, out)
	}
	tabs := mustOK(t, n.env, "pages")
	if got := tabs["tabs"].([]any)[0].(map[string]any)["sequence"].(float64); int64(got) != res.Sequence {
		t.Errorf("the tab is at frame %v after the observer's plan, want %d: it ran", got, res.Sequence)
	}

	// The history, through the observer's JetStream API prefix: the
	// tab's current frame is the plan's last, by a direct get.
	out, err = natsCLI(t, observer, "stream", "get", subj.FrameStream(), "--last-for", subj.TabFrames(tab), "--json").Output()
	var stored struct {
		Data []byte `json:"data"`
	}
	if err == nil {
		err = json.Unmarshal(out, &stored)
	}
	if last, derr := protocol.DecodeFrame(stored.Data); err != nil || derr != nil || last.Sequence != res.Sequence {
		t.Errorf("nats stream get --last-for as the observer: %v %v; frame %d, want %d\n%s", err, derr, last.Sequence, res.Sequence, out)
	}
	// And no consumer (a user's account has no consumer API).
	out, _ = natsCLI(t, observer, "--timeout", "3s", "consumer", "add", subj.FrameStream(), "spy", "--pull", "--deliver", "all", "--ack", "none", "--defaults").CombinedOutput()
	if want := `Permissions Violation for Publish to "` + observer.JSAPIPrefix + ".CONSUMER.CREATE." + subj.FrameStream() + `.spy"`; !strings.Contains(string(out), want) {
		t.Errorf("the observer's nats consumer add does not report %s:\n%s", want, out)
	}

	// Discovery: nats micro ls lists the node and its tab as framebus;
	// stats count the agent's plan.
	out, err = natsCLI(t, observer, "micro", "ls").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "framebus node") || !strings.Contains(string(out), "framebus tab") {
		t.Errorf("nats micro ls: %v\n%s", err, out)
	}
	out, err = natsCLI(t, observer, "micro", "stats", "framebus", "--json").Output()
	var stats []struct {
		Metadata  map[string]string `json:"metadata"`
		Endpoints []struct {
			Name     string `json:"name"`
			Subject  string `json:"subject"`
			Requests int    `json:"num_requests"`
		} `json:"endpoints"`
	}
	if err == nil {
		err = json.Unmarshal(out, &stats)
	}
	plans, usersAdded := -1, -1
	for _, s := range stats {
		for _, e := range s.Endpoints {
			if s.Metadata["tab"] == tab && e.Subject == subj.TabPlan(tab) {
				plans = e.Requests
			}
			if s.Metadata["admin"] == "users" && e.Subject == subj.AdminUsers(protocol.UsersAdd) {
				usersAdded = e.Requests // the creds add that made the observer
			}
		}
	}
	if usersAdded < 1 {
		t.Errorf("nats micro stats framebus: the user administration's add endpoint counts %d requests, want creds add's at least", usersAdded)
	}
	if err != nil || plans < 1 {
		t.Errorf("nats micro stats framebus: %v; the tab's plan endpoint counts %d requests, want the agent's at least\n%s", err, plans, out)
	}
}

func TestNpmClientPlansAndReplays(t *testing.T) {
	n := startNode(t)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	script, err := filepath.Abs("../../testdata/js/agent.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "nats")); err != nil {
		t.Fatalf("the npm NATS client is not installed (.ci/run runs: npm ci --prefix testdata/js): %v", err)
	}
	pages := []string{site("/product.html?id=npm"), site("/read.html"), site("/big.html")}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	cmd := testchild.DieWithTest(exec.CommandContext(ctx, "node", script))
	cmd.Env = append(os.Environ(),
		"FRAMEBUS_CREDS="+filepath.Join(filepath.Dir(n.stateFile), "credentials.json"),
		"FRAMEBUS_TAB="+n.tab(),
		"FRAMEBUS_PAGES="+strings.Join(pages, " "))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node agent.mjs: %v\n%s\nstderr: %s", err, out, stderr.String())
	}
	var got struct {
		Plan     protocol.PlanResult
		Live     []seenFrame
		Replayed []seenFrame
		Errors   []string
	}
	if err := json.Unmarshal([]byte(lastLine(string(out))), &got); err != nil {
		t.Fatalf("agent.mjs printed %s: %v", out, err)
	}
	if len(got.Errors) > 0 || !got.Plan.OK {
		t.Fatalf("agent.mjs: %s", out)
	}
	last := got.Plan.Sequence
	// Live: the plan's frames, in order, none missing.
	checkRun(t, "live", got.Live, last-int64(len(pages))+1, last)
	// Replayed: every frame of the tab since it opened.
	checkRun(t, "replayed", got.Replayed, 1, last)
	for _, f := range got.Replayed[len(got.Replayed)-len(pages):] {
		if !f.Content {
			t.Errorf("replayed frame %d (%s) has no content", f.Sequence, f.URL)
		}
	}
}

// seenFrame is what agent.mjs reports of a frame.
type seenFrame struct {
	Sequence int64
	URL      string
	Content  bool
}

// checkRun checks frames are exactly from..to, in order.
func checkRun(t *testing.T, what string, frames []seenFrame, from, to int64) {
	t.Helper()
	var seqs []int64
	for _, f := range frames {
		seqs = append(seqs, f.Sequence)
	}
	if int64(len(frames)) != to-from+1 {
		t.Fatalf("%s frames %v, want %d to %d", what, seqs, from, to)
	}
	for i, f := range frames {
		if f.Sequence != from+int64(i) {
			t.Fatalf("%s frames %v, want %d to %d", what, seqs, from, to)
		}
	}
}

// jsonLine is the first line of s that is a JSON object (nats sub prints
// the message's subject and headers around it).
func jsonLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "{") {
			return l
		}
	}
	return ""
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
