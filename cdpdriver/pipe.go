package cdpdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// The pipe transport: a browser framebus launches has no DevTools port.
// Chromium run with --remote-debugging-pipe reads CDP messages on its fd 3
// and writes them on its fd 4, each a JSON object followed by a NUL byte,
// and nobody else on the machine can reach them. Everything shares that
// one pipe, so the transport demultiplexes it into virtual connections by
// flat session (Target.attachToTarget with flatten, every message of a
// session carrying its "sessionId"): each page, and each browser-level
// connection, is a session of its own with its own rpcc.Conn, as it would
// have its own websocket. Messages without a sessionId are the
// transport's own: its commands (the readiness probe, attach, detach) and
// the detach events of the sessions it attached.

// The ranges of ids on the pipe. A tab numbers its commands with rpcc
// from 1 up and posts others from postedIDs (1<<30) up (codec.go); a
// command sent to a session the browser already dropped is answered on
// no session, with the tab's id. The transport's own commands take ids
// from pipeCallIDs up, a range no tab reaches (2^29 posted commands on
// one connection), so such an answer is never taken for theirs. Chromium
// takes ids up to 2^31-1.
const pipeCallIDs = 3 << 29

// maxPipeMessage is the longest message read from the browser: 128 MiB,
// far above any value a reply may carry (the result and content limits
// refuse those in the page). A longer one is skipped, not kept: a reply
// fails its command with an error, an event is dropped. A session may
// bound its messages lower (pipeConn.setMessageLimit); the framer then
// reads no more than the largest such bound.
const maxPipeMessage = 128 << 20

// freeMemoryAfter: once a message at least this large has been read
// (delivered, or skipped), the node hands its freed memory back to the
// system soon after (releaseMemorySoon); Go's own scavenger takes
// minutes to do so.
const freeMemoryAfter = 8 << 20

// freeMemoryDelay is how long after such a message memory is handed
// back: time for its reader to decode and drop it. It also spaces the
// hand-backs, which cost a full collection each.
const freeMemoryDelay = 2 * time.Second

// pipeWriteBacklog bounds the bytes waiting for the browser to read
// them; a write beyond it fails at once (the browser is stopped or hung).
const pipeWriteBacklog = 64 << 20

// pipeSessionBacklog bounds the bytes read for one session and not yet
// taken by its connection's reader (which reads continuously: rpcc's
// receive loop). A session past it is ended and detached rather than
// let the node grow.
const pipeSessionBacklog = 2 * maxPipeMessage

// pipeWriteStall is how long the browser may take to read one message
// before the pipe is given up: Chromium reads its pipe on a thread of
// its own, so only a stopped or hung browser takes that long.
const pipeWriteStall = 30 * time.Second

// errSessionDetached is what a reader of a session's connection gets once
// the session is gone (its target closed, or the transport detached it).
var errSessionDetached = errors.New("cdp: the session was detached")

// errPipeClosed is what readers and writers get once the pipe is closed
// on our side.
var errPipeClosed = errors.New("cdp: the browser pipe is closed")

// pipeTransport is our end of the pipe: w is the browser's fd 3, r its
// fd 4. One goroutine reads r and routes every message; another writes
// the queued messages on w, so no caller ever waits for the browser to
// read (a stopped browser holds up nobody's Close), and a write that
// makes no progress for writeStall ends the pipe.
type pipeTransport struct {
	w              io.WriteCloser
	r              io.ReadCloser
	log            zerolog.Logger
	writeStall     time.Duration // pipeWriteStall but in tests
	maxMessage     int           // maxPipeMessage but in tests
	sessionBacklog int           // pipeSessionBacklog but in tests

	mu       sync.Mutex
	sessions map[string]*pipeConn
	calls    map[uint64]*pipeCall
	seq      uint64
	out      [][]byte // whole messages waiting for the writer, in order
	outBytes int
	err      error // why the pipe is down; set once

	wake      chan struct{} // the writer has messages to write
	shutOnce  sync.Once
	closeErr  error         // of closing w and r; set in shutOnce
	shutDown  chan struct{} // closed when the pipe is shut (err set)
	done      chan struct{} // closed when the reader stopped
	writeDone chan struct{} // closed when the writer stopped
}

