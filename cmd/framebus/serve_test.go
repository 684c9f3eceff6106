package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// serve and the client commands as separate processes: clients find the
// node through the state file, --bus or $FRAMEBUS_URL, and print the
// seeds' replies.
func TestServeAndClientCommands(t *testing.T) {
	t.Parallel() // its own node
	n := startNode(t)
	if st, err := serving.ReadState(n.stateFile); err != nil || st.Bus != n.state.Bus || st.PID != n.cmd.Process.Pid {
		t.Fatalf("state file = %+v, %v; serve printed %+v", st, err, n.state)
	}

	nav := mustOK(t, n.env, "navigate", site("/"), "--wait") // the title is known once loaded
	if nav["url"] != site("/") || nav["title"] != "framebus example shop" || nav["sequence"] != 2.0 {
		t.Fatalf("navigate: %v", nav)
	}
	if click := mustOK(t, n.env, "click", "#count"); click["sequence"] != 3.0 {
		t.Fatalf("click: %v", click)
	}
	if status := mustOK(t, n.env, "eval", "document.getElementById('status').textContent"); status["value"] != "clicked 1" {
		t.Fatalf("the click did not reach the page: %v", status)
	}

	r := framebus(t, n.env, "", "eval", "1+1")
	if r.status != 0 || !strings.HasPrefix(r.stdout, `{"ok":true,`) || r.reply(t)["value"] != 2.0 {
		t.Fatalf("eval 1+1: exit %d, %s", r.status, r.stdout)
	}
	undef := mustOK(t, n.env, "eval", "undefined")
	if _, has := undef["value"]; has {
		t.Fatalf("eval undefined has a value field: %v", undef)
	}
	null := mustOK(t, n.env, "eval", "null")
	if v, has := null["value"]; !has || v != nil {
		t.Fatalf("eval null: %v", null)
	}

	r = framebus(t, n.env, "", "click", "#missing")
	if m := r.reply(t); r.status != 1 || m["ok"] != false || m["code"] != "element_not_found" || m["error"] != "element not found: #missing" {
		t.Fatalf("failing click: exit %d, %s", r.status, r.stdout)
	}
	// An element no scrolling reaches (a closed off-canvas menu).
	mustOK(t, n.env, "eval", `document.body.insertAdjacentHTML("beforeend", "<button id=menu style='position:fixed;left:-300px'>Menu</button>"), 1`)
	r = framebus(t, n.env, "", "click", "#menu")
	if m := r.reply(t); r.status != 1 || m["code"] != "not_visible" || !strings.Contains(fmt.Sprint(m["error"]), "#menu lies off the page beyond its left edge") {
		t.Fatalf("click on an element off the page: exit %d, %s", r.status, r.stdout)
	}
	r = framebus(t, n.env, "", "eval", "1", "--based-on", "1")
	if m := r.reply(t); r.status != 1 || m["code"] != "stale_frame" {
		t.Fatalf("stale eval: exit %d, %s", r.status, r.stdout)
	}
	r = framebus(t, n.env, "", "eval", "1", "--tab", "NOSUCHTAB")
	if m := r.reply(t); r.status != 1 || m["code"] != "tab_not_found" || !strings.Contains(m["error"].(string), n.tab()) {
		t.Fatalf("unknown tab: exit %d, %s", r.status, r.stdout)
	}

	// The bus from --bus and from $FRAMEBUS_URL, with no state file.
	bare := testEnv(envState+"="+t.TempDir()+"/none.json", envCreds+"="+n.credsFile(serving.AgentCredsFile))
	mustOK(t, bare, "eval", "1", "--bus", n.state.Bus, "--tab", n.tab())
	cur := mustOK(t, append(bare, envURL+"="+n.state.Bus), "eval", "2")

	// A plan from stdin, planned ahead from the current frame.
	seq := int64(cur["sequence"].(float64))
	plan := fmt.Sprintf(`{"actions": [
		{"type": "navigate", "url": %q, "basedOnSequence": %d},
		{"type": "click", "element": "#result3", "basedOnSequence": %d}]}`, site("/search.html?q=products"), seq, seq+1)
	r = framebus(t, n.env, plan, "plan")
	var res protocol.PlanResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.status != 0 || !res.OK || res.Executed != 2 || res.Sequence != seq+2 {
		t.Fatalf("plan: exit %d, %s", r.status, r.stdout)
	}
	if got := res.Results[1].URL; got != site("/product.html?id=3") {
		t.Fatalf("click #result3 went to %q", got)
	}
	r = framebus(t, n.env, plan, "plan", "-")
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.status != 1 || res.Code != protocol.CodeStaleFrame || res.Stopped == nil || res.Stopped.Index != 0 {
		t.Fatalf("stale plan: exit %d, %s", r.status, r.stdout)
	}
}

