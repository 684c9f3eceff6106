package actors

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/framebus/framebus/internal/atomicfile"
)

// A tab remembers the plan ids it ran, so that one sent again does not
// run twice (planids.go); a restored tab learns them from its frames in
// the history. A plan whose node was killed while it ran may have acted
// (a click, a script) without making a frame the history has, and its
// client, told nothing, sends it again under its id once the tab is back.
// So a tab that may be restored also writes each plan id to a journal of
// its own (beside its sequence mark, seqmark.go) as it starts the plan,
// before its first action; a restored tab answers a plan id from the
// journal that its frames do not name as one that began before the
// restart (outcome_unknown), never running it again. As the mark, the
// journal is written in place and not synced: it survives a killed
// process.

// journalRewriteBytes is how large a journal grows before it is written
// anew with only the ids a tab still remembers (planIDsAge, planIDsKept).
const journalRewriteBytes = 256 << 10

// journalEntry is one line of a journal.
type journalEntry struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
}

// planJournal is one tab's journal; only the tab's goroutine uses it.
type planJournal struct {
	f      *os.File
	path   string
	size   int64
	recent []journalEntry // what a rewrite keeps, oldest first
	failed bool           // a write failed: logged once
}

// journalPath is the journal of tab in the marks' directory dir.
func journalPath(dir, tab string) string { return filepath.Join(dir, tab+".plans") }

// openPlanJournal opens tab's journal in dir, keeping what it holds of
// the last planIDsAge.
func openPlanJournal(dir, tab string) (*planJournal, error) {
	path := journalPath(dir, tab)
	kept, err := readPlanJournal(path, time.Now())
	if err != nil {
		kept = nil // unreadable: begun anew
	}
	j := &planJournal{path: path, recent: kept}
	if err := j.rewrite(); err != nil {
		return nil, err
	}
	return j, nil
}

// readPlanJournal is what the journal at path holds of the last
// planIDsAge before now, oldest first; none when there is no journal.
func readPlanJournal(path string, now time.Time) ([]journalEntry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []journalEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e journalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ID == "" {
			continue // a line cut short by a kill
		}
		if now.Sub(e.At) < planIDsAge {
			out = append(out, e)
		}
	}
	return out, nil
}

// add writes that plan id starts now.
func (j *planJournal) add(id string, now time.Time) error {
	e := journalEntry{At: now, ID: id}
	j.recent = append(j.recent, e)
	if len(j.recent) > planIDsKept {
		j.recent = j.recent[len(j.recent)-planIDsKept:]
	}
	if j.size > journalRewriteBytes {
		return j.rewrite()
	}
	line, _ := json.Marshal(e)
	n, err := j.f.Write(append(line, '\n'))
	j.size += int64(n)
	return err
}

// rewrite writes the journal anew with the recent ids, and opens it for
// appending.
func (j *planJournal) rewrite() error {
	if j.f != nil {
		_ = j.f.Close()
		j.f = nil
	}
	since := time.Now().Add(-planIDsAge)
	var buf bytes.Buffer
	kept := j.recent[:0]
	for _, e := range j.recent {
		if e.At.After(since) {
			kept = append(kept, e)
			line, _ := json.Marshal(e)
			buf.Write(append(line, '\n'))
		}
	}
	j.recent = kept
	if err := atomicfile.Write(j.path, buf.Bytes()); err != nil {
		return err
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	j.f, j.size = f, int64(buf.Len())
	return nil
}

// close closes the journal, and removes it when the tab is gone for good.
func (j *planJournal) close(remove bool) {
	if j.f != nil {
		_ = j.f.Close()
	}
	if remove {
		_ = os.Remove(j.path)
	}
}

// journalPlan writes that plan id starts, when the tab keeps a journal.
func (t *Tab) journalPlan(id string) {
	j := t.journal
	if j == nil || id == "" {
		return
	}
	if err := j.add(id, time.Now()); err != nil && !j.failed {
		j.failed = true
		t.log.Warn().Err(err).Str("plan", id).Msg("journal the plan's id: restored after a kill, the tab may run a plan it had begun again")
	}
}
