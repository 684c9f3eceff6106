package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framebus/framebus/internal/testdir"
)

// The lifecycle commands against a node: status, pages, tab new, select
// and close, close and launch.
func TestLifecycleCommands(t *testing.T) {
	t.Parallel() // its own node
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
	// The selected tab is gone: commands without --tab fail, naming it,
	// rather than use another tab.
	r := framebus(t, n.env, "", "url")
	if m := r.reply(t); r.status != 1 || m["code"] != "tab_not_found" || !strings.Contains(m["error"].(string), "the selected tab "+id) ||
		!strings.Contains(m["error"].(string), "framebus tab select <id>") || !strings.Contains(m["error"].(string), n.tab()) {
		t.Fatalf("url after the selected tab closed: exit %d, %s", r.status, r.stdout)
	}
	mustOK(t, n.env, "tab", "select", n.tab())
	mustOK(t, n.env, "tab", "close")
	if r := framebus(t, n.env, "", "eval", "1"); r.status != 1 || r.reply(t)["code"] != "tab_not_found" ||
		!strings.Contains(r.reply(t)["error"].(string), "no tabs (open one with: framebus tab new;") {
		t.Fatalf("eval with no tab open: exit %d, %s", r.status, r.stdout)
	}

	closed := mustOK(t, n.env, "close")
	if closed["profiles"].([]any)[0].(map[string]any)["running"] != false {
		t.Fatalf("close: %v", closed)
	}
	r = framebus(t, n.env, "", "eval", "1", "--tab", n.tab())
	if m := r.reply(t); r.status != 1 || m["code"] != "browser_not_running" || !strings.Contains(m["error"].(string), "framebus launch") {
		t.Fatalf("eval on a closed browser: exit %d, %s", r.status, r.stdout)
	}
	launched := mustOK(t, n.env, "launch")
	if launched["profiles"].([]any)[0].(map[string]any)["running"] != true {
		t.Fatalf("launch: %v", launched)
	}
	pages := mustOK(t, n.env, "pages")
	mustOK(t, n.env, "tab", "select", pages["tabs"].([]any)[0].(map[string]any)["tab"].(string))
	if v := mustOK(t, n.env, "eval", "6 * 7"); v["value"] != 42.0 {
		t.Fatalf("eval after launch: %v", v)
	}
	for _, args := range [][]string{{"tab"}, {"tab", "open"}, {"tab", "select"}, {"status", "extra"}} {
		if r := framebus(t, n.env, "", args...); r.status != exitUsage {
			t.Errorf("%q: exit %d, %s", args, r.status, r.stdout)
		}
	}
}

// The probe's case: a session's tab is selected, its browser is closed,
// and the next command without --tab must fail, naming that tab and how
// to choose another, and never type into another profile's tab.
func TestClosedSelectedTabIsNeverReplaced(t *testing.T) {
	t.Parallel() // its own node and profiles directory
	n := startNode(t, envProfileDir+"="+testdir.Enterable(t))
	mustOK(t, n.env, "navigate", site("/form.html"), "--wait", "--tab", n.tab())
	started := mustOK(t, n.env, "session", "start", "localhost", site("/form.html"))
	session := started["tabs"].([]any)[0].(map[string]any)["tab"].(string)
	mustOK(t, n.env, "close", "--profile", "localhost")

	r := framebus(t, n.env, "", "type", "#name", "password123")
	m := r.reply(t)
	msg, _ := m["error"].(string)
	if r.status != 1 || (m["code"] != "browser_not_running" && m["code"] != "tab_not_found") ||
		!strings.Contains(msg, "the selected tab "+session) || !strings.Contains(msg, "framebus tab select <id>") || !strings.Contains(msg, "--tab") {
		t.Fatalf("type after the selected tab's browser closed: exit %d, %s", r.status, r.stdout)
	}
	if v := mustOK(t, n.env, "eval", "document.getElementById('name').value", "--tab", n.tab()); v["value"] != "" {
		t.Fatalf("the text went to the default profile's tab: %v", v)
	}
	for _, args := range [][]string{{"plan", "-"}, {"watch"}, {"tab", "close"}} {
		r := framebus(t, n.env, `{"action": {"type": "type", "selector": "#name", "text": "x"}}`, args...)
		if m := r.reply(t); r.status != 1 || !strings.Contains(m["error"].(string), "the selected tab "+session) {
			t.Errorf("%q after the selected tab's browser closed: exit %d, %s", args, r.status, r.stdout)
		}
	}

	// Choosing a tab again makes commands without --tab work.
	mustOK(t, n.env, "tab", "select", n.tab())
	mustOK(t, n.env, "type", "#name", "Ada")
	if v := mustOK(t, n.env, "eval", "document.getElementById('name').value"); v["value"] != "Ada" {
		t.Fatalf("type after tab select: %v", v)
	}
}

