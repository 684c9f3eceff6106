package bus

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// conns tracks the connections Connect handed out, so Close can drain the
// ones still open. A connection leaves the set when it closes, by whatever
// means, so a program that connects and closes often does not grow it.
type conns struct {
	mu     sync.Mutex
	closed bool
	open   map[*nats.Conn]chan struct{} // conn -> closed when its ClosedCB ran
}

// watch returns a nats.Option that chains a closed handler after any the
// caller set, and the channel that handler closes. It must be the last
// option applied, so it wraps rather than replaces the caller's handler.
func (c *conns) watch() (nats.Option, chan struct{}) {
	done := make(chan struct{})
	opt := func(o *nats.Options) error {
		prev := o.ClosedCB
		o.ClosedCB = func(nc *nats.Conn) {
			if prev != nil {
				prev(nc)
			}
			// Close done before taking the lock: add checks done under the
			// lock, so either it sees done closed and skips nc, or this
			// delete runs after its insert.
			close(done)
			c.mu.Lock()
			delete(c.open, nc)
			c.mu.Unlock()
		}
		return nil
	}
	return opt, done
}

// add registers nc. It reports false when the set is already closed; the
// caller then closes nc itself.
func (c *conns) add(nc *nats.Conn, done chan struct{}) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	select {
	case <-done: // closed before we got here; nothing to track
		return true
	default:
	}
	if c.open == nil {
		c.open = make(map[*nats.Conn]chan struct{})
	}
	c.open[nc] = done
	return true
}

// isClosed reports whether closeAll has started.
func (c *conns) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// count returns how many tracked connections are still open.
func (c *conns) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open)
}

// closeAll refuses further adds, drains every open connection at once and
// waits up to timeout for them to close; stragglers are closed outright.
func (c *conns) closeAll(timeout time.Duration) error {
	c.mu.Lock()
	c.closed = true
	open := make(map[*nats.Conn]chan struct{}, len(c.open))
	for nc, done := range c.open {
		open[nc] = done
	}
	c.mu.Unlock()

	for nc := range open {
		if err := nc.Drain(); err != nil {
			// Already closed, or reconnecting: draining is not possible.
			nc.Close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	late := 0
	for nc, done := range open {
		select {
		case <-done:
			continue // prefer "drained" when the deadline has also passed
		default:
		}
		select {
		case <-done:
		case <-ctx.Done():
			late++
			nc.Close()
		}
	}
	if late > 0 {
		return fmt.Errorf("%w: %d of %d did not drain within %s and were closed", ErrDrainTimeout, late, len(open), timeout)
	}
	return nil
}