// pipeCall is a command of the transport waiting for its reply. attach
// is set for Target.attachToTarget: the session is registered by the
// reader the moment its reply is read, before any of its messages.
type pipeCall struct {
	reply  chan pipeReply // buffered: the reader never blocks
	attach bool
}

type pipeReply struct {
	result json.RawMessage
	conn   *pipeConn // the attached session, for attach
	err    error
}

func newPipeTransport(w io.WriteCloser, r io.ReadCloser, log zerolog.Logger) *pipeTransport {
	t := makePipeTransport(w, r, log)
	t.start()
	return t
}

// makePipeTransport makes a transport whose reader and writer are not
// started yet (tests set its limits first).
func makePipeTransport(w io.WriteCloser, r io.ReadCloser, log zerolog.Logger) *pipeTransport {
	return &pipeTransport{w: w, r: r, log: log,
		writeStall: pipeWriteStall, maxMessage: maxPipeMessage, sessionBacklog: pipeSessionBacklog,
		sessions: map[string]*pipeConn{}, calls: map[uint64]*pipeCall{},
		wake: make(chan struct{}, 1), shutDown: make(chan struct{}),
		done: make(chan struct{}), writeDone: make(chan struct{})}
}

func (t *pipeTransport) start() {
	go t.run()
	go t.writeLoop()
}

// run reads and routes messages until the pipe ends, then closes every
// connection: the browser is gone.
func (t *pipeTransport) run() {
	frames := newPipeFramer(t.r)
	for {
		frames.max = t.readLimit()
		msg, err := frames.next()
		var long *pipeMessageTooLong
		switch {
		case errors.As(err, &long):
			id, sid := long.replyTo()
			t.refuse(id, sid, long.size, frames.max)
		case err != nil:
			t.fail(err)
			return
		default:
			t.route(msg)
		}
		if len(msg) >= freeMemoryAfter || long != nil && long.size >= freeMemoryAfter {
			releaseMemorySoon()
		}
	}
}

// readLimit is the longest message the framer reads whole: the largest
// bound a session set (the tabs of a node share theirs), or maxMessage
// when none did. A session that set none (the browser-level one) gets
// small messages only.
func (t *pipeTransport) readLimit() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	bound := 0
	for _, c := range t.sessions {
		bound = max(bound, int(c.limit.Load()))
	}
	if bound == 0 || bound > t.maxMessage {
		return t.maxMessage
	}
	return bound
}

// memoryRelease spaces the hand-backs of releaseMemorySoon.
var memoryRelease struct {
	sync.Mutex
	pending bool
}

// releaseMemorySoon hands the node's freed memory back to the system
// freeMemoryDelay from now, off the reader goroutine; the messages read
// meanwhile share that one hand-back.
func releaseMemorySoon() {
	memoryRelease.Lock()
	defer memoryRelease.Unlock()
	if memoryRelease.pending {
		return
	}
	memoryRelease.pending = true
	time.AfterFunc(freeMemoryDelay, func() {
		memoryRelease.Lock()
		memoryRelease.pending = false
		memoryRelease.Unlock()
		debug.FreeOSMemory()
	})
}

