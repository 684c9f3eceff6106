package actors

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/protocol"
)

// Frame content larger than the bus carries in one message is never
// dropped or cut: the frame goes out with a reference (FullPageRef). The
// live frame's content stays in the tab's content store, which answers
// chunk requests on <prefix>.tab.<tab>.content from the subscription's
// own goroutine, so a busy tab actor never delays them; with history the
// stored frame's content goes to the history's object store (history.go),
// so the live frame never waits for the object store either.

// contentKept is how many large contents a tab keeps for fetching, and
// contentKeptBytes how many bytes of them at most (the latest is kept
// whatever its size; frames.maxContent bounds it).
const (
	contentKept      = 8
	contentKeptBytes = 64 << 20
)

// chunkOverhead leaves room in a message for the reply's JSON around a
// chunk's data (and its escaping, which can double it: chunks are sized
// for the worst case).
const chunkOverhead = 512

type contentStore struct {
	// latest is the sequence of the last frame the tab published,
	// answered to a Latest request.
	latest atomic.Int64
	mu     sync.Mutex
	items  map[int64][]string // sequence -> chunks
	order  []int64
}

func newContentStore() *contentStore { return &contentStore{items: map[int64][]string{}} }

// keep stores content in chunks that each fit a message of max bytes once
// JSON-escaped, and returns how many.
func (c *contentStore) keep(seq int64, content string, max int64) int {
	size := int(max-chunkOverhead) / 6 // \\u00XX is the longest escape of a byte
	if size < 1024 {
		size = 1024
	}
	var chunks []string
	for len(content) > 0 {
		n := min(size, len(content))
		for n < len(content) && !utf8.RuneStart(content[n]) {
			n-- // never split a character
		}
		chunks = append(chunks, content[:n])
		content = content[n:]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[seq]; !ok {
		c.order = append(c.order, seq)
	}
	c.items[seq] = chunks
	for len(c.order) > 1 && (len(c.order) > contentKept || c.bytes() > contentKeptBytes) {
		delete(c.items, c.order[0])
		c.order = c.order[1:]
	}
	return len(chunks)
}

// bytes is the size of the contents kept; c.mu held.
func (c *contentStore) bytes() int {
	n := 0
	for _, chunks := range c.items {
		for _, s := range chunks {
			n += len(s)
		}
	}
	return n
}

// serve answers one ContentRequest.
func (c *contentStore) serve(m micro.Request) {
	var req protocol.ContentRequest
	var reply protocol.ContentReply
	if err := protocol.DecodeRequest(m.Data(), "content request", &req); err != nil {
		reply.Code, reply.Error = protocol.CodeBadRequest, err.Error()
	} else {
		reply = c.answer(req)
	}
	data, _ := protocol.Marshal(reply)
	_ = m.Respond(data)
}

func (c *contentStore) answer(req protocol.ContentRequest) protocol.ContentReply {
	if req.Latest {
		return protocol.ContentReply{OK: true, Sequence: c.latest.Load()}
	}
	reply := protocol.ContentReply{Sequence: req.Sequence, Chunk: req.Chunk}
	c.mu.Lock()
	chunks, ok := c.items[req.Sequence]
	c.mu.Unlock()
	switch {
	case !ok:
		reply.Code, reply.Error = protocol.CodeBadRequest, fmt.Sprintf("the content of frame %d is not kept (only the last %d large contents are)", req.Sequence, contentKept)
	case req.Chunk < 0 || req.Chunk >= len(chunks):
		reply.Code, reply.Error = protocol.CodeBadRequest, fmt.Sprintf("chunk %d: frame %d's content has chunks 0 to %d", req.Chunk, req.Sequence, len(chunks)-1)
	default:
		reply.OK, reply.Chunks, reply.Data = true, len(chunks), chunks[req.Chunk]
	}
	return reply
}

// FetchContent reads the content a frame carries by reference
// (Frame.FullPageRef) over nc: from the history's object store, or in
// chunks from its tab. A frame with its content inline, or none, returns
// FullPage as it is.
func FetchContent(nc *nats.Conn, f protocol.Frame, timeout time.Duration) (*string, error) {
	ref := f.FullPageRef
	if ref == nil {
		return f.FullPage, nil
	}
	if ref.Bucket != "" {
		return fetchObject(nc, ref, timeout)
	}
	buf := make([]byte, 0, ref.Bytes)
	for i := 0; i < ref.Chunks; i++ {
		req, _ := json.Marshal(protocol.ContentRequest{Sequence: ref.Sequence, Chunk: i})
		msg, err := nc.Request(ref.Subject, req, timeout)
		if err != nil {
			return nil, protocol.Errorf(protocol.CodeUnavailable, "fetch chunk %d of frame %d: %v", i, ref.Sequence, err)
		}
		var r protocol.ContentReply
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			return nil, protocol.Errorf(protocol.CodeInternal, "chunk %d of frame %d: invalid JSON: %v", i, ref.Sequence, err)
		}
		if !r.OK {
			return nil, protocol.Errorf(r.Code, "%s", r.Error)
		}
		buf = append(buf, r.Data...)
	}
	if len(buf) != ref.Bytes {
		return nil, protocol.Errorf(protocol.CodeInternal, "frame %d's content: got %d bytes, want %d", ref.Sequence, len(buf), ref.Bytes)
	}
	s := string(buf)
	return &s, nil
}
