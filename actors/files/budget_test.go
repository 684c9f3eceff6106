package files

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// The attacker's case on staged files: each tab may hold 500 MiB, so
// enough tabs could fill the node's disk (or, on a tmpfs, its memory).
// Tabs sharing a node's Budget hold at most its bytes together, whatever
// they are sent at once: what is refused is node_full, and a file
// dropped, aborted or closed with its tab gives its bytes back.
func TestBudgetBoundsTheNodesStages(t *testing.T) {
	const bound = 1000
	budget := NewBudget(bound)
	parent := t.TempDir()
	content := make([]byte, 100)
	sum := sha256.Sum256(content)
	digest := hex.EncodeToString(sum[:])
	var stages []*Stage
	for range 4 { // each may hold 500 bytes: 2000 in all, twice the budget
		stages = append(stages, NewStage(parent, Limits{MaxFile: 100, MaxTotal: 500, Shared: budget}))
	}

	// 40 files of 100 bytes at once, 10 to each tab: room for 10.
	var mu sync.Mutex
	staged, full, other := 0, 0, []error{}
	filesOf := make([]int, len(stages)) // files each tab staged
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			s := stages[i%len(stages)]
			id, err := s.Begin("f.bin", 100, digest)
			if err == nil {
				if _, err = s.Write(id, 0, content); err == nil {
					_, err = s.Commit(id)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				staged++
				filesOf[i%len(stages)]++
			case protocol.CodeOf(err) == protocol.CodeNodeFull:
				full++
			case protocol.CodeOf(err) == protocol.CodeTooLarge: // the tab's own 500
			default:
				other = append(other, err)
			}
		})
	}
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("unexpected errors: %v", other)
	}
	through := max(0, staged*100-bound) / 100
	t.Logf("40 files of 100 bytes to 4 tabs under a budget of %d: %d staged, %d refused node_full, %d through", bound, staged, full, through)
	if staged != 10 || budget.Used() != bound || through != 0 {
		t.Fatalf("%d files staged (%d bytes in the budget), want 10 (%d)", staged, budget.Used(), bound)
	}
	if onDisk := bytesUnder(t, parent); onDisk != bound {
		t.Errorf("%d bytes on disk, want %d", onDisk, bound)
	}

	// A node file copied for an upload is counted too.
	node := filepath.Join(t.TempDir(), "node.bin")
	if err := os.WriteFile(node, content, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(node)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Into a tab with room of its own (one with five files is refused
	// for its own 500 first), so only the node's budget can refuse it.
	roomy := stages[slices.IndexFunc(filesOf, func(n int) bool { return n < 5 })]
	if _, err := roomy.Copy(f, "node.bin"); protocol.CodeOf(err) != protocol.CodeNodeFull {
		t.Errorf("a copy past the budget: %v, want node_full", err)
	}

	// What a tab lets go of, another may take: a file aborted, a tab
	// closed, a file begun and dropped for its digest.
	var busy *Stage
	for _, s := range stages {
		if s.total > 0 {
			busy = s
			break
		}
	}
	for id := range busy.files {
		if err := busy.Abort(id); err != nil {
			t.Fatal(err)
		}
		break
	}
	if budget.Used() != bound-100 {
		t.Fatalf("after an abort the budget holds %d, want %d", budget.Used(), bound-100)
	}
	held := busy.total
	if err := busy.Close(); err != nil {
		t.Fatal(err)
	}
	if budget.Used() != bound-100-held {
		t.Fatalf("after a tab closed the budget holds %d, want %d", budget.Used(), bound-100-held)
	}
	free := stages[0]
	if free == busy {
		free = stages[1]
	}
	free.limits.MaxTotal = bound // so only the budget bounds it here
	id, err := free.Begin("wrong.bin", 100, hex.EncodeToString(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	free.Write(id, 0, content)
	if _, err := free.Commit(id); protocol.CodeOf(err) != protocol.CodeBadRequest {
		t.Fatalf("a wrong digest: %v", err)
	}
	if budget.Used() != bound-100-held {
		t.Fatalf("a dropped file kept %d bytes of the budget", budget.Used()-(bound-100-held))
	}
	for _, s := range stages {
		s.Close()
	}
	if budget.Used() != 0 {
		t.Fatalf("every tab closed, the budget still holds %d bytes", budget.Used())
	}
}

// bytesUnder adds up the sizes of the regular files under dir.
func bytesUnder(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
