package cdpdriver

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mafredri/cdp/rpcc"
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