// Acceptance 5: an observer process started before a series of plans
// receives every frame, in order, with no gaps.
func TestWatchSeesEveryFrame(t *testing.T) {
	t.Parallel() // its own node and watchers
	n := startNode(t)
	// A tab nobody has is refused, not watched forever.
	r := framebus(t, n.env, "", "watch", "--tab", "NOSUCHTAB")
	if m := r.reply(t); r.status != 1 || m["code"] != "tab_not_found" || !strings.Contains(m["error"].(string), n.state.Tabs[0].Tab) {
		t.Fatalf("watch --tab NOSUCHTAB: exit %d, %s", r.status, r.stdout)
	}
	watch := startProcess(t, testEnv(), "watch", "--all", "--bus", n.state.Bus, "--creds", n.credsFile(serving.AgentCredsFile))
	waitFor(t, "watch subscribes", 30*time.Second, func() bool {
		if watch.exited() {
			t.Fatalf("watch exited: %v", watch.err)
		}
		return strings.Contains(watch.stderr.String(), "watching")
	})

	// 30 plans: single actions from the action commands and multi-action
	// plans from the plan command, each based on the frame before it.
	seq := n.state.Tabs[0].Sequence
	want := seq
	for i := 0; i < 30; i++ {
		based := fmt.Sprint(seq)
		var reply map[string]any
		switch i % 5 {
		case 0:
			reply = mustOK(t, n.env, "navigate", site("/"), "--based-on", based)
		case 1:
			reply = mustOK(t, n.env, "click", "#count", "--based-on", based)
		case 2:
			reply = mustOK(t, n.env, "eval", "document.title", "--based-on", based)
		case 3:
			plan := fmt.Sprintf(`{"actions": [
				{"type": "navigate", "url": %q, "basedOnSequence": %d},
				{"type": "click", "selector": "#result2", "basedOnSequence": %d},
				{"type": "click", "selector": "#buy", "basedOnSequence": %d}]}`,
				site("/search.html?q=lamps"), seq, seq+1, seq+2)
			r := framebus(t, n.env, plan, "plan")
			reply = r.reply(t)
			if r.status != 0 || reply["executed"] != 3.0 {
				t.Fatalf("plan %d: exit %d, %s", i, r.status, r.stdout)
			}
		case 4:
			reply = mustOK(t, n.env, "click", "#back-to-search", "--based-on", based)
		}
		next := int64(reply["sequence"].(float64))
		if i%5 == 3 {
			want += 3
		} else {
			want++
		}
		if next != want {
			t.Fatalf("plan %d: the tab is at frame %d, want %d: %v", i, next, want, reply)
		}
		seq = next
	}

	var frames []protocol.Frame
	waitFor(t, "watch prints the last frame", 30*time.Second, func() bool {
		frames = frames[:0]
		for _, line := range readLines(watch.stdout.String()) {
			var f protocol.Frame
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Fatalf("watch printed a line that is not a frame: %v: %.200s", err, line)
			}
			frames = append(frames, f)
		}
		return len(frames) > 0 && frames[len(frames)-1].Sequence >= want
	})
	if status := watch.stop(syscall.SIGINT, 10*time.Second); status != 0 {
		t.Errorf("watch exited %d on SIGINT", status)
	}
	first := n.state.Tabs[0].Sequence + 1
	if int64(len(frames)) != want-first+1 {
		t.Errorf("watch printed %d frames, want %d (frames %d to %d)", len(frames), want-first+1, first, want)
	}
	for i, f := range frames {
		if f.Tab != n.tab() || f.Sequence != first+int64(i) {
			t.Fatalf("frame %d is %s/%d, want %s/%d: frames must arrive in order with no gaps", i, f.Tab, f.Sequence, n.tab(), first+int64(i))
		}
	}
}

// Acceptance 7: on SIGINT and on SIGTERM serve exits 0 promptly, leaves no
// Chromium behind, removes the temporary profile and the state file.
func TestServeStopsOnSIGINT(t *testing.T)  { testServeStops(t, syscall.SIGINT) }
func TestServeStopsOnSIGTERM(t *testing.T) { testServeStops(t, syscall.SIGTERM) }

