package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The action commands built from the declarations, end to end against a
// node: optional positionals, kebab-case flags, modifier flags, lists and
// the client-only --out.
func TestActionCommandsAgainstANode(t *testing.T) {
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
