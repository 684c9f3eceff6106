package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// Acceptance 8: eval returns DR-014's table exactly, and its error forms.
func TestEvalTable(t *testing.T) {
	tab := openTab(t)
	send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/")}))
	cases := []struct {
		expr  string
		value string // "" means the value field is absent
	}{
		{"1 + 1", "2"},
		{"document.title", `"framebus example shop"`},
		{"[1, 2, 3]", "[1,2,3]"},
		{"({a: 1, b: 2})", `{"a":1,"b":2}`},
		{"{a: 1, b: 2}", `{"a":1,"b":2}`}, // DR-014's row: braces read as the console reads them
		{" {} ", "{}"},
		{"{a: {b: 'c'}, n: 1 // the last\n}", `{"a":{"b":"c"},"n":1}`},
		{"{ let x = 1; x + 1 }", "2"}, // a block stays a block
		{"{ 5 }", "5"},
		{"null", "null"},
		{"undefined", ""},
		{"Promise.resolve(42)", "42"},
		{"document.querySelector('h1')", ""},
		{"[1, 2, 3].map(x => x * 2)", "[2,4,6]"},
		{"new Promise(r => setTimeout(() => r('done'), 100))", `"done"`},
		{"(function() { const x = 1; const y = 2; return x + y; })()", "3"},
		{"fetch('/search.html').then(r => r.status)", "200"},
		{"'quote\" and \\\\ backslash'", `"quote\" and \\ backslash"`},
		{"[NaN, -Infinity, 10n, -0]", `[null,null,"10",0]`},
		{"(() => { const x = {k: 1}; return [x, x]; })()", `[{"k":1},{"k":1}]`},
		{"({f() {}, u: undefined, a: [undefined, () => 1], n: document.body})", `{"a":[null,null]}`},
		{"new Map([['a', 1]])", `{"a":1}`},
		{"window", ""},
		// The size check wraps an expression; what it cannot wrap runs as
		// it is, and what it wraps means what it meant.
		{"document.title;", `"framebus example shop"`},
		{"1 + 1 // two", "2"},
		{"let q18 = 20; q18 + 1", "21"},
		{"q18", "20"}, // a script's let outlives it, as in the console
		{"function seven() { return 7 }", ""},
		{"seven()", "7"},
		{"async function eight() { return 8 }", ""},
		{"eight()", "8"},
		{"class Point18 {}", ""},
		{"typeof Point18", `"function"`},
		{"this === window", "true"},
		{"'x'.repeat(1000).length", "1000"},
	}
	for _, tc := range cases {
		res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: tc.expr}))
		if !res.OK {
			t.Errorf("%s: %s", tc.expr, res.Error)
			continue
		}
		if got := string(res.Results[0].Value); got != tc.value {
			t.Errorf("%s = %q, want %q", tc.expr, got, tc.value)
		}
	}
	errs := []struct {
		expr    string
		timeout time.Duration
		code    protocol.Code
		message string
	}{
		{"1 +)", 0, protocol.CodeJSError, "SyntaxError: Unexpected token ')'"},
		{"undefinedVar", 0, protocol.CodeJSError, "ReferenceError: undefinedVar is not defined"},
		{"(() => { const o = {}; o.o = o; return o; })()", 0, protocol.CodeJSError, "failed to serialize result"},
		{"(() => { const o = {}; let c = o; for (let i = 0; i < 1000; i++) c = c.a = {}; return o; })()", 0, protocol.CodeJSError, "failed to serialize result: nested too deeply"},
		{"Promise.reject({a: 1, b: [1, 2], s: 'x'})", 0, protocol.CodeJSError, `Uncaught {a: 1, b: Array(2), s: "x"}`},
		{"Promise.reject([1, 'x'])", 0, protocol.CodeJSError, `Uncaught [1, "x"]`},
		{"(() => { throw new Map([[1, 'one']]) })()", 0, protocol.CodeJSError, `Uncaught Map(1) {1 => "one"}`},
		{"Promise.reject(new TypeError('no'))", 0, protocol.CodeJSError, "TypeError: no"},
		{"new Promise(() => {})", 300 * time.Millisecond, protocol.CodeTimeout, "evaluation timed out after 300ms"},
		{"while (true) {}", 300 * time.Millisecond, protocol.CodeTimeout, "evaluation timed out after 300ms"},
	}
	for _, tc := range errs {
		res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: tc.expr, Timeout: protocol.Duration(tc.timeout)}))
		if res.OK || res.Code != tc.code || res.Error != tc.message && !strings.HasPrefix(res.Error, tc.message) {
			t.Errorf("%s: got code %q error %q, want %q %q", tc.expr, res.Code, res.Error, tc.code, tc.message)
		}
		// The tab stays usable after every error, timeouts included.
		if ok := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "'alive'"})); !ok.OK {
			t.Fatalf("after %s the tab is broken: %+v", tc.expr, ok)
		}
	}
}

