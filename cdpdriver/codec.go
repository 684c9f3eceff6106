package cdpdriver

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/mafredri/cdp/rpcc"
)

// eventCodec is the rpcc codec of a page connection. Besides encoding
// requests and decoding responses it takes every event off the wire, in the
// reader goroutine, before rpcc sees the next message. So by the time a
// command's reply reaches its caller, every event the browser sent before
// that reply is already in the queue: draining the queue is an exact
// "everything received so far", which the tab actor relies on to make its
// check-and-act atomic. (rpcc's per-method streams cannot give that: their
// messages pass through separate buffers and goroutines.)
type eventCodec struct {
	enc    *json.Encoder
	dec    *json.Decoder
	events *eventQueue
	decode func(method string, params json.RawMessage) (Event, bool)
}

func newEventCodec(conn io.ReadWriter, q *eventQueue, decode func(string, json.RawMessage) (Event, bool)) rpcc.Codec {
	return &eventCodec{enc: json.NewEncoder(conn), dec: json.NewDecoder(conn), events: q, decode: decode}
}

func (c *eventCodec) WriteRequest(r *rpcc.Request) error { return c.enc.Encode(r) }

func (c *eventCodec) ReadResponse(r *rpcc.Response) error {
	if err := c.dec.Decode(r); err != nil {
		return err
	}
	if r.Method != "" {
		if ev, ok := c.decode(r.Method, r.Args); ok {
			c.events.push(ev)
		}
	}
	return nil
}

// eventQueue is an unbounded, ordered mailbox of page events with a
// coalescing wake-up channel, drained in batches by its one consumer.
type eventQueue struct {
	mu     sync.Mutex
	events []Event
	notify chan struct{}
	// dialog, when set, is told of a dialog the moment it opens, from the
	// reader goroutine: it must not block.
	dialog func(DialogOpening)
}

func newEventQueue() *eventQueue { return &eventQueue{notify: make(chan struct{}, 1)} }

func (q *eventQueue) push(ev Event) {
	if d, ok := ev.(DialogOpening); ok && q.dialog != nil {
		q.dialog(d)
	}
	q.mu.Lock()
	q.events = append(q.events, ev)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// take returns every queued event, oldest first, and empties the queue.
func (q *eventQueue) take() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.events
	q.events = nil
	return evs
}
