package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// A navigate is answered at commit, naming its frame, and the frame goes
// out once the page has loaded. A node killed in between, and started
// again with its state: the restore frame comes after the frame the
// reply named, not as it, so a plan based on that frame (another page)
// is refused stale_frame instead of running on the restored one. (It
// ran, 5 of 5 tries from outside, when only published frames were
// marked.)
func TestNodeKilledBeforeANavigatesPageLoaded(t *testing.T) {
	t.Parallel()
	loading := make(chan struct{})
	defer close(loading)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<!doctype html><title>still loading</title><p>more to come")
		w.(http.Flusher).Flush()
		select { // the document commits; its load never comes
		case <-loading:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	dir := t.TempDir()
	env, serve := servesWithItsState(t, dir)
	n := serve()
	tab := n.tab()
	mustOK(t, env, "navigate", site("/"), "--wait", "--tab", tab)
	reply := mustOK(t, env, "navigate", slow.URL+"/", "--tab", tab)
	named := int64(reply["sequence"].(float64))
	profile := chromiumProfile(t, n.cmd.Process.Pid)
	t.Cleanup(func() { os.RemoveAll(profile) }) // a killed node leaves its temporary profile
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-n.done

	serve()
	var r result
	waitFor(t, "the restored tab answers", time.Minute, func() bool {
		r = framebus(t, env, "", "click", "p", "--based-on", fmt.Sprint(named), "--tab", tab)
		return r.reply(t)["code"] != string(protocol.CodeUnavailable) // the node's answer while the tab comes back
	})
	if m := r.reply(t); r.status == 0 || m["code"] != string(protocol.CodeStaleFrame) {
		t.Fatalf("a click based on frame %d, which the navigate's reply named before the kill: exit %d, %s; want stale_frame", named, r.status, r.stdout)
	}
	out := framebus(t, env, "", "frames", "--tab", tab, "--from", fmt.Sprint(named+1), "--to", fmt.Sprint(named+1))
	var f protocol.Frame
	if err := json.Unmarshal([]byte(out.stdout), &f); err != nil || f.Action != protocol.FrameRestore || !strings.Contains(f.Note, "never reached the history") {
		t.Fatalf("frame %d: %s %v; want the restore frame, after the one the reply named", named+1, out.stdout, err)
	}
}

// A plan whose node is killed while it runs, before it made a frame, and
// that its client sends again under its id once the node is back with
// its state, does not run a second time: the restored tab answers it
// outcome_unknown (duplicate), saying it began before the restart; the
// command that sent it, waiting through the restart, says the same. (It
// ran again, 2 of 2 tries from outside, when only the plans the history's
// frames name were known after a restart; and the waiting command said
// "not taken", 4 of 4, and its user's new command ran it again.)
func TestPlanBegunBeforeAKillDoesNotRunAgain(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	marks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mark" {
			hits.Add(1)
		}
		fmt.Fprint(w, "<!doctype html><title>marks</title><p>marks")
	}))
	defer marks.Close()
	dir := t.TempDir()
	env, serve := servesWithItsState(t, dir)
	n := serve()
	tab := n.tab()
	mustOK(t, env, "navigate", marks.URL+"/", "--wait", "--tab", tab)
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte(`{"id":"begun-before-the-kill","action":{"type":"eval","timeout":"2m",
		"expression":"fetch('/mark'); new Promise(r => setTimeout(r, 120000))"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	first := startProcess(t, env, "plan", plan, "--tab", tab)
	waitFor(t, "the plan runs (its page fetched /mark)", time.Minute, func() bool { return hits.Load() == 1 })
	profile := chromiumProfile(t, n.cmd.Process.Pid)
	t.Cleanup(func() { os.RemoveAll(profile) }) // a killed node leaves its temporary profile
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-n.done

	serve()
	// The command that sent it reconnects and sends it again: told what
	// the restored tab knows of it, not "not taken" (its user would run
	// it anew).
	waitFor(t, "the first command ends", time.Minute, first.exited)
	var told map[string]any
	if err := json.Unmarshal([]byte(first.stdout.String()), &told); err != nil || told["code"] != string(protocol.CodeOutcomeUnknown) {
		t.Fatalf("the command whose node was killed and came back: %s %v; want outcome_unknown", first.stdout.String(), err)
	}
	var r result
	waitFor(t, "the restored tab answers", time.Minute, func() bool {
		r = framebus(t, env, "", "plan", plan, "--tab", tab)
		return r.reply(t)["code"] != string(protocol.CodeUnavailable) // the node's answer while the tab comes back
	})
	m := r.reply(t)
	if m["code"] != string(protocol.CodeOutcomeUnknown) || m["duplicate"] != true || !strings.Contains(fmt.Sprint(m["error"]), "began before the tab's node restarted") {
		t.Fatalf("the plan sent again after the restart: %s; want outcome_unknown, duplicate, not run again", r.stdout)
	}
	mustOK(t, env, "eval", "1", "--tab", tab) // the tab's queue is past it
	if n := hits.Load(); n != 1 {
		t.Fatalf("the plan's page fetched /mark %d times, want once", n)
	}
}
