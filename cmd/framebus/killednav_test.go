package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
	stateFile := filepath.Join(dir, "node.json")
	env := testEnv(envState + "=" + stateFile)
	serve := func() *node {
		n := &node{process: startProcessOf(t, binary, env, "serve", "--history", "file"), stateFile: stateFile, env: env}
		n.ready(t)
		return n
	}
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