func testServeStops(t *testing.T, sig syscall.Signal) {
	n := startNode(t)
	profile := chromiumProfile(t, n.cmd.Process.Pid)
	if fi, err := os.Stat(profile); err != nil || !fi.IsDir() {
		t.Fatalf("profile %s: %v", profile, err)
	}
	if len(processesMentioning(profile)) == 0 {
		t.Fatalf("no process runs with profile %s", profile)
	}
	mustOK(t, n.env, "navigate", site("/")) // something to shut down

	if status := n.stop(sig, 30*time.Second); status != 0 {
		t.Fatalf("serve exited %d on %s, want 0", status, sig)
	}
	n.checkLeftNothing(profile)
	// The node is gone for clients too.
	r := framebus(t, n.env, "", "eval", "1")
	if m := r.reply(t); r.status != 1 || m["code"] != "unavailable" || m["error"] != noNodeMessage {
		t.Errorf("after shutdown: exit %d, %s", r.status, r.stdout)
	}
}

// A second signal during the shutdown kills the browser at once instead of
// waiting for it, and still leaves nothing behind: no Chromium, no
// temporary profile, no state file.
func TestServeSecondSignalStillCleansUp(t *testing.T) {
	n := startNode(t)
	profile := chromiumProfile(t, n.cmd.Process.Pid)
	mustOK(t, n.env, "navigate", site("/"))
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, "serve says it is shutting down", 30*time.Second, func() bool {
		return strings.Contains(n.stderr.String(), "shutting down")
	})
	n.stop(syscall.SIGTERM, 30*time.Second) // its exit status may say the browser was killed
	if !strings.Contains(n.stderr.String(), "second signal") {
		t.Logf("the shutdown ended before the second signal came: %s", n.stderr)
	}
	n.checkLeftNothing(profile)
}

// checkLeftNothing checks a stopped node left no Chromium running with
// profile, and removed the profile and its state file; its credentials
// stay for its next start, its user's alone (0600).
func (n *node) checkLeftNothing(profile string) {
	n.t.Helper()
	waitFor(n.t, "every chromium process with the profile has exited", 10*time.Second, func() bool {
		return len(processesMentioning(profile)) == 0
	})
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		n.t.Errorf("profile %s still exists: %v", profile, err)
	}
	if _, err := os.Stat(n.stateFile); !os.IsNotExist(err) {
		n.t.Errorf("%s still exists: %v", n.stateFile, err)
	}
	for _, file := range []string{n.credsFile(serving.AgentCredsFile), n.credsFile(serving.AdminCredsFile)} {
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			n.t.Errorf("%s after the node stopped: %v %v; want it kept, 0600", file, fi, err)
		}
	}
}

// The demo runs the seed's example to exit 0 and shows the stale replay.
func TestDemo(t *testing.T) {
	r := framebus(t, testEnv(), "", "demo")
	if r.status != 0 {
		t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", r.status, r.stdout, r.stderr)
	}
	var seqs []int64
	var stale bool
	for _, line := range readLines(r.stdout) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("demo line is neither a comment nor JSON: %v: %s", err, line)
		}
		if s, ok := m["source"]; ok && s != nil { // a frame
			seqs = append(seqs, int64(m["sequence"].(float64)))
			if p, ok := m["fullPage"].(string); ok && len(p) > demoFullPageChars+40 {
				t.Errorf("fullPage not cut: %d bytes", len(p))
			}
		}
		if m["code"] == "stale_frame" {
			stale = true
		}
	}
	if fmt.Sprint(seqs) != "[1 2 3 4]" {
		t.Errorf("demo frames %v, want [1 2 3 4]\n%s", seqs, r.stdout)
	}
	if !stale || !strings.Contains(r.stdout, "stale_frame") {
		t.Errorf("demo shows no stale_frame result:\n%s", r.stdout)
	}
}

// Without Chromium, serve and demo fail at once and say how to install it.
func TestNoChromium(t *testing.T) {
	env := testEnv(envState+"="+t.TempDir()+"/node.json", "FRAMEBUS_CHROMIUM=/nonexistent/chromium")
	for _, args := range [][]string{{"serve"}, {"demo"}} {
		r := framebus(t, env, "", args...)
		m := r.reply(t)
		if r.status != 1 || m["code"] != "browser_not_running" || !strings.Contains(m["error"].(string), "apt-get install -y chromium") {
			t.Errorf("%s without chromium: exit %d, %s", args[0], r.status, r.stdout)
		}
	}
}