// An awaited promise whose document is replaced (the page navigates away
// while it waits) fails as a js_error that says so, not as an internal
// error; the navigation is the eval's frame, and the tab goes on.
func TestEvalOutlivedByItsDocument(t *testing.T) {
	tab, frames, _ := tabAt(t, "/read.html")
	res := send(t, tab.ID(), one(protocol.Action{Type: "eval",
		Expression: "setTimeout(() => location.href = '/product.html?id=2', 50); new Promise(r => setTimeout(() => r(1), 10000))"}))
	if res.OK || res.Code != protocol.CodeJSError || res.Error != "the page navigated away before the evaluation finished" {
		t.Fatalf("got %+v", res)
	}
	if f := frames.next(); f.Action != "eval" || f.URL != site("/product.html?id=2") {
		t.Fatalf("frame %+v, want the eval's, at the page it navigated to", f)
	}
	cmdExpect(t, tab, "document.title", `"Product 2"`)
}

// An eval that fails after its script ran may have changed the page, so
// it still makes its frame (the plan stops there all the same); one that
// never ran (a syntax error) makes none.
func TestFailedEvalFrames(t *testing.T) {
	tab, frames, _ := tabAt(t, "/read.html")
	ran := []struct {
		expr    string
		timeout time.Duration
		code    protocol.Code
	}{
		{"document.body.dataset.touched = 'yes'; throw new Error('boom')", 0, protocol.CodeJSError},
		{"JSON.parse('{')", 0, protocol.CodeJSError}, // a SyntaxError thrown by running code
		{"throw 'plain'", 0, protocol.CodeJSError},
		{"(() => { const o = {}; o.o = o; return o; })()", 0, protocol.CodeJSError},
		{"while (true) {}", 300 * time.Millisecond, protocol.CodeTimeout},
	}
	for _, tc := range ran {
		before := tab.Info().Sequence
		res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: tc.expr, Timeout: protocol.Duration(tc.timeout), BasedOnSequence: protocol.Based(before)}))
		if res.OK || res.Code != tc.code || res.Sequence != before+1 || res.Results[0].Sequence != before+1 {
			t.Fatalf("%s: want %s with a frame (%d), got %+v", tc.expr, tc.code, before+1, res)
		}
		if f := frames.next(); f.Sequence != before+1 || f.Action != "eval" {
			t.Fatalf("%s: frame %+v", tc.expr, f)
		}
	}
	cmdExpect(t, tab, "document.body.dataset.touched", `"yes"`)
	frames.next()
	for _, expr := range []string{"{a: 1,, }", "let = ;", "1 +"} {
		res := cmdFails(t, tab, protocol.Action{Type: "eval", Expression: expr}, protocol.CodeJSError)
		if !strings.HasPrefix(res.Error, "SyntaxError") {
			t.Fatalf("%s: %+v", expr, res)
		}
	}
}

// Values that each fit a reply but together do not are left out of it,
// and the reply says too_large at once (the bus would drop the whole
// reply and leave the agent waiting); the evals ran, so their frames are
// there.
func TestEvalValuesTooLargeForTheBus(t *testing.T) {
	tab := openTab(t)
	before := tab.Info().Sequence
	half := protocol.Action{Type: "eval", Expression: "'x'.repeat(9 << 20)"}
	res := send(t, tab.ID(), protocol.Plan{Actions: []protocol.Action{half, half}})
	if res.OK || res.Code != protocol.CodeTooLarge || res.Sequence != before+2 || len(res.Results) != 2 {
		t.Fatalf("two evals of 9 MB: ok %v code %q error %q sequence %d (before %d)", res.OK, res.Code, res.Error, res.Sequence, before)
	}
	for i, r := range res.Results {
		if r.Code != protocol.CodeTooLarge || r.Value != nil {
			t.Errorf("result %d: code %q, %d bytes of value", i, r.Code, len(r.Value))
		}
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "6 * 7"})); !r.OK {
		t.Fatalf("the tab after: %+v", r)
	}
}
