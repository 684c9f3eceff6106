package cdpdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

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

// pipeCallIDs is where the ids of the transport's own commands start;
// they share the session-less channel with nothing else.
const pipeCallIDs = 1

// errSessionDetached is what a reader of a session's connection gets once
// the session is gone (its target closed, or the transport detached it).
var errSessionDetached = errors.New("cdp: the session was detached")

// errPipeClosed is what readers and writers get once the pipe is closed
// on our side.
var errPipeClosed = errors.New("cdp: the browser pipe is closed")

// pipeTransport is our end of the pipe: w is the browser's fd 3, r its
// fd 4. One goroutine reads r and routes every message.
type pipeTransport struct {
	w   io.WriteCloser
	r   io.ReadCloser
	log zerolog.Logger

	wmu sync.Mutex // orders whole messages on w

	mu       sync.Mutex
	sessions map[string]*pipeConn
	calls    map[uint64]*pipeCall
	seq      uint64
	err      error         // why the pipe is down; set once, with done
	done     chan struct{} // closed when the reader stopped
}

// pipeCall is a command of the transport waiting for its reply. attach
// is set for Target.attachToTarget: the session is registered by the
// reader the moment its reply is read, before any of its messages.
type pipeCall struct {
	reply     chan pipeReply // buffered: the reader never blocks
	attach    bool
	abandoned bool // its caller stopped waiting; under mu
}

type pipeReply struct {
	result json.RawMessage
	conn   *pipeConn // the attached session, for attach
	err    error
}

func newPipeTransport(w io.WriteCloser, r io.ReadCloser, log zerolog.Logger) *pipeTransport {
	t := &pipeTransport{w: w, r: r, log: log, sessions: map[string]*pipeConn{},
		calls: map[uint64]*pipeCall{}, done: make(chan struct{})}
	go t.run()
	return t
}

// run reads and routes messages until the pipe ends, then closes every
// connection: the browser is gone.
func (t *pipeTransport) run() {
	frames := newPipeFramer(t.r)
	for {
		msg, err := frames.next()
		if err != nil {
			t.fail(err)
			return
		}
		t.route(msg)
	}
}

// route hands one message to its session, or to the transport itself.
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
	}
}

// answer delivers the reply of one of the transport's commands. An
// attach's session is registered here, in the reader, so that no message
// of it can come first and be dropped as unknown.
func (t *pipeTransport) answer(id uint64, result json.RawMessage, err error) {
	t.mu.Lock()
	call := t.calls[id]
	delete(t.calls, id)
	if call == nil {
		t.mu.Unlock()
		return // a command nobody waits for (a detach)
	}
	r := pipeReply{result: result, err: err}
	if call.attach && err == nil {
		var a struct {
			SessionID string `json:"sessionId"`
		}
		if jerr := json.Unmarshal(result, &a); jerr != nil || a.SessionID == "" {
			r.err = fmt.Errorf("cdp: attach answered %s, with no sessionId", result)
		} else {
			r.conn = newPipeConn(t, a.SessionID)
			t.sessions[a.SessionID] = r.conn
		}
	}
	abandoned := call.abandoned
	t.mu.Unlock()
	if abandoned && r.conn != nil {
		r.conn.Close() // its caller gave up: detach it again
		return
	}
	call.reply <- r
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

// fail ends the transport: every session's readers get the error, every
// command waiting for a reply too.
func (t *pipeTransport) fail(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("cdp: the browser closed its pipe: %w", err)
	}
	t.mu.Lock()
	t.err = err
	sessions := t.sessions
	t.sessions = map[string]*pipeConn{}
	t.mu.Unlock()
	close(t.done)
	for _, c := range sessions {
		c.end(err)
	}
}

// Close closes our ends of the pipe; the reader then fails every
// connection.
func (t *pipeTransport) Close() error {
	werr := t.w.Close()
	rerr := t.r.Close()
	<-t.done
	return errors.Join(werr, rerr)
}

