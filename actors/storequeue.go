package actors

import "sync"

// storeQueue is a tab's frames on their way to the history, in order:
// the tab's actor pushes, its frameStore pops. It holds as many frames as
// the stream is behind (a cluster electing the stream's leader holds it
// up for seconds while the tab goes on), up to maxBytes of them: past
// that the actor waits for room, so a stream that takes nothing for long
// costs memory once, not without end (the frameStore gives a frame up
// after StoreTimeout and then empties the queue).
type storeQueue struct {
	mu       sync.Mutex
	cond     sync.Cond
	items    []storeItem
	bytes    int64
	maxBytes int64
	closed   bool
}

// storeBacklogBytes bounds the frames waiting for the stream, by size.
const storeBacklogBytes = 64 << 20

func newStoreQueue(maxBytes int64) *storeQueue {
	q := &storeQueue{maxBytes: maxBytes}
	q.cond.L = &q.mu
	return q
}

// itemBytes is about what item holds in memory.
func itemBytes(item storeItem) int64 {
	f := item.frame
	n := int64(512 + len(f.URL) + len(f.Title) + len(f.Note))
	if f.FullPage != nil {
		n += int64(len(*f.FullPage))
	}
	return n
}

// push adds item at the end, once there is room (one item always fits).
func (q *storeQueue) push(item storeItem) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) > 0 && q.bytes+itemBytes(item) > q.maxBytes {
		q.cond.Wait()
	}
	q.items = append(q.items, item)
	q.bytes += itemBytes(item)
	q.cond.Broadcast()
}

// pop takes the first item, waiting for one; false once the queue is
// closed and empty.
func (q *storeQueue) pop() (storeItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return storeItem{}, false
	}
	item := q.items[0]
	q.items[0] = storeItem{}
	q.items = q.items[1:]
	q.bytes -= itemBytes(item)
	q.cond.Broadcast()
	return item, true
}

// len is how many items wait.
func (q *storeQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// close ends the queue: pop returns what is left, then false.
func (q *storeQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}
