package actors

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A node stops with a frame its tab published that the history never
// stored (the stream took nothing: its subjects were taken away, and the
// store gave the frame up). Started again with its state, the tab comes
// back after that frame, not as it: the restore frame has a number no
// subscriber had, and says which frames the history lacks. A tab that
// closed leaves no mark behind.
func TestRestoreGoesOnAfterFramesTheHistoryLacks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := NodeOptions{TabsFile: filepath.Join(dir, "tabs.json"), History: HistoryOptions{Storage: HistoryFile, Dir: filepath.Join(dir, "jetstream"),
		StoreTimeout: testscale.D(2 * time.Second)}}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	node := startTestNode(t, opts)
	nc, err := node.Bus().Connect("seqmark-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tab := node.Tabs()[0].Tab
	closing, err := node.OpenTab(ctx, site("/"))
	if err != nil {
		t.Fatal(err)
	}
	marks := seqMarksDir(opts.TabsFile)
	if fi, err := os.Stat(filepath.Join(marks, closing.ID())); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the new tab's mark: %v %v; want it, 0600", fi, err)
	}
	if _, err := node.CloseTab(ctx, closing.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(marks, closing.ID())); !os.IsNotExist(err) {
		t.Fatalf("the closed tab's mark: %v; want it removed", err)
	}
	stored, err := request(nc, tab, one(protocol.Action{Type: "eval", Expression: "1"}))
	if err != nil || !stored.OK {
		t.Fatalf("plan: %+v %v", stored, err)
	}
	waitStored(t, node, tab, stored.Sequence)

	bustest.HoldStream(t, ctx, nc, node.History().Stream()) // released by the restart, which sets the stream's subjects again
	live := watchFrames(t, nc, protocol.DefaultSubjects.TabFrames(tab))
	lost, err := request(nc, tab, one(protocol.Action{Type: "eval", Expression: "2"}))
	if err != nil || !lost.OK || lost.Sequence != stored.Sequence+1 {
		t.Fatalf("plan: %+v %v", lost, err)
	}
	live.until(lost.Sequence) // a subscriber had it
	nc.Close()
	node.Close() // gives the frame up after StoreTimeout

	node = startTestNode(t, opts)
	if f := lastStored(t, node, tab, lost.Sequence+1); f.Action != protocol.FrameRestore ||
		!strings.Contains(f.Note, "frames 3 to 3 were numbered before the node stopped and never reached the history") {
		t.Fatalf("restore frame: %+v; want frame %d, after the one the history lacks, saying so", f, lost.Sequence+1)
	}
}
