package cdpdriver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/rpcc"
	"github.com/rs/zerolog"
)

// The reader finds each message whole, however the stream is cut, with
// quotes, backslashes and braces inside strings; the envelope is cut where
// Chromium writes it and decoded in full otherwise; rpcc gets what
// json.Unmarshal would give it.
func TestMessageReaderAndSplit(t *testing.T) {
	messages := []string{
		`{"id":1,"result":{}}`,
		`{"id":12,"result":{"result":{"type":"string","value":"a \"quoted\" } { ] [ string \\"}}}`,
		`{"id":13,"result":{"result":{"type":"string","value":"ends in a backslash \\\\"}}}`,
		`{"method":"Page.loadEventFired","params":{"timestamp":12.5}}`,
		`{"id":14,"error":{"code":-32000,"message":"No node with given id found"}}`,
		`{"error":{"code":-32600,"message":"Message must have integer 'id' property"}}`,
		`{"method":"Target.attachedToTarget","params":{"targetInfo":{"title":"{[\"x"}},"sessionId":"S1"}`,
		`{"id":15,"result":{"nested":[{"a":[1,2,{"b":"}"}]}]}}`,
	}
	stream := strings.Join(messages, "") + "\n " + messages[0]
	for name, r := range map[string]io.Reader{
		"whole":       strings.NewReader(stream),
		"byte a time": iotest.OneByteReader(strings.NewReader(stream)),
		"half":        iotest.HalfReader(strings.NewReader(stream)),
	} {
		m := newMessageReader(r)
		m.buf = make([]byte, 16) // grows as messages need
		for i, want := range append(messages, messages[0]) {
			got, err := m.next()
			if err != nil {
				t.Fatalf("%s: message %d: %v", name, i, err)
			}
			if string(got) != want {
				t.Fatalf("%s: message %d:\n got %s\nwant %s", name, i, got, want)
			}
			var fast, full rpcc.Response
			if err := splitMessage(got, &fast); err != nil {
				t.Fatalf("%s: split %s: %v", name, got, err)
			}
			if err := json.Unmarshal(got, &full); err != nil {
				t.Fatal(err)
			}
			if fast.ID != full.ID || fast.Method != full.Method || string(fast.Result) != string(full.Result) ||
				string(fast.Args) != string(full.Args) || (fast.Error == nil) != (full.Error == nil) ||
				fast.Error != nil && *fast.Error != *full.Error {
				t.Fatalf("%s: split %s:\n got %+v\nwant %+v", name, got, fast, full)
			}
		}
		if _, err := m.next(); err != io.EOF {
			t.Fatalf("%s: after the last message: %v, want EOF", name, err)
		}
	}

	for _, bad := range []string{`{"id":1,"result":{"value":"cut`, `{"id":1`} {
		if _, err := newMessageReader(strings.NewReader(bad)).next(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut message %s: %v, want unexpected EOF", bad, err)
		}
	}
	if _, err := newMessageReader(strings.NewReader(`[1]`)).next(); err == nil || !strings.Contains(err.Error(), "not an object") {
		t.Fatalf("an array: %v", err)
	}
	if err := splitMessage([]byte(`{"id":1,"result":{},"x":{}`), new(rpcc.Response)); err == nil {
		t.Fatal("bad JSON split without an error")
	}
}

// syncBuffer is a log sink the connection's reader goroutine writes to
// while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Posted commands run in order before the next awaited one, and their
// failures reach whoever posted them; a command the browser cannot read
// (an id over 32 bits, as posted commands once had) is logged, not lost.
func TestPostedCommands(t *testing.T) {
	b := snapshotTestBrowser(t)
	ctx := snapshotTestCtx(t, 30*time.Second)
	id, err := b.NewTarget(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.CloseTarget(context.Background(), id) })
	var log syncBuffer
	p, err := OpenPage(ctx, b.PageWebSocketURL(id), id, zerolog.New(&log))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	var ids []uint64
	for i := range 3 {
		pid, err := p.codec.post("Runtime.evaluate", runtime.NewEvaluateArgs("window.posted = (window.posted || '') + "+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, pid)
	}
	bad, err := p.codec.post("Input.dispatchMouseEvent", map[string]any{"type": "bogus", "x": 1, "y": 1})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := p.evalValue(ctx, "posted", "window.posted", &got); err != nil {
		t.Fatal(err)
	}
	if got != "012" {
		t.Fatalf("posted commands ran as %q, want 012", got)
	}
	for _, pid := range ids {
		if err := p.codec.postedError(pid); err != nil {
			t.Fatalf("posted evaluate: %v", err)
		}
	}
	if err := p.codec.postedError(bad); err == nil {
		t.Fatal("a posted command the browser refused reported no error")
	}
	p.codec.watchMu.Lock()
	left := len(p.codec.watched)
	p.codec.watchMu.Unlock()
	if left != 0 {
		t.Fatalf("%d posted commands still watched", left)
	}

	p.codec.wmu.Lock()
	err = p.codec.enc.Encode(&rpcc.Request{ID: 1 << 40, Method: "Runtime.evaluate", Args: runtime.NewEvaluateArgs("1")})
	p.codec.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.evalValue(ctx, "barrier", "1", new(int)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "could not read") {
		t.Fatalf("a command the browser could not read was not logged: %q", log.String())
	}
}
