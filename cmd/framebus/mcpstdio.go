package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// framebus mcp speaks MCP over stdio with a transport of its own, not
// the SDK's IOTransport:
//   - The SDK's ends the session at the first line that is not a
//     JSON-RPC message (and its JSON decoder cannot read on past bad
//     JSON), so one bad line from a client would stop framebus mcp. Here a
//     bad line is answered with JSON-RPC's parse error or invalid
//     request, and dropped.
//   - Each line is decoded once. The SDK's reads every message with a
//     stream decoder, then as a batch, then as a message, each with a
//     new 32 KB buffer, behind the pipe that checked the lines: a third
//     of the server's CPU per call (BenchmarkMCPEvalVsNATS).

// lineTransport is MCP as JSON-RPC messages, one a line, read from in
// and written to out.
type lineTransport struct {
	in  io.Reader
	out *lockedWriter
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{out: t.out, incoming: make(chan lineRead), closed: make(chan struct{}),
		pending: map[jsonrpc.ID]bool{}, answered: make(chan struct{}, 1)}
	go c.readLines(t.in)
	return c, nil
}

// drainWait bounds how long a session whose client closed its input
// goes on answering the requests it read before (see readLines).
const drainWait = time.Minute

// lineConn is a session's connection over lineTransport.
type lineConn struct {
	out       *lockedWriter
	incoming  chan lineRead
	closed    chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	pending  map[jsonrpc.ID]bool // requests read and not answered yet
	answered chan struct{}       // a request was answered
}

// lineRead is a message read, or why reading ended.
type lineRead struct {
	msg jsonrpc.Message
	err error
}

// readLines hands in's messages to Read, one a line, and answers the
// lines that are none; it ends at in's end or when the connection is
// closed (a stdin that never ends keeps it waiting, as the SDK's). At
// in's end, the session ends once the requests read are answered
// (drainWait at most): `... | framebus mcp` prints its answers.
func (c *lineConn) readLines(in io.Reader) {
	r := bufio.NewReader(in)
	for {
		line, tooLong, err := readBoundedLine(r, mcp.DefaultMaxLineLength)
		var msg jsonrpc.Message
		switch {
		case tooLong:
			answerBadLine(c.out, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than the %d bytes a line may be", mcp.DefaultMaxLineLength))
		case len(bytes.TrimSpace(line)) == 0:
		default:
			var code int64
			var why string
			if msg, code, why = decodeLine(line); code != 0 {
				answerBadLine(c.out, requestID(line), code, why)
			}
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.mu.Lock()
			c.pending[req.ID] = true
			c.mu.Unlock()
		}
		if msg != nil && !c.hand(lineRead{msg: msg}) {
			return
		}
		if err != nil {
			c.drain()
			c.hand(lineRead{err: err})
			return
		}
	}
}

// drain waits until every request read is answered, drainWait at most.
func (c *lineConn) drain() {
	deadline := time.NewTimer(drainWait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		left := len(c.pending)
		c.mu.Unlock()
		if left == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-deadline.C:
			return
		case <-c.closed:
			return
		}
	}
}

// hand gives Read what was read: false once the connection is closed.
func (c *lineConn) hand(r lineRead) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	_, err = c.out.Write(append(data, '\n'))
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
	}
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (*lineConn) SessionID() string { return "" }

// lockedWriter writes whole messages to the protocol's stream: the
// session's (one Write each) and the answers to bad lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// readBoundedLine reads one line (without its newline), at most max bytes:
// past that it drops the rest of the line and says tooLong.
func readBoundedLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			line = append(line, bytes.TrimSuffix(chunk, []byte("\n"))...)
			if len(line) > max {
				line, tooLong = nil, true
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// decodeLine is a line's JSON-RPC message, or the JSON-RPC error code
// and message to answer a line that is none with.
func decodeLine(line []byte) (jsonrpc.Message, int64, string) {
	// Valid first: the SDK's decoder stops after a line's first value.
	if !json.Valid(line) {
		return nil, jsonrpc.CodeParseError, "parse error: the line is not JSON"
	}
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
		// Protocol 2025-06-18 and later have no batches.
		return nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported; send one message a line"
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()
	}
	return msg, 0, ""
}

// requestID is the id of a request the SDK cannot read (nested deeper
// than it reads, say) when encoding/json can, so its sender gets its
// answer; nil (null) when there is none to read.
func requestID(line []byte) json.RawMessage {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 || (req.ID[0] != '"' && (req.ID[0] < '0' || req.ID[0] > '9') && req.ID[0] != '-') {
		return nil // no id, or one that is no string or number
	}
	return req.ID
}

// answerBadLine answers a line that is no message (id nil: null).
func answerBadLine(out io.Writer, id json.RawMessage, code int64, message string) {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
	out.Write(append(data, '\n'))
}
