package cdpdriver

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	conn   io.Writer
	buf    bytes.Buffer  // a command being encoded, under wmu
	enc    *json.Encoder // into buf
	msgs   messageSource
	events *eventQueue
	decode func(method string, params json.RawMessage) (Event, bool)

	// wmu orders writes: rpcc's requests and posted ones share the wire.
	wmu     sync.Mutex
	postSeq uint64
	refused func(err *rpcc.ResponseError)

	// watched holds the posted commands whose caller will ask how they
	// ended (postedError), with their error once the reply has one.
	watchMu sync.Mutex
	watched map[uint64]*rpcc.ResponseError
}

// postedIDs is where the ids of posted commands start, far above any id
// rpcc will reach, so their replies are recognised and kept from rpcc.
// Chromium takes an id only if it fits a 32-bit int: a larger one is
// refused with an error reply that has no id, and the command never runs.
// Above them, from pipeCallIDs (3<<29), are the pipe transport's own.
const postedIDs = 1 << 30

// messageSource gives whole messages: a messageReader over a websocket's
// stream, or a pipe session, whose messages arrive whole.
type messageSource interface{ next() ([]byte, error) }

func newEventCodec(conn io.ReadWriter, q *eventQueue, decode func(string, json.RawMessage) (Event, bool)) *eventCodec {
	msgs, whole := conn.(messageSource)
	if !whole {
		msgs = newMessageReader(conn)
	}
	c := &eventCodec{conn: conn, msgs: msgs, events: q, decode: decode}
	c.enc = json.NewEncoder(&c.buf)
	return c
}

// maxCommand is the longest command a page connection sends: a
// websocket's write buffer, less room for a frame header (a longer one
// would make the websocket refuse it and, with it, every later write: the
// tab would be lost). The pipe has the same bound, so a page behaves the
// same over either. A longer command is refused first, as a
// *CommandTooLargeError.
const maxCommand = writeBufferSize - 64

// CommandTooLargeError: a command (a script, a selector, text to type)
// too long for the page connection; nothing was sent.
type CommandTooLargeError struct{ Bytes int }

func (e *CommandTooLargeError) Error() string {
	return fmt.Sprintf("the command is %d bytes; a page command carries at most %d (a long script, selector or text)", e.Bytes, maxCommand)
}

// write encodes r and sends it whole, or refuses it when too long. The
// caller holds wmu.
func (c *eventCodec) write(r *rpcc.Request) error {
	c.buf.Reset()
	if err := c.enc.Encode(r); err != nil {
		return err
	}
	if c.buf.Len() > maxCommand {
		return &CommandTooLargeError{Bytes: c.buf.Len()}
	}
	_, err := c.conn.Write(c.buf.Bytes())
	return err
}

func (c *eventCodec) WriteRequest(r *rpcc.Request) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.write(r)
}

// post sends a command without waiting for its reply: the browser runs a
// session's commands in order, so a command sent next still runs after
// it. The caller collects the outcome with postedError once a command
// sent after it has been answered.
func (c *eventCodec) post(method string, args any) (uint64, error) {
	return c.send(method, args, true)
}

// postBlind posts a command whose outcome nobody asks for: a failure is
// dropped with its reply.
func (c *eventCodec) postBlind(method string, args any) error {
	_, err := c.send(method, args, false)
	return err
}

// send writes a posted command, watched for its reply when asked.
func (c *eventCodec) send(method string, args any, watch bool) (uint64, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.postSeq++
	id := postedIDs + c.postSeq
	if watch {
		c.watchMu.Lock()
		if c.watched == nil {
			c.watched = make(map[uint64]*rpcc.ResponseError)
		}
		c.watched[id] = nil
		c.watchMu.Unlock()
	}
	return id, c.write(&rpcc.Request{ID: id, Method: method, Args: args})
}

// postedError forgets a posted command and returns the error its reply
// carried. The browser answers a session's input commands in order, so
// once a later command's reply is in, this one's has been read.
func (c *eventCodec) postedError(id uint64) error {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	err := c.watched[id]
	delete(c.watched, id)
	if err != nil {
		return err
	}
	return nil
}

func (c *eventCodec) ReadResponse(r *rpcc.Response) error {
	for {
		msg, err := c.msgs.next()
		if err != nil {
			return err
		}
		if err := splitMessage(msg, r); err != nil {
			return err
		}
		if r.Method != "" {
			if ev, ok := c.decode(r.Method, r.Args); ok {
				c.events.push(ev)
			}
			return nil
		}
		if r.ID == 0 && r.Error != nil && c.refused != nil {
			// A command the browser could not even read, so it cannot
			// say which: no caller will hear of it, so it is logged.
			c.refused(r.Error)
		}
		if r.ID < postedIDs {
			return nil
		}
		c.keepPosted(r.ID, r.Error)
		*r = rpcc.Response{} // a posted command's reply: read on
	}
}

// keepPosted stores the error of a posted command for postedError, unless
// its caller has stopped waiting for it.
func (c *eventCodec) keepPosted(id uint64, err *rpcc.ResponseError) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if _, ok := c.watched[id]; ok && err != nil {
		c.watched[id] = err
	}
}

// eventQueue is an unbounded, ordered mailbox of page events with a
// coalescing wake-up channel, drained in batches by its one consumer.
type eventQueue struct {
	mu     sync.Mutex
	events []Event
	notify chan struct{}
	// dialog, when set, is told of a dialog the moment it opens or
	// closes, from the reader goroutine: it must not block.
	dialog func(Event)
	// crash, when set, is told of a renderer crash the moment it is read.
	crash func()
}

func newEventQueue() *eventQueue { return &eventQueue{notify: make(chan struct{}, 1)} }

func (q *eventQueue) push(ev Event) {
	q.mu.Lock()
	q.events = append(q.events, ev)
	q.mu.Unlock()
	// After the append: whoever the hook wakes finds the event queued.
	switch ev.(type) {
	case DialogOpening, DialogClosed:
		if q.dialog != nil {
			q.dialog(ev)
		}
	case Crashed:
		if q.crash != nil {
			q.crash()
		}
	}
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
