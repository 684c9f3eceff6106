package actors

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/protocol"
)

// A node started again with its tabs file and its history on file brings
// back the tabs it had, under their ids (not one it closed): each goes on
// from its last frame with a restore frame (source node) at its last URL,
// its content included and its old page's memory gone, and takes plans
// against that frame. A URL the whitelist no longer allows still brings
// the tab back, at about:blank, with a frame that says why.
func TestNodeRestoresItsTabs(t *testing.T) {
	dir := t.TempDir()
	opts := NodeOptions{History: HistoryOptions{Storage: HistoryFile, Dir: filepath.Join(dir, "jetstream")}, TabsFile: filepath.Join(dir, "tabs.json")}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	node := startTestNode(t, opts)
	nc, err := node.Bus().Connect("restore-test")
	if err != nil {
		t.Fatal(err)
	}
	tab := node.Tabs()[0].Tab
	page := site("/index.html")
	res, err := request(nc, tab, protocol.Plan{Actions: []protocol.Action{{Type: "navigate", URL: page, Wait: true}, {Type: "eval", Expression: "window.kept = 42"}}})
	if err != nil || !res.OK {
		t.Fatalf("plan: %+v %v", res, err)
	}
	closed, err := node.OpenTab(ctx, site("/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.CloseTab(ctx, closed.ID()); err != nil {
		t.Fatal(err)
	}
	before := lastStored(t, node, tab, res.Sequence)
	if fi, err := os.Stat(opts.TabsFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tabs file: %v %v; want it, 0600", fi, err)
	}
	nc.Close()
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}

	// Started again: the tab is back, and only it.
	node = startTestNode(t, opts)
	if tabs := node.Tabs(); len(tabs) != 1 || tabs[0].Tab != tab {
		t.Fatalf("tabs after the restart: %+v; want only %s", tabs, tab)
	}
	nc, err = node.Bus().Connect("restore-test")
	if err != nil {
		t.Fatal(err)
	}
	f := lastStored(t, node, tab, res.Sequence+1)
	if f.Action != protocol.FrameRestore || f.Source != protocol.SourceNode || f.URL != before.URL || f.FullPage == nil ||
		!strings.Contains(*f.FullPage, "heading") || !strings.Contains(f.Note, "restored") || !strings.Contains(f.Note, "gone") {
		t.Fatalf("restore frame: %+v", f)
	}
	restored := res.Sequence + 1
	res, err = request(nc, tab, protocol.Plan{Actions: []protocol.Action{{Type: "eval", Expression: "String(window.kept)", BasedOnSequence: &restored}}})
	if err != nil || !res.OK || res.Sequence != restored+1 || string(res.Results[0].Value) != `"undefined"` {
		t.Fatalf("plan on the restore frame: %+v %v; want the old page's memory gone, sequence %d", res, err, restored+1)
	}
	waitStored(t, node, tab, res.Sequence)
	nc.Close()
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}

	// Its URL no longer allowed: back all the same, saying so.
	opts.Whitelist, err = whitelist.New([]string{"example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node = startTestNode(t, opts)
	if tabs := node.Tabs(); len(tabs) != 1 || tabs[0].Tab != tab {
		t.Fatalf("tabs after the restart with a whitelist: %+v; want only %s", tabs, tab)
	}
	f = lastStored(t, node, tab, res.Sequence+1)
	if f.Action != protocol.FrameRestore || f.Source != protocol.SourceNode || f.URL != "about:blank" ||
		!strings.Contains(f.Note, "not loaded again") || !strings.Contains(f.Note, string(protocol.CodePermissionDenied)) {
		t.Fatalf("restore frame of a URL no longer allowed: %+v", f)
	}
}

// waitStored waits until the history's last frame of tab is seq.
func waitStored(t *testing.T, node *Node, tab string, seq int64) {
	t.Helper()
	waitUntil(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f, err := node.lastFrame(ctx, tab)
		return err == nil && f.Sequence == seq
	})
}

// lastStored is the history's last frame of tab, once it is seq.
func lastStored(t *testing.T, node *Node, tab string, seq int64) protocol.Frame {
	t.Helper()
	waitStored(t, node, tab, seq)
	f, err := node.lastFrame(context.Background(), tab)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
