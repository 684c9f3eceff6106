package main

import (
	"bytes"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The action commands built from the declarations, end to end against a
// node: optional positionals, kebab-case flags, modifier flags, lists and
// the client-only --out.
func TestActionCommandsAgainstANode(t *testing.T) {
	t.Parallel() // its own node
	n := startNode(t)
	mustOK(t, n.env, "navigate", site("/form.html"), "--wait")

	mustOK(t, n.env, "type", "#name", "Ada", "--clear")
	mustOK(t, n.env, "type", " Lovelace") // one argument: the focused element
	if v := mustOK(t, n.env, "eval", "document.getElementById('name').value"); v["value"] != "Ada Lovelace" {
		t.Fatalf("type: %v", v)
	}
	mustOK(t, n.env, "fill", "#prefilled", "new")
	mustOK(t, n.env, "focus", "#keys")
	mustOK(t, n.env, "key", "a", "--ctrl", "--shift")
	if v := mustOK(t, n.env, "eval", "JSON.stringify(window.keys.at(-1))"); !strings.Contains(v["value"].(string), `"ctrl":true`) || !strings.Contains(v["value"].(string), `"shift":true`) {
		t.Fatalf("key --ctrl --shift reached the page as %v", v)
	}
	mustOK(t, n.env, "select", "#fruit", "Banana")
	if v := mustOK(t, n.env, "eval", "document.getElementById('fruit').value"); v["value"] != "b" {
		t.Fatalf("select: %v", v)
	}
	mustOK(t, n.env, "scroll", "--by", "0,40")
	mustOK(t, n.env, "wait-for", "#fruit", "--visible", "--timeout", "500ms")
	r := framebus(t, n.env, "", "wait-for", "#never", "--timeout", "300ms")
	if m := r.reply(t); r.status != 1 || m["code"] != "timeout" || !strings.Contains(m["error"].(string), "#never") || !strings.Contains(m["error"].(string), "300ms") {
		t.Fatalf("wait-for timeout: exit %d, %s", r.status, r.stdout)
	}
	mustOK(t, n.env, "ready", "--network-idle", "--timeout", "5s")
	if v := mustOK(t, n.env, "title"); v["value"] == "" {
		t.Fatalf("title: %v", v)
	}
	if v := mustOK(t, n.env, "url"); v["value"] != site("/form.html") {
		t.Fatalf("url: %v", v)
	}

	// --out writes the PNG and replies with the file instead of the data.
	out := filepath.Join(t.TempDir(), "shot.png")
	shot := mustOK(t, n.env, "screenshot", "--selector", "#fruit", "--out", out)
	if _, has := shot["value"]; has || shot["file"] != out {
		t.Fatalf("screenshot --out: %v", shot)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.DecodeConfig(bytes.NewReader(data)); err != nil || int(shot["bytes"].(float64)) != len(data) {
		t.Fatalf("screenshot file: %v (%d bytes, reply %v)", err, len(data), shot["bytes"])
	}

	// Two files as the rest of the line.
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustOK(t, n.env, "navigate", site("/upload.html"), "--wait")
	mustOK(t, n.env, "upload", "#many", a, b)
	if v := mustOK(t, n.env, "eval", "Array.from(document.getElementById('many').files, f => f.name).join()"); v["value"] != "a.txt,b.txt" {
		t.Fatalf("upload: %v", v)
	}
	r = framebus(t, n.env, "", "upload", "#many", filepath.Join(dir, "missing.txt"))
	if m := r.reply(t); r.status != 1 || m["code"] != "bad_request" || !strings.Contains(m["error"].(string), "missing.txt") {
		t.Fatalf("upload of a missing file: exit %d, %s", r.status, r.stdout)
	}
	mustOK(t, n.env, "back")
	mustOK(t, n.env, "forward", "--wait")
	mustOK(t, n.env, "reload")
}

// A relative path given to upload is the user's, from the command's
// working directory, not the node's: the node runs elsewhere and would
// upload another file, or none.
func TestUploadRelativePathIsTheClients(t *testing.T) {
	t.Parallel() // its own node and directory
	n := startNode(t)
	mustOK(t, n.env, "navigate", site("/upload.html"), "--wait")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("the client's file"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := framebusIn(t, dir, n.env, "", "upload", "#one", "mine.txt")
	if r.status != 0 {
		t.Fatalf("upload of a relative path: exit %d, %s", r.status, r.stdout)
	}
	v := mustOK(t, n.env, "eval", "document.getElementById('one').files[0].text()")
	if v["value"] != "the client's file" {
		t.Fatalf("upload sent %v, want the client's mine.txt", v)
	}
}

// Ctrl-C while a command waits for its tab exits 1 with a reply that
// says it was interrupted, not that a deadline passed; the node is not
// asked to cancel.
func TestInterruptedCommandSaysSo(t *testing.T) {
	n := startNode(t)
	requested := make(chan struct{}, 1)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case requested <- struct{}{}:
		default:
		}
		select { // answer only once the test is over
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) }) // runs first: lets hang.Close return

	p := startProcess(t, n.env, "navigate", hang.URL+"/never", "--timeout", "60s")
	select {
	case <-requested: // the plan runs: the command waits for its answer
	case <-p.done:
		t.Fatalf("navigate ended before its page was requested: %s", p.stdout)
	case <-time.After(30 * time.Second):
		t.Fatal("the tab never requested the page")
	}
	if status := p.stop(syscall.SIGINT, 30*time.Second); status != exitFailed {
		t.Fatalf("interrupted navigate exited %d, want 1; stdout: %s", status, p.stdout)
	}
	reply := result{stdout: p.stdout.String()}.reply(t)
	msg, _ := reply["error"].(string)
	if reply["ok"] != false || reply["code"] != "cancelled" || !strings.Contains(msg, "interrupted") || !strings.Contains(msg, "was cancelled on tab "+n.tab()) {
		t.Fatalf("interrupted navigate replied %s", p.stdout)
	}
	// The node stopped the plan: the tab answers the next command at once
	// (its own deadline was a minute away).
	if r := framebus(t, n.env, "", "url", "--timeout", "5s"); r.status != 0 {
		t.Fatalf("url after the interrupt: %d %s %s", r.status, r.stdout, r.stderr)
	}
}
