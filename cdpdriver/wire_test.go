package cdpdriver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

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

// Posted commands run in order before the next awaited one, and their
// failures reach whoever posted them.
func TestPostedCommands(t *testing.T) {
	b := snapshotTestBrowser(t)
	ctx := snapshotTestCtx(t, 30*time.Second)
	id, err := b.NewTarget(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.CloseTarget(context.Background(), id) })
	p, err := b.ConnectPage(ctx, id, zerolog.Nop())
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

}

// A command with an id Chromium cannot read (over 32 bits, as posted
// commands once had) is answered with an error
// that names no command; it is logged, not lost: by the page's codec over
// a websocket, by the pipe's transport over a pipe, where the answer
// names no session either.
func TestUnreadableCommandIsLogged(t *testing.T) {
	launchTestNeedChromium(t)
	t.Parallel()
	ctx := snapshotTestCtx(t, 30*time.Second)
	dir := t.TempDir()
	logs := map[string]*os.File{}
	for _, name := range []string{"process", "pipe page", "websocket page"} {
		f, err := os.CreateTemp(dir, "log") // a file takes the reader goroutine's writes and the test's read safely
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		logs[name] = f
	}
	proc, err := Launch(ctx, LaunchOptions{Headless: true, DebuggingPort: true, Logger: zerolog.New(logs["process"])})
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	overPipe, err := proc.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer overPipe.Close()
	overWS, err := ConnectBrowser(ctx, proc.BrowserWebSocketURL(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer overWS.Close()
	for name, c := range map[string]struct {
		b   *Browser
		log string
	}{"pipe": {overPipe, "process"}, "websocket": {overWS, "websocket page"}} {
		id, err := c.b.NewTarget(ctx, "about:blank")
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.b.ConnectPage(ctx, id, zerolog.New(logs[name+" page"]))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		p.codec.wmu.Lock()
		err = p.codec.write(&rpcc.Request{ID: 1 << 40, Method: "Runtime.evaluate", Args: runtime.NewEvaluateArgs("1")})
		p.codec.wmu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.evalValue(ctx, "barrier", "1", new(int)); err != nil {
			t.Fatal(err)
		}
		logged, err := os.ReadFile(logs[c.log].Name())
		if err != nil || !strings.Contains(string(logged), "could not read") {
			t.Fatalf("%s: a command the browser could not read was not logged: %q %v", name, logged, err)
		}
	}
}

// A call's reply gives the value Chromium returned by value, cut where it
// stands when the reply has the usual shape and decoded in full
// otherwise; the snapshot's answer is taken as it stands only when
// nothing in it needs unescaping.
func TestCallReplyAndSnapshotReply(t *testing.T) {
	for _, tc := range []struct{ reply, value string }{
		{`{"result":{"type":"object","value":{"wire":"a|b~c","x":"}{\"]"}}}`, `{"wire":"a|b~c","x":"}{\"]"}`},
		{`{"result":{"type":"object","value":[1,{"a":"\\"}]}}`, `[1,{"a":"\\"}]`},
		{`{"result":{"type":"number","value":3}}`, `3`},
		{`{"result":{"type":"string","value":"}}"}}`, `"}}"`},
		{`{"result":{"type":"object","value":{"a":1},"description":"Object"}}`, `{"a":1}`},
		{`{"result":{"type":"undefined"}}`, ``},
	} {
		var r callReply
		if err := json.Unmarshal([]byte(tc.reply), &r); err != nil {
			t.Fatalf("%s: %v", tc.reply, err)
		}
		if string(r.Value) != tc.value || r.ExceptionDetails != nil {
			t.Fatalf("%s: value %s, exception %v; want %s", tc.reply, r.Value, r.ExceptionDetails, tc.value)
		}
	}
	var thrown callReply
	if err := json.Unmarshal([]byte(`{"result":{"type":"object","value":{"a":1}},"exceptionDetails":{"exceptionId":1,"text":"Uncaught","lineNumber":0,"columnNumber":0}}`), &thrown); err != nil {
		t.Fatal(err)
	}
	if thrown.ExceptionDetails == nil || thrown.ExceptionDetails.Text != "Uncaught" || string(thrown.Value) != `{"a":1}` {
		t.Fatalf("a thrown value: %+v", thrown)
	}

	for _, tc := range []struct{ answer, wire, err string }{
		{`{"wire":"{\"title\":\"T\"}\n0|button|nGo"}`, "{\"title\":\"T\"}\n0|button|nGo", ""},
		{`{"wire":"0|button|nCaf\u00e9"}`, "0|button|nCafé", ""},
		{`{"wire":"0|button|nCafé"}`, "0|button|nCafé", ""},
		{`{"error":"staleref"}`, "", "staleref"},
		{`{"wire":"x","error":""}`, "x", ""},
	} {
		var r snapshotReply
		if err := r.UnmarshalJSON([]byte(tc.answer)); err != nil {
			t.Fatalf("%s: %v", tc.answer, err)
		}
		if r.Wire != tc.wire || r.Error != tc.err {
			t.Fatalf("%s: wire %q error %q, want %q %q", tc.answer, r.Wire, r.Error, tc.wire, tc.err)
		}
	}
}

// unquoteJSON decodes a JSON string's inside exactly as encoding/json
// does, or declines.
func FuzzUnquoteJSON(f *testing.F) {
	for _, s := range []string{``, `plain`, `a\"b\\c\/d`, `\n\t\r\b\f`, `caf\u00e9 \u2028`, `\ud83d\ude00`, `\ud83d x`, `\ud83d\u0041`,
		`\udc00`, `\u00`, `\x`, `trailing\`, `"`, "caf\xc3\xa9", "bad \xff utf-8", `\u0000`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, inside string) {
		got, ok := unquoteJSON([]byte(inside))
		var want string
		err := json.Unmarshal([]byte(`"`+inside+`"`), &want)
		if ok && (err != nil || got != want) {
			t.Fatalf("unquoteJSON(%q) = %q, encoding/json: %q, %v", inside, got, want, err)
		}
		if !ok && err == nil && utf8.ValidString(inside) && !strings.ContainsAny(inside, "\"") {
			// Declining is allowed only for what it cannot do quickly.
			t.Logf("declined %q", inside)
		}
	})
}
