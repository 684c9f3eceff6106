package actors

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A tab names a frame's sequence before the history has the frame: it
// publishes each frame live before its node stores it (framestore.go),
// and a navigate's reply names its frame at commit, while the frame goes
// out once the page has loaded. So a node killed at the wrong moment
// leaves the history behind what clients were told. A tab restored from
// the history's last frame would then number its restore frame as one a
// client already had: every watcher drops it as a repeat, and an agent's
// plan based on the old frame of that number runs on the new page. So a
// tab that may be restored writes each sequence it numbers to a small
// file of its own before anything can name it, and its restore goes on
// from the larger of that and the history's last.
//
// The write is in place and not synced: what a killed process wrote
// survives it, and a machine that crashes loses the history's unsynced
// frames as well. A node killed between the mark and the frame leaves a
// number no frame had: readers of the history report it as a gap, never
// a frame twice.

// seqMarkWidth is the width of a mark: every write covers the one
// before, so the file never holds a shorter number's leftovers.
const seqMarkWidth = 20

// seqMarksDir is where a node with a tabs file keeps its tabs' marks.
func seqMarksDir(tabsFile string) string { return tabsFile + ".seq" }

// seqMark is one tab's mark file.
type seqMark struct {
	f      *os.File
	path   string
	failed bool // a write failed: logged once
}

// openSeqMark opens (or makes) tab's mark file in dir.
func openSeqMark(dir, tab string) (*seqMark, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, tab) // a tab id has no separator (protocol.ValidTabID)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &seqMark{f: f, path: path}, nil
}

// set marks seq as numbered.
func (m *seqMark) set(seq int64) error {
	buf := fmt.Appendf(make([]byte, 0, seqMarkWidth+1), "%0*d\n", seqMarkWidth, seq)
	_, err := m.f.WriteAt(buf, 0)
	return err
}

// close closes the file, and removes it when the tab is gone for good.
func (m *seqMark) close(remove bool) {
	_ = m.f.Close()
	if remove {
		_ = os.Remove(m.path)
	}
}

// readSeqMark is the last sequence tab marked in dir; 0 when it marked
// none.
func readSeqMark(dir, tab string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, tab))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, err
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return 0, nil // made, and killed before its first frame
	}
	seq, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil || seq < 0 {
		return 0, fmt.Errorf("tab %s's sequence mark %q is not a sequence", tab, data)
	}
	return seq, nil
}

// pruneSeqMarks removes the marks and plan journals in dir of tabs other
// than keep (closed tabs, or tabs given up while the node was down).
func pruneSeqMarks(dir string, keep map[string]bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !keep[strings.TrimSuffix(e.Name(), ".plans")] {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// markNumbered marks frame seq as numbered, when the tab marks.
func (t *Tab) markNumbered(seq int64) {
	m := t.mark
	if m == nil {
		return
	}
	if err := m.set(seq); err != nil && !m.failed {
		m.failed = true
		t.log.Warn().Err(err).Int64("sequence", seq).Msg("mark the frame's sequence: restored after a kill, the tab may give a frame the number of one a client had")
	}
}