// route hands one message to its session, or to the transport itself.
// A message with no sessionId is a reply to one of the transport's
// commands (its id in their range), a reply to a tab's command whose
// session the browser no longer has (dropped), or a browser-wide event
// (Target.detachedFromTarget ends a session).
func (t *pipeTransport) route(msg []byte) {
	sid, body, err := cutSessionID(msg)
	if err != nil {
		t.log.Warn().Err(err).Msg("unreadable message from the browser pipe")
		return
	}
	if sid != "" {
		t.mu.Lock()
		c := t.sessions[sid]
		t.mu.Unlock()
		if c == nil {
			// A session already closed on our side: its last events
			// may still be on their way.
			t.log.Debug().Str("session", sid).Msg("message for an unknown session dropped")
			return
		}
		if limit := int(c.limit.Load()); limit > 0 && len(body) > limit {
			// Read whole for another session's larger bound.
			id, _ := newPipeMessageTooLong(body).replyTo()
			t.refuse(id, sid, len(body), limit)
			return
		}
		c.deliver(body)
		return
	}
	var m struct {
		ID     uint64          `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Method string `json:"method"`
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.log.Warn().Err(err).Msg("unreadable message from the browser pipe")
		return
	}
	switch {
	case m.Method == "Target.detachedFromTarget":
		t.detached(m.Params.SessionID, errSessionDetached)
	case m.Method != "":
		// Target.attachedToTarget and the like: nothing to do.
	case m.ID == 0 && m.Error != nil:
		// A session's command the browser could not even read (its id
		// unreadable): the browser answers on no session, so it is
		// logged here, as a page's codec logs it over a websocket.
		t.log.Warn().Str("error", m.Error.Message).Msg("browser refused a command it could not read")
	case m.ID >= pipeCallIDs:
		var err error
		if m.Error != nil {
			err = fmt.Errorf("cdp: %s (code %d)", m.Error.Message, m.Error.Code)
		}
		t.answer(m.ID, m.Result, err)
	default:
		// A tab's command to a session the browser had already
		// dropped (its tab closing): its caller's connection ends with
		// the session.
		t.log.Debug().Uint64("id", m.ID).RawJSON("reply", body).Msg("reply on no session to a command of a session already gone")
	}
}

// answer delivers the reply of one of the transport's commands. An
// attach's session is registered here, in the reader, so that no message
// of it can come first and be dropped as unknown. An attach nobody waits
// for any more (its caller gave up) is detached again.
func (t *pipeTransport) answer(id uint64, result json.RawMessage, err error) {
	t.mu.Lock()
	call := t.calls[id]
	delete(t.calls, id)
	if call == nil {
		t.mu.Unlock()
		if sid := attachedSessionID(result); err == nil && sid != "" {
			t.log.Debug().Str("session", sid).Msg("an attach whose caller gave up: detached")
			t.detach(sid)
		}
		return // a detach's, or a command whose caller gave up
	}
	r := pipeReply{result: result, err: err}
	if call.attach && err == nil {
		if sid := attachedSessionID(result); sid == "" {
			r.err = fmt.Errorf("cdp: attach answered %.200s, with no sessionId", result)
		} else {
			r.conn = newPipeConn(t, sid)
			t.sessions[sid] = r.conn
		}
	}
	t.mu.Unlock()
	call.reply <- r
}

// attachedSessionID is the session an attach's reply names, if result is
// one.
func attachedSessionID(result json.RawMessage) string {
	var a struct {
		SessionID string `json:"sessionId"`
	}
	if len(result) == 0 || json.Unmarshal(result, &a) != nil {
		return ""
	}
	return a.SessionID
}

// refuse answers a message skipped for its length (size bytes, over
// limit): a reply (id not 0) fails its command, whoever sent it; an event
// is dropped.
func (t *pipeTransport) refuse(id uint64, sid string, size, limit int) {
	t.log.Warn().Int("bytes", size).Int("limit", limit).Uint64("id", id).Str("session", sid).Msg("message from the browser too long: skipped")
	if id == 0 {
		return
	}
	msg := replyTooLongMessage(size, limit)
	if sid == "" {
		if id >= pipeCallIDs {
			t.answer(id, nil, errors.New("cdp: "+msg))
		}
		return
	}
	t.mu.Lock()
	c := t.sessions[sid]
	t.mu.Unlock()
	if c != nil {
		text, _ := json.Marshal(msg)
		c.deliver(fmt.Appendf(nil, `{"id":%d,"error":{"code":-32000,"message":%s}}`, id, text)) // as Chromium orders it
	}
}

// detached closes a session the browser ended.
func (t *pipeTransport) detached(sid string, why error) {
	t.mu.Lock()
	c := t.sessions[sid]
	delete(t.sessions, sid)
	t.mu.Unlock()
	if c != nil {
		c.end(why)
	}
}

// shut takes the pipe down with err (the first reason stays): queued
// messages are dropped, writes fail from now on, and our ends are closed,
// which stops the reader and the writer.
func (t *pipeTransport) shut(err error) {
	t.mu.Lock()
	if t.err == nil {
		t.err = err
	}
	t.out, t.outBytes = nil, 0
	t.mu.Unlock()
	t.shutOnce.Do(func() {
		close(t.shutDown)
		t.closeErr = errors.Join(t.w.Close(), t.r.Close())
	})
}

// fail ends the transport when its reader stops: every session's readers
// get the error, every command waiting for a reply too.
func (t *pipeTransport) fail(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("cdp: the browser closed its pipe: %w", err)
	}
	t.shut(err)
	t.mu.Lock()
	sessions := t.sessions
	t.sessions = map[string]*pipeConn{}
	t.calls = map[uint64]*pipeCall{} // their callers see done
	err = t.err
	t.mu.Unlock()
	close(t.done)
	for _, c := range sessions {
		c.end(err)
	}
}

// Close closes our ends of the pipe; the reader then fails every
// connection.
func (t *pipeTransport) Close() error {
	t.shut(errPipeClosed)
	<-t.done
	<-t.writeDone
	return t.closeErr
}

// write queues one message with the session's id appended (sid "" for
// the transport's own), and its terminating NUL, for the writer; it never
// waits for the browser. msg is one JSON object, possibly followed by a
// newline (json.Encoder's); it is copied.
func (t *pipeTransport) write(sid string, msg []byte) error {
	msg = bytes.TrimRight(msg, " \t\r\n")
	if len(msg) < 2 || msg[0] != '{' || msg[len(msg)-1] != '}' {
		return fmt.Errorf("cdp: a message to the browser must be one JSON object, not %.40q", msg)
	}
	out := make([]byte, 0, len(msg)+len(sid)+16)
	if sid == "" {
		out = append(out, msg...)
	} else {
		out = append(out, msg[:len(msg)-1]...)
		if len(msg) > 2 { // not {}
			out = append(out, ',')
		}
		out = append(out, `"sessionId":"`...)
		out = append(out, sid...)
		out = append(out, '"', '}')
	}
	out = append(out, 0)

	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	if t.outBytes > 0 && t.outBytes+len(out) > pipeWriteBacklog {
		return fmt.Errorf("cdp: %d bytes of commands wait for the browser to read its pipe: it is stopped or hung", t.outBytes)
	}
	t.out = append(t.out, out)
	t.outBytes += len(out)
	select {
	case t.wake <- struct{}{}:
	default:
	}
	return nil
}

