package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// Two serve processes on one bus, one of them full (node.maxTabs: 1, its
// first tab): `tab new` without --node opens its tabs on the other, `tab
// new --node one` is node_full naming the bound, `tab close` closes a tab
// of the other node, and `launch --node` asks the node it names.
func TestPlacementFromTheCLI(t *testing.T) {
	t.Parallel() // its own nodes
	config := filepath.Join(t.TempDir(), "one.yaml")
	if err := os.WriteFile(config, []byte("node:\n  maxTabs: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	one := startNode(t, envNode+"=one", envConfig+"="+config)
	startNode(t, envNode+"=two", envBusURL+"="+joinURL(t, one))
	waitFor(t, "both nodes list their tabs", 10*time.Second, func() bool {
		out := framebus(t, one.env, "", "pages")
		return out.status == 0 && strings.Contains(out.stdout, `{"node":"two","state":"answered"}`)
	})
	var opened []string
	for range 2 {
		out := framebus(t, one.env, "", "tab", "new")
		m := out.reply(t)
		tab, _ := m["tab"].(map[string]any)
		if out.status != 0 || tab["node"] != "two" {
			t.Fatalf("tab new without --node, node one full: %d %s %s", out.status, out.stdout, out.stderr)
		}
		opened = append(opened, tab["tab"].(string))
	}
	out := framebus(t, one.env, "", "tab", "new", "--node", "one")
	if m := out.reply(t); out.status != 1 || m["code"] != string(protocol.CodeNodeFull) || !strings.Contains(m["error"].(string), "at most 1") {
		t.Fatalf("tab new --node one: %d %s %s", out.status, out.stdout, out.stderr)
	}
	out = framebus(t, one.env, "", "tab", "close", opened[0])
	if m := out.reply(t); out.status != 0 || m["tab"].(map[string]any)["node"] != "two" {
		t.Fatalf("tab close of two's tab: %d %s %s", out.status, out.stdout, out.stderr)
	}
	out = framebus(t, one.env, "", "launch", "--node", "two")
	if m := out.reply(t); out.status != 0 || m["node"] != "two" {
		t.Fatalf("launch --node two: %d %s %s", out.status, out.stdout, out.stderr)
	}
}
