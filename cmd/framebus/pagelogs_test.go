package main

import (
	"strings"
	"testing"
)

// console, network and fill-form from the command line: fill-form's
// fields as 'selector: value', repeated (selectors with colons of their
// own included), console --level, network --filter.
func TestPageLogCommands(t *testing.T) {
	n := startNode(t)
	mustOK(t, n.env, "navigate", site("/fillform.html"), "--wait")
	mustOK(t, n.env, "fill-form", "--fields", "#name: Ann: Lee", "--fields", "input:is(#news): true", "--fields", "#country: de")
	if v := mustOK(t, n.env, "eval", "JSON.stringify(window.values())"); !strings.Contains(v["value"].(string), `"name":"Ann: Lee","about":"","news":true`) ||
		!strings.Contains(v["value"].(string), `"country":"de"`) {
		t.Fatalf("after fill-form: %v", v["value"])
	}
	mustOK(t, n.env, "eval", "console.error('cli error'), console.log('cli log'), 1")
	got := mustOK(t, n.env, "console", "--level", "error")
	msgs, _ := got["value"].(map[string]any)["messages"].([]any)
	// The browser's own 404 of the favicon may come first.
	if len(msgs) == 0 || len(msgs) > 2 || msgs[len(msgs)-1].(map[string]any)["text"] != "cli error" {
		t.Fatalf("console --level error: %v", got)
	}
	got = mustOK(t, n.env, "network", "--filter", "fillform")
	reqs, _ := got["value"].(map[string]any)["requests"].([]any)
	if len(reqs) != 1 || reqs[0].(map[string]any)["status"] != float64(200) {
		t.Fatalf("network --filter fillform: %v", got)
	}
}