// writeLoop writes the queued messages in order, each within writeStall
// (a deadline on the pipe's fd: os.Pipe's ends are non-blocking), until
// the pipe is shut.
func (t *pipeTransport) writeLoop() {
	defer close(t.writeDone)
	deadline, _ := t.w.(interface{ SetWriteDeadline(time.Time) error })
	for {
		t.mu.Lock()
		var msg []byte
		if len(t.out) > 0 {
			msg = t.out[0]
			t.out[0] = nil
			t.out = t.out[1:]
			if len(t.out) == 0 {
				t.out = nil
			}
		}
		stall := t.writeStall
		t.mu.Unlock()
		if msg == nil {
			select {
			case <-t.wake:
				continue
			case <-t.shutDown:
				return
			}
		}
		if deadline != nil {
			_ = deadline.SetWriteDeadline(time.Now().Add(stall)) // fails only where none can be set
		}
		_, err := t.w.Write(msg)
		t.mu.Lock()
		t.outBytes -= len(msg)
		t.mu.Unlock()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("cdp: the browser read no message from its pipe in %s: it is stopped or hung", stall)
			} else {
				err = fmt.Errorf("cdp: write to the browser pipe: %w", err)
			}
			t.shut(err)
			return
		}
	}
}

// downErr is why the transport is down.
func (t *pipeTransport) downErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		return errPipeClosed
	}
	return t.err
}

// call sends one of the transport's own commands and waits for its reply.
func (t *pipeTransport) call(ctx context.Context, method string, params any, attach bool) (pipeReply, error) {
	call := &pipeCall{reply: make(chan pipeReply, 1), attach: attach}
	id, err := t.send(method, params, call)
	if err != nil {
		return pipeReply{}, err
	}
	select {
	case r := <-call.reply:
		return r, r.err
	case <-t.done:
		return pipeReply{}, t.downErr()
	case <-ctx.Done():
		// Forgotten: an attach answered later is detached by answer.
		t.mu.Lock()
		_, waiting := t.calls[id]
		delete(t.calls, id)
		t.mu.Unlock()
		if !waiting { // answered meanwhile, or the pipe failed
			select {
			case r := <-call.reply:
				if r.conn != nil {
					r.conn.Close()
				}
			case <-t.done:
			}
		}
		return pipeReply{}, ctx.Err()
	}
}

