package main

import (
	"strings"
	"testing"
)

// The lifecycle commands against a node: status, pages, tab new, select
// and close, close and launch.
func TestLifecycleCommands(t *testing.T) {
	n := startNode(t)
	st := mustOK(t, n.env, "status")
	prof := st["profiles"].([]any)[0].(map[string]any)
	if prof["running"] != true || prof["pageCount"] != 1.0 || prof["name"] != "default" {
		t.Fatalf("status: %v", st)
	}
	opened := mustOK(t, n.env, "tab", "new", site("/search.html"))
	id := opened["tab"].(map[string]any)["tab"].(string)
	if pages := mustOK(t, n.env, "pages"); len(pages["tabs"].([]any)) != 2 {
		t.Fatalf("pages: %v", pages)
	}
	mustOK(t, n.env, "tab", "select", id)
	if v := mustOK(t, n.env, "url"); v["value"] != site("/search.html") {
		t.Fatalf("commands after tab select use %v", v)
	}
	if r := framebus(t, n.env, "", "tab", "select", "NOSUCHTAB"); r.status != 1 || r.reply(t)["code"] != "tab_not_found" {
		t.Fatalf("select of an unknown tab: exit %d, %s", r.status, r.stdout)
	}
	mustOK(t, n.env, "tab", "close") // the selected one
	if pages := mustOK(t, n.env, "pages"); len(pages["tabs"].([]any)) != 1 {
		t.Fatalf("pages after tab close: %v", pages)
	}
	mustOK(t, n.env, "url") // the selected tab is gone: the first one answers

	closed := mustOK(t, n.env, "close")
	if closed["profiles"].([]any)[0].(map[string]any)["running"] != false {
		t.Fatalf("close: %v", closed)
	}
	r := framebus(t, n.env, "", "eval", "1", "--tab", n.tab())
	if m := r.reply(t); r.status != 1 || m["code"] != "browser_not_running" || !strings.Contains(m["error"].(string), "framebus launch") {
		t.Fatalf("eval on a closed browser: exit %d, %s", r.status, r.stdout)
	}
	mustOK(t, n.env, "launch")
	if v := mustOK(t, n.env, "eval", "6 * 7"); v["value"] != 42.0 {
		t.Fatalf("eval after launch: %v", v)
	}
	for _, args := range [][]string{{"tab"}, {"tab", "open"}, {"tab", "select"}, {"status", "extra"}} {
		if r := framebus(t, n.env, "", args...); r.status != exitUsage {
			t.Errorf("%q: exit %d, %s", args, r.status, r.stdout)
		}
	}
}
