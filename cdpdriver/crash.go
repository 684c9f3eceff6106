package cdpdriver

import (
	"context"
	"errors"
	"sync"
)

// ErrPageCrashed: the page's renderer crashed while an operation waited on
// it; nothing will answer until a new document is loaded.
// (Operations under Page.Guard end with it at once.)
var ErrPageCrashed = errors.New("the page crashed")

// crashState is cancelled when the renderer crashes, so operations under
// Guard stop waiting at once; a new main-frame document replaces it.
type crashState struct {
	mu      sync.Mutex
	crashed context.Context
	signal  context.CancelFunc
}

func (c *crashState) init() { c.crashed, c.signal = context.WithCancel(context.Background()) }

// crash runs in the reader goroutine: it must not block.
func (c *crashState) crash() {
	c.mu.Lock()
	c.signal()
	c.mu.Unlock()
}

// newDocument forgets a crash: a document has committed again.
func (c *crashState) newDocument() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed.Err() != nil {
		c.init()
	}
}

func (c *crashState) current() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}