// Sessions and profiles at the command line: with $FRAMEBUS_PROFILE_DIR
// the default profile runs in <dir>/default and a domain's session in
// <dir>/<domain>, its tab made the one commands use; status of one profile
// or all; the errors for unknown profiles and sessions.
func TestSessionAndProfileCommands(t *testing.T) {
	t.Parallel() // its own node and profiles directory
	profiles := testdir.Enterable(t)
	n := startNode(t, envProfileDir+"="+profiles)
	if got := chromiumProfile(t, n.cmd.Process.Pid); got != filepath.Join(profiles, "default") {
		t.Fatalf("the default profile runs in %s, want %s/default", got, profiles)
	}
	started := mustOK(t, n.env, "session", "start", "localhost", site("/"))
	id, _ := started["session"].(string)
	dir := filepath.Join(profiles, "localhost")
	if id == "" || started["created"] != true || started["profile"].(map[string]any)["dir"] != dir || started["node"] != n.state.Node {
		t.Fatalf("session start: %v", started)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("the session's profile directory: %v", err)
	}
	if v := mustOK(t, n.env, "url"); v["value"] != site("/") {
		t.Fatalf("commands after session start use %v, want the session's tab", v)
	}
	if st := mustOK(t, n.env, "status"); len(st["profiles"].([]any)) != 2 {
		t.Fatalf("status of every profile: %v", st)
	}
	one := mustOK(t, n.env, "status", "--profile", "localhost")
	if p := one["profiles"].([]any); len(p) != 1 || p[0].(map[string]any)["session"] != id {
		t.Fatalf("status --profile localhost: %v", one)
	}
	if list := mustOK(t, n.env, "session", "list"); len(list["sessions"].([]any)) != 1 || list["sessions"].([]any)[0].(map[string]any)["node"] != n.state.Node {
		t.Fatalf("session list: %v", list)
	}
	// Pinned to its node, the running session is returned; pinned to a
	// node that is not there, node_unavailable names it.
	if pinned := mustOK(t, n.env, "session", "start", "localhost", "--node", n.state.Node); pinned["session"] != id || pinned["node"] != n.state.Node {
		t.Fatalf("session start --node %s: %v", n.state.Node, pinned)
	}
	for _, tc := range []struct {
		args []string
		code string
		says string
	}{
		{[]string{"session", "start", "localhost", "--node", "ghost"}, "node_unavailable", "node ghost"},
		{[]string{"status", "--profile", "nosuch"}, "profile_not_found", "default, localhost"},
		{[]string{"launch", "--profile", "nosuch"}, "profile_not_found", "nosuch"},
		{[]string{"connect"}, "bad_request", "use launch"},
		{[]string{"session", "start", "localhost:80"}, "bad_request", "not a domain"},
	} {
		r := framebus(t, n.env, "", tc.args...)
		if m := r.reply(t); r.status != 1 || m["code"] != tc.code || !strings.Contains(m["error"].(string), tc.says) {
			t.Errorf("%q: exit %d, %s, want %s saying %q", tc.args, r.status, r.stdout, tc.code, tc.says)
		}
	}
	stopped := mustOK(t, n.env, "session", "stop", id)
	if stopped["profile"].(map[string]any)["running"] != false {
		t.Fatalf("session stop: %v", stopped)
	}
	r := framebus(t, n.env, "", "session", "stop", id)
	if m := r.reply(t); r.status != 1 || m["code"] != "session_not_found" {
		t.Fatalf("stopping a stopped session: exit %d, %s", r.status, r.stdout)
	}
	for _, args := range [][]string{{"session"}, {"session", "begin", "x"}, {"session", "stop", "bad id"}, {"status", "--profile", "a b"}} {
		if r := framebus(t, n.env, "", args...); r.status != exitUsage {
			t.Errorf("%q: exit %d, %s", args, r.status, r.stdout)
		}
	}
}