// send queues a command of the transport's; call, when not nil, waits for
// its reply.
func (t *pipeTransport) send(method string, params any, call *pipeCall) (uint64, error) {
	t.mu.Lock()
	id := pipeCallIDs + t.seq
	t.seq++
	if call != nil {
		t.calls[id] = call
	}
	t.mu.Unlock()
	msg, err := json.Marshal(struct {
		ID     uint64 `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{id, method, params})
	if err == nil {
		err = t.write("", msg)
	}
	if err != nil {
		t.mu.Lock()
		delete(t.calls, id)
		t.mu.Unlock()
		return 0, err
	}
	return id, nil
}

// ready asks the browser its version: the first answer over the pipe
// says it is up.
func (t *pipeTransport) ready(ctx context.Context) error {
	_, err := t.call(ctx, "Browser.getVersion", nil, false)
	return err
}

// attachPage opens a session of its own on a target.
func (t *pipeTransport) attachPage(ctx context.Context, targetID string) (*pipeConn, error) {
	r, err := t.call(ctx, "Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, true)
	if err != nil {
		return nil, fmt.Errorf("attach to target %s: %w", targetID, err)
	}
	return r.conn, nil
}

// attachBrowser opens a session of its own on the browser target: a
// browser-level connection.
func (t *pipeTransport) attachBrowser(ctx context.Context) (*pipeConn, error) {
	r, err := t.call(ctx, "Target.attachToBrowserTarget", nil, true)
	if err != nil {
		return nil, fmt.Errorf("attach to the browser target: %w", err)
	}
	return r.conn, nil
}

// detach ends a session on our side and queues its detach, whose reply
// is not waited for: it never blocks, so the reader and Close may call it.
func (t *pipeTransport) detach(sid string) {
	t.mu.Lock()
	delete(t.sessions, sid)
	t.mu.Unlock()
	if _, err := t.send("Target.detachFromTarget", map[string]string{"sessionId": sid}, nil); err != nil {
		t.log.Debug().Err(err).Str("session", sid).Msg("detach session")
	}
}

// cutSessionID finds a message's top-level sessionId and returns the
// message without it. Chromium appends the sessionId as the last member,
// so it is cut in place without decoding the message; a message shaped
// otherwise is decoded to find it.
func cutSessionID(msg []byte) (sid string, body []byte, err error) {
	if sid, i := trailingSessionID(msg); i > 0 {
		msg[i] = '}'
		return sid, msg[:i+1], nil
	}
	if !bytes.Contains(msg, []byte(`"sessionId"`)) {
		return "", msg, nil
	}
	var m struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return "", nil, err
	}
	return m.SessionID, msg, nil
}

// trailingSessionID finds the sessionId Chromium appends as the last
// member of a message (or of a message's tail): its value and where its
// key starts, or -1.
func trailingSessionID(msg []byte) (string, int) {
	const key = `,"sessionId":"`
	if !bytes.HasSuffix(msg, []byte(`"}`)) {
		return "", -1
	}
	i := bytes.LastIndex(msg, []byte(key))
	if i < 0 {
		return "", -1
	}
	// The key's quotes follow a comma, so they are not inside a string;
	// no quote after it but the last, so its value is the top-level
	// object's last member.
	v := msg[i+len(key) : len(msg)-2]
	if bytes.IndexByte(v, '"') >= 0 || bytes.IndexByte(v, '\\') >= 0 {
		return "", -1
	}
	return string(v), i
}

// pipeFramerBuf is the framer's buffer between large messages.
const pipeFramerBuf = 64 << 10

// pipeFramer splits the browser's stream at its NUL bytes. Its buffer
// grows to hold the message being read, up to max; once a large message
// is taken the buffer goes with it (or is let go) and a small one takes
// over, so no large buffer outlives its message.
type pipeFramer struct {
	r          io.Reader
	buf        []byte
	start, end int // unread data is buf[start:end]
	scanned    int // buf[start:scanned] holds no NUL
	max        int // the longest message; 0: no limit
}

func newPipeFramer(r io.Reader) *pipeFramer {
	return &pipeFramer{r: r, buf: make([]byte, pipeFramerBuf)}
}

// next returns the next message, in memory of its own: the session's
// reader keeps it while the framer reads on. A message longer than max
// is read to its end and dropped: next returns a *pipeMessageTooLong
// and the stream goes on.
func (f *pipeFramer) next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(f.buf[f.scanned:f.end], 0); i >= 0 {
			end := f.scanned + i
			if f.max > 0 && end-f.start > f.max { // read whole, in one go
				long := newPipeMessageTooLong(f.buf[f.start:end])
				long.tail = bytes.Clone(f.buf[max(f.start, end-pipeTooLongKeep):end])
				f.start, f.scanned = end+1, end+1
				return nil, long
			}
			return f.take(end), nil
		}
		f.scanned = f.end
		if f.max > 0 && f.end-f.start > f.max {
			return nil, f.skip()
		}
		if f.start > 0 {
			n := copy(f.buf, f.buf[f.start:f.end])
			f.scanned -= f.start
			f.start, f.end = 0, n
		}
		if f.end == len(f.buf) {
			grow := len(f.buf)
			if f.max > 0 {
				grow = min(grow, f.max+1-len(f.buf)) // room for max bytes and one more
			}
			f.buf = append(f.buf, make([]byte, max(grow, 1))...)
		}
		n, err := f.r.Read(f.buf[f.end:])
		f.end += n
		if n > 0 {
			continue
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		if err == io.EOF && f.start < f.end {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
}

// take returns the message buf[start:end] and moves past its NUL. A
// message that fills most of a grown buffer takes the buffer along
// rather than a copy; what follows it moves to a new buffer.
func (f *pipeFramer) take(end int) []byte {
	grown := len(f.buf) > pipeFramerBuf
	if grown && end-f.start >= len(f.buf)/2 {
		msg := f.buf[f.start:end:end]
		f.restart(f.buf[end+1 : f.end])
		return msg
	}
	msg := bytes.Clone(f.buf[f.start:end])
	f.start, f.scanned = end+1, end+1
	if grown && f.end-f.start <= pipeFramerBuf {
		f.restart(f.buf[f.start:f.end])
	}
	return msg
}

// restart moves the unread data rest to a new buffer, a small one unless
// rest is larger.
func (f *pipeFramer) restart(rest []byte) {
	buf := make([]byte, max(pipeFramerBuf, len(rest)))
	f.start, f.scanned, f.end = 0, 0, copy(buf, rest)
	f.buf = buf
}

// pipeMessageTooLong is a message the framer skipped for its length:
// its size, its first and last bytes, which say whose reply it was.
type pipeMessageTooLong struct {
	size       int
	head, tail []byte
}

// pipeTooLongKeep is how much of either end of a message too long to
// read is kept.
const pipeTooLongKeep = 256

// newPipeMessageTooLong starts one with the message's first bytes.
func newPipeMessageTooLong(data []byte) *pipeMessageTooLong {
	return &pipeMessageTooLong{size: len(data), head: bytes.Clone(data[:min(pipeTooLongKeep, len(data))])}
}

func (e *pipeMessageTooLong) Error() string {
	return fmt.Sprintf("cdp: a message of %d bytes from the browser", e.size)
}

// replyTo is the id and session of the reply, or 0 for an event (or a
// message shaped otherwise). Chromium writes a reply's id first and its
// sessionId last.
func (e *pipeMessageTooLong) replyTo() (id uint64, sid string) {
	rest, ok := bytes.CutPrefix(e.head, []byte(`{"id":`))
	if !ok {
		return 0, ""
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == len(rest) || rest[n] != ',' {
		return 0, ""
	}
	id, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil {
		return 0, ""
	}
	sid, _ = trailingSessionID(e.tail)
	return id, sid
}

// skip reads a message longer than max to its end, keeping only its
// first and last bytes, and goes on with a small buffer.
func (f *pipeFramer) skip() error {
	const keep = pipeTooLongKeep
	data := f.buf[f.start:f.end]
	long := newPipeMessageTooLong(data)
	tail := bytes.Clone(data[max(0, len(data)-keep):])
	f.restart(nil)
	for {
		n, err := f.r.Read(f.buf)
		read := f.buf[:n]
		if i := bytes.IndexByte(read, 0); i >= 0 {
			read = read[:i]
			f.start, f.scanned, f.end = i+1, i+1, n
		}
		long.size += len(read)
		tail = append(tail, read[max(0, len(read)-keep):]...)
		tail = append(tail[:0:0], tail[max(0, len(tail)-keep):]...)
		if f.end > 0 {
			long.tail = tail
			return long
		}
		if n > 0 {
			continue
		}
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
}

// pipeConn is one session's virtual connection: an io.ReadWriteCloser
// for rpcc, which writes one whole message per Write. Reads are served
// from a queue the transport's reader fills without ever waiting, so a
// session nobody reads cannot hold up the others; the queue is bounded
// (the transport's sessionBacklog bytes), past which the session ends.
type pipeConn struct {
	t   *pipeTransport
	sid string

	// limit bounds the session's messages in bytes (0: only the
	// transport's maxMessage); see setMessageLimit.
	limit atomic.Int64

	mu     sync.Mutex
	ready  sync.Cond // signalled when queue grows or err is set
	queue  [][]byte
	queued int    // bytes in queue
	cur    []byte // the rest of the message Read is in
	err    error  // set once the session ended
}

func newPipeConn(t *pipeTransport, sid string) *pipeConn {
	c := &pipeConn{t: t, sid: sid}
	c.ready.L = &c.mu
	return c
}

// setMessageLimit bounds the session's messages to n bytes (0: no bound
// of its own): a longer reply fails its command, a longer event is
// dropped, and the framer reads none longer than the largest bound, so
// such a message is discarded as it streams, never held whole.
func (c *pipeConn) setMessageLimit(n int) { c.limit.Store(int64(max(n, 0))) }

// deliver queues a message of the session. A session whose reader has
// fallen sessionBacklog bytes behind is ended and detached: its
// connection fails rather than the node holding what nobody reads.
func (c *pipeConn) deliver(msg []byte) {
	c.mu.Lock()
	behind := false
	if c.err == nil {
		if c.queued+len(msg) > c.t.sessionBacklog {
			c.err = fmt.Errorf("cdp: the session's reader fell %d bytes behind; the session is closed", c.queued+len(msg))
			c.queue, c.queued, behind = nil, 0, true
		} else {
			c.queue = append(c.queue, msg)
			c.queued += len(msg)
		}
		c.ready.Broadcast()
	}
	c.mu.Unlock()
	if behind {
		c.t.log.Warn().Str("session", c.sid).Msg("a session's reader fell behind: closed")
		c.t.detach(c.sid)
	}
}

// end makes the session's readers and writers fail with err, once the
// queued messages are read.
func (c *pipeConn) end(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.ready.Broadcast()
	c.mu.Unlock()
}

// next returns the next whole message (eventCodec reads whole messages
// this way, without scanning for their ends).
func (c *pipeConn) next() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queue) == 0 {
		if c.err != nil {
			return nil, c.err
		}
		c.ready.Wait()
	}
	msg := c.queue[0]
	c.queue[0] = nil
	c.queue = c.queue[1:]
	if len(c.queue) == 0 {
		c.queue = nil
	}
	c.queued -= len(msg)
	return msg, nil
}

// Read reads the session's messages as one stream (for rpcc's own JSON
// codec).
func (c *pipeConn) Read(p []byte) (int, error) {
	if len(c.cur) == 0 {
		msg, err := c.next()
		if err != nil {
			return 0, err
		}
		c.cur = msg
	}
	n := copy(p, c.cur)
	c.cur = c.cur[n:]
	if len(c.cur) == 0 {
		c.cur = nil // not the empty end of a large message
	}
	return n, nil
}

// Write queues one message of the session for the pipe; it does not wait
// for the browser to read it.
func (c *pipeConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if err := c.t.write(c.sid, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close ends the session: the browser is asked to detach it (without
// waiting), and its readers get errSessionDetached.
func (c *pipeConn) Close() error {
	c.mu.Lock()
	open := c.err == nil
	if open {
		c.err = errSessionDetached
		c.queue, c.queued = nil, 0
		c.ready.Broadcast()
	}
	c.mu.Unlock()
	if open {
		c.t.detach(c.sid)
	}
	return nil
}
