package files

import (
	"sync"

	"github.com/framebus/framebus/protocol"
)

// Budget bounds the bytes that all the stages sharing it hold together:
// a node's tabs, each within its own Limits. A stage takes a file's
// declared size from it when the file begins and gives it back when the
// file is dropped or the stage closed, so what the node has promised
// never exceeds Max, whatever the tabs are sent at once.
type Budget struct {
	max int64

	mu   sync.Mutex
	used int64
}

// NewBudget is a budget of max bytes (max <= 0: no bound).
func NewBudget(max int64) *Budget { return &Budget{max: max} }

// Max is the budget's bound in bytes, 0 for none.
func (b *Budget) Max() int64 {
	if b == nil || b.max <= 0 {
		return 0
	}
	return b.max
}

// Used is how many bytes the stages hold or have been promised.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// take reserves n bytes for name: node_full when they would bring the
// stages past Max. A nil budget takes everything.
func (b *Budget) take(name string, n int64) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max > 0 && b.used+n > b.max {
		return protocol.Errorf(protocol.CodeNodeFull, "%s (%d bytes): the node's staged files hold %d bytes and it takes at most %d (files.maxStagedBytes, serve --max-staged-bytes); abort files not needed, or close tabs that hold some (their files go with them)",
			name, n, b.used, b.max)
	}
	b.used += n
	return nil
}

// give returns n bytes taken before.
func (b *Budget) give(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}
