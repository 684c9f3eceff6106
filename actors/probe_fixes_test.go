package actors

import (
	"strings"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// Regression tests of defects a user probe found.

// A fill that a date, time, colour or range input refuses leaves the
// field exactly as it was: its value, no events, and (for a field never
// set) still following its value attribute.
func TestFillRefusedLeavesFieldAsItWas(t *testing.T) {
	tab, _, _ := tabAt(t, "/fields.html")
	for _, tc := range []struct{ id, good, bad string }{
		{"date", "2024-01-01", "2024-13-01"},
		{"time", "13:45", "25:00"},
		{"color", "#00ff00", "red"},
		{"range", "4", "3"},
	} {
		cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#" + tc.id, Text: tc.good})
		cmdEval(t, tab, "window.events = [], 1")
		res := cmdFails(t, tab, protocol.Action{Type: "fill", Selector: "#" + tc.id, Text: tc.bad}, protocol.CodeBadRequest)
		if !strings.Contains(res.Error, "is not a value for element #"+tc.id) {
			t.Fatalf("fill #%s %q: error %q", tc.id, tc.bad, res.Error)
		}
		if v := cmdValue(t, tab, tc.id); v != tc.good {
			t.Fatalf("after the refused fill #%s %q: value %q, want %q kept", tc.id, tc.bad, v, tc.good)
		}
		cmdExpect(t, tab, "window.events", "[]")
	}

	// A field never set follows its value attribute; a refused fill must
	// not make it stop (as assigning its value would).
	tab, _, _ = tabAt(t, "/fields.html")
	cmdFails(t, tab, protocol.Action{Type: "fill", Selector: "#time", Text: "25:00"}, protocol.CodeBadRequest)
	cmdExpect(t, tab, "time.setAttribute('value', '08:15'), time.value", `"08:15"`)
}

// eval's values follow DR-014's returnByValue JSON: numbers JSON cannot
// carry are null (JSON.stringify's), at the top level too, never
// strings; DOM nodes and windows are left out like undefined, as the
// README says; an Error is {} as JSON.stringify gives it.
func TestEvalValuesAreJSON(t *testing.T) {
	tab, _, _ := tabAt(t, "/")
	for _, tc := range []struct{ expr, want string }{
		{"NaN", "null"},
		{"Infinity", "null"},
		{"-Infinity", "null"},
		{"-0", "0"},
		{"'NaN'", `"NaN"`},
		{"[NaN, Infinity, -Infinity, -0, 1.5]", "[null,null,null,0,1.5]"},
		{"({a: NaN, b: 1})", `{"a":null,"b":1}`},
		{"[document.body, 1]", "[null,1]"},
		{"({el: document.body, n: 1})", `{"n":1}`},
		{"({w: window, n: 1})", `{"n":1}`},
		{"new Error('boom')", "{}"},
		{"({'\\v': 1})", `{"\u000b":1}`},
	} {
		if got := cmdEval(t, tab, tc.expr); got != tc.want {
			t.Errorf("eval %s = %s, want %s", tc.expr, got, tc.want)
		}
	}
}

// A hover on a covered element names the hover, not a click.
func TestHoverCoveredElementNamesTheHover(t *testing.T) {
	tab, _, _ := tabAt(t, "/covered.html")
	res := cmdFails(t, tab, protocol.Action{Type: "hover", Selector: "#under"}, protocol.CodeElementCovered)
	if !strings.Contains(res.Error, "div#overlay, which would receive the hover") || strings.Contains(res.Error, "click") {
		t.Fatalf("hover on a covered element: %q, want div#overlay named as receiving the hover", res.Error)
	}
}

// Text answers only an accepted prompt: with dismiss, or for another
// dialog, it is refused, and the dialog stays open for a proper answer.
func TestDialogTextOnlyForAcceptingAPrompt(t *testing.T) {
	tab, _, _ := cmdOpenDialog(t, protocol.Action{Type: "click", Selector: "#prompt"})
	res := cmdFails(t, tab, protocol.Action{Type: "dialog", Answer: "dismiss", Text: "x"}, protocol.CodeBadRequest)
	if !strings.Contains(res.Error, "text is only for accepting a prompt") {
		t.Fatalf("dialog dismiss with text: %q", res.Error)
	}
	cmdMutate(t, tab, protocol.Action{Type: "dialog", Answer: "dismiss"})
	cmdExpect(t, tab, "window.prompted", "null")

	tab, _, _ = cmdOpenDialog(t, protocol.Action{Type: "click", Selector: "#confirm"})
	res = cmdFails(t, tab, protocol.Action{Type: "dialog", Answer: "accept", Text: "x"}, protocol.CodeBadRequest)
	if !strings.Contains(res.Error, "text is only for accepting a prompt") || !strings.Contains(res.Error, "confirm") {
		t.Fatalf("dialog accept with text on a confirm: %q", res.Error)
	}
	cmdMutate(t, tab, protocol.Action{Type: "dialog", Answer: "accept"})
	cmdExpect(t, tab, "window.confirmed", "true")
}