// write sends one message with the session's id appended (sid "" for the
// transport's own), and its terminating NUL. msg is one JSON object,
// possibly followed by a newline (json.Encoder's).
func (t *pipeTransport) write(sid string, msg []byte) error {
	msg = bytes.TrimRight(msg, " \t\r\n")
	if len(msg) < 2 || msg[0] != '{' || msg[len(msg)-1] != '}' {
		return fmt.Errorf("cdp: a message to the browser must be one JSON object, not %.40q", msg)
	}
	var tail []byte
	if sid == "" {
		tail = []byte{0}
	} else {
		msg = msg[:len(msg)-1]
		if len(msg) > 1 { // not {}
			tail = append(tail, ',')
		}
		tail = append(tail, `"sessionId":"`...)
		tail = append(tail, sid...)
		tail = append(tail, '"', '}', 0)
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	select {
	case <-t.done:
		return t.downErr()
	default:
	}
	if _, err := t.w.Write(msg); err != nil {
		return fmt.Errorf("cdp: write to the browser pipe: %w", err)
	}
	if _, err := t.w.Write(tail); err != nil {
		return fmt.Errorf("cdp: write to the browser pipe: %w", err)
	}
	return nil
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
		// An attach stays pending, so that the session its reply makes
		// is detached again (answer); any other command is forgotten.
		t.mu.Lock()
		_, waiting := t.calls[id]
		if waiting && !attach {
			delete(t.calls, id)
		}
		call.abandoned = true
		t.mu.Unlock()
		if !waiting { // answered meanwhile: the reply is in the channel
			if r := <-call.reply; r.conn != nil {
				r.conn.Close()
			}
		}
		return pipeReply{}, ctx.Err()
	}
}

// send writes a command of the transport's; call, when not nil, waits for
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

// detach ends a session we close; its reply is not waited for.
func (t *pipeTransport) detach(sid string) {
	t.mu.Lock()
	delete(t.sessions, sid)
	t.mu.Unlock()
	select {
	case <-t.done:
		return
	default:
	}
	if _, err := t.send("Target.detachFromTarget", map[string]string{"sessionId": sid}, nil); err != nil {
		t.log.Debug().Err(err).Str("session", sid).Msg("detach session")
	}
}

// cutSessionID finds a message's top-level sessionId and returns the
// message without it. Chromium appends the sessionId as the last member,
// so it is cut in place without decoding the message; a message shaped
// otherwise is decoded to find it.
func cutSessionID(msg []byte) (sid string, body []byte, err error) {
	const key = `,"sessionId":"`
	if bytes.HasSuffix(msg, []byte(`"}`)) {
		if i := bytes.LastIndex(msg, []byte(key)); i > 0 {
			// The key's quotes follow a comma, so they are not inside
			// a string; no quote after it but the last, so its value
			// is the top-level object's last member.
			v := msg[i+len(key) : len(msg)-2]
			if bytes.IndexByte(v, '"') < 0 && bytes.IndexByte(v, '\\') < 0 {
				sid = string(v)
				msg[i] = '}'
				return sid, msg[:i+1], nil
			}
		}
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

// pipeFramer splits the browser's stream at its NUL bytes.
type pipeFramer struct {
	r          io.Reader
	buf        []byte
	start, end int // unread data is buf[start:end]
	scanned    int // buf[start:scanned] holds no NUL
}

func newPipeFramer(r io.Reader) *pipeFramer {
	return &pipeFramer{r: r, buf: make([]byte, 64<<10)}
}

// next returns the next message, in memory of its own: the session's
// reader keeps it while the framer reads on.
func (f *pipeFramer) next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(f.buf[f.scanned:f.end], 0); i >= 0 {
			msg := bytes.Clone(f.buf[f.start : f.scanned+i])
			f.start = f.scanned + i + 1
			f.scanned = f.start
			return msg, nil
		}
		f.scanned = f.end
		if f.start > 0 {
			n := copy(f.buf, f.buf[f.start:f.end])
			f.scanned -= f.start
			f.start, f.end = 0, n
		}
		if f.end == len(f.buf) {
			f.buf = append(f.buf, make([]byte, len(f.buf))...)
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

// pipeConn is one session's virtual connection: an io.ReadWriteCloser
// for rpcc, which writes one whole message per Write. Reads are served
// from a queue the transport's reader fills without ever waiting, so a
// session nobody reads cannot hold up the others.
type pipeConn struct {
	t   *pipeTransport
	sid string

	mu    sync.Mutex
	ready sync.Cond // signalled when queue grows or err is set
	queue [][]byte
	cur   []byte // the rest of the message Read is in
	err   error  // set once the session ended
}

func newPipeConn(t *pipeTransport, sid string) *pipeConn {
	c := &pipeConn{t: t, sid: sid}
	c.ready.L = &c.mu
	return c
}

func (c *pipeConn) deliver(msg []byte) {
	c.mu.Lock()
	if c.err == nil {
		c.queue = append(c.queue, msg)
		c.ready.Signal()
	}
	c.mu.Unlock()
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
	return n, nil
}

// Write sends one message of the session.
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

// Close ends the session: the browser is asked to detach it, and its
// readers get errSessionDetached.
func (c *pipeConn) Close() error {
	c.mu.Lock()
	open := c.err == nil
	if open {
		c.err = errSessionDetached
		c.queue = nil
		c.ready.Broadcast()
	}
	c.mu.Unlock()
	if open {
		c.t.detach(c.sid)
	}
	return nil
}
