package cdpdriver

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The ways around the eval size check an outside probe found (issue 19
// §5) are each refused as too large, before the value crosses to the
// node where the page can tell and by the transport where it cannot (a
// script of statements), and the tab goes on. Small values of the same
// kinds come back exactly as they do without the check.
func TestEvalSizeCheckHasNoWayAround(t *testing.T) {
	ctx, p, _ := siteTestOpen(t, "/bench.html", 2*time.Minute)

	const limit = 1 << 20
	// 10 MB: over the result limit, and as a reply (20 MB with its
	// deep serialization) over the page's message bound, 3x the limit
	// + 1 MiB = 4 MiB, yet far under the pipe's own 128 MiB.
	const big = "'x'.repeat(10e6)"
	ways := map[string]string{
		"statements":         "let s = " + big + "; s",
		"a BigInt beside it": "({a: " + big + ", b: 1n})",
		"a Map":              "new Map([[1, " + big + "]])",
		"toJSON":             "({toJSON() { return 1 }, a: " + big + "})",
		"a thrown error":     "(() => { throw new Error(" + big + ") })()",
		"a rejected promise": "Promise.reject(" + big + ")",
		"a thrown string":    "(() => { throw " + big + " })()",
		"an error's stack":   "(() => { const e = new Error('small'); e.stack = " + big + "; return e })()",
		"a sparse array":     "new Array(1e9)",
		"an attribute":       "(() => { const d = document.createElement('div'); d.title = " + big + "; return d })()",
		"a Set in an array":  "[new Set([" + big + "])]",
		"a function's text":  "new Function('/*' + " + big + " + '*/')",
	}
	small := []string{
		"new Map([[1, 'a'], ['b', {c: 2}]])",
		"new Set([1, 'x'])",
		"12345678901234567890n",
		"({a: 10n, b: [1n]})",
		"({toJSON() { return 1 }, a: 'kept'})",
		"(() => { throw new Error('a normal message') })()",
		"(() => { throw 'a thrown string' })()",
		"(() => { throw {code: 7} })()",
		"Promise.reject(new TypeError('rejected'))",
		"Promise.reject('a reason')",
		"Promise.resolve(new Map([[1, 2]]))",
		"JSON.parse('{')",
		"document.body.tagName",
		"[1, 'two', null, undefined, {three: 3}]",
		// Small answers the walk once took for large: nested functions
		// and errors travel as their type, frames' windows not at all,
		// holes as null.
		"({f: new Function('/*' + 'x'.repeat(2e6) + '*/')})",
		"({e: Object.assign(new Error('e'), {stack: 'x'.repeat(2e6)})})",
		"new Array(150000).length && new Array(150000)",
		"var a = 1, b = 2; a + b",
		"undefinedName",
	}

	// As they come back with no limit, so no check.
	type answer struct{ value, err string }
	eval := func(expr string) answer {
		t.Helper()
		v, err := p.Eval(ctx, expr, 30*time.Second)
		return answer{string(v), fmt.Sprint(err)}
	}
	unchecked := map[string]answer{}
	for _, expr := range small {
		unchecked[expr] = eval(expr)
	}

	p.SetResultLimit(limit)
	for _, expr := range small {
		if got := eval(expr); got != unchecked[expr] {
			t.Errorf("%s: %q, %s with the check; %q, %s without", expr, got.value, got.err, unchecked[expr].value, unchecked[expr].err)
		}
	}
	// A value whose answer just fits a reply fits the message bound:
	// Chromium sends a string twice, 'é' as a six-byte escape each time.
	if v, err := p.Eval(ctx, "'é'.repeat(174000)", 30*time.Second); err != nil || len(v) != 6*174000+2 {
		t.Errorf("174,000 'é' under a limit of 1 MiB: %d bytes, %v; want them whole", len(v), err)
	}
	// An object repeated: one in the reply, written out each time in JSON
	// (2^14 copies of a kilobyte): refused, not built in the node.
	repeated := "(() => { let o = {s: 'x'.repeat(1000)}; for (let i = 0; i < 14; i++) o = [o, o]; return o })()"
	if v, err := p.Eval(ctx, repeated, 30*time.Second); !errors.As(err, new(*ResultTooLargeError)) {
		t.Errorf("an object repeated 16,384 times: %d bytes, %v; want a *ResultTooLargeError", len(v), err)
	}
	for name, expr := range ways {
		v, err := p.Eval(ctx, expr, 30*time.Second)
		var tooLarge *ResultTooLargeError
		if !errors.As(err, &tooLarge) {
			t.Errorf("%s: %d bytes, %v; want a *ResultTooLargeError", name, len(v), err)
			continue
		}
		t.Logf("%s: %v", name, err)
		thrown := strings.Contains(name, "thrown") || strings.Contains(name, "rejected")
		if strings.HasPrefix(tooLarge.What, "the exception") != thrown || tooLarge.FromBrowser != (name == "statements") {
			t.Errorf("%s: %+v; want it to say what was too large (the value, the exception) and where it was found (the page, the reply)", name, tooLarge)
		}
		if v, err := p.Eval(ctx, "6 * 7", 10*time.Second); err != nil || string(v) != "42" {
			t.Fatalf("the tab after %s: %s, %v", name, v, err)
		}
	}
}
