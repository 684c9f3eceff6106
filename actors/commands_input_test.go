package actors

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/protocol"
)

// Acceptance tests of the actions that act on the page: click, hover,
// drag, type, fill, focus, key, select, scroll, upload (DR-013). The
// helpers (cmdMutate, cmdEval, ...) are in commands_read_test.go.

// click sends real mouse events: a move first (mouseover, mouseenter,
// mousemove; a press alone would give the first two),
// then press and release; double clicks twice (dblclick), right fires
// contextmenu and no click.
func TestClickMouseEvents(t *testing.T) {
	cases := []struct {
		name   string
		action protocol.Action
		counts map[string]int
	}{
		{"click", protocol.Action{}, map[string]int{"mouseover": 1, "mouseenter": 1, "mousedown": 1, "mouseup": 1, "click": 1, "dblclick": 0, "contextmenu": 0}},
		{"double", protocol.Action{Double: true}, map[string]int{"mouseover": 1, "mouseenter": 1, "mousedown": 2, "mouseup": 2, "click": 2, "dblclick": 1, "contextmenu": 0}},
		{"right", protocol.Action{Right: true}, map[string]int{"mouseover": 1, "mouseenter": 1, "mousedown": 1, "mouseup": 1, "click": 0, "dblclick": 0, "contextmenu": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab, _, _ := tabAt(t, "/click.html")
			a := tc.action
			a.Type, a.Selector = "click", "#btn"
			cmdMutate(t, tab, a)
			var log []string
			cmdEvalInto(t, tab, "window.log", &log)
			got := map[string]int{}
			for _, e := range log {
				got[e]++
			}
			for ev, n := range tc.counts {
				if got[ev] != n {
					t.Fatalf("%s: %d %s events, want %d; events in order: %v", tc.name, got[ev], ev, n, log)
				}
			}
			// A real mouse arrives (over, enter, move) before it presses.
			if len(log) < 4 || log[0] != "mouseover" || log[1] != "mouseenter" || log[2] != "mousemove" || log[3] != "mousedown" {
				t.Fatalf("%s: the mouse did not move onto the element before pressing: %v", tc.name, log)
			}
		})
	}
}

// click scrolls an element far down the page into view first.
func TestClickScrollsIntoView(t *testing.T) {
	tab, _, _ := tabAt(t, "/click.html")
	cmdExpect(t, tab, "scrollY", "0")
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#far"})
	cmdExpect(t, tab, "[window.farClicked === true, scrollY > 0]", "[true,true]")
}

// A click on an element another element covers is refused with
// element_covered, naming the covering element, and does not reach the
// element; once uncovered it is clicked.
func TestClickCoveredElement(t *testing.T) {
	tab, _, _ := tabAt(t, "/covered.html")
	res := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: "#under"}))
	if res.OK || res.Code != protocol.CodeElementCovered || !strings.Contains(res.Error, "overlay") {
		t.Fatalf("click on a covered button: want element_covered naming div#overlay, got %+v", res)
	}
	cmdExpect(t, tab, "typeof window.underClicked", `"undefined"`)
	cmdEval(t, tab, "document.getElementById('overlay').remove(), 1")
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#under"})
	cmdExpect(t, tab, "window.underClicked", "true")
}

// A click reaches what a user can: an element under a sticky header is
// scrolled clear of it, a checkbox drawn by its label is clicked through
// the label; a disabled button, and an element placed off the page, are
// refused, not clicked for nothing.
func TestClickReachesWhatAUserCan(t *testing.T) {
	tab, _, _ := tabAt(t, "/reach.html")
	// b30 just below the header's bottom edge: in view, but covered.
	cmdEval(t, tab, "scrollTo(0, document.getElementById('b30').offsetTop - 60), 1")
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#b30"})
	cmdExpect(t, tab, "window.clickedRow", "30")

	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#remember"})
	cmdExpect(t, tab, "document.getElementById('remember').checked", "true")

	// A disabled button: a click would do nothing, so it is refused; a
	// hover is not.
	if res := cmdFails(t, tab, protocol.Action{Type: "click", Selector: "#disabled-button"}, protocol.CodeBadRequest); res.Error != "element #disabled-button is disabled: a click on it does nothing" {
		t.Fatalf("click on a disabled button: %q", res.Error)
	}
	cmdMutate(t, tab, protocol.Action{Type: "hover", Selector: "#disabled-button"})

	cmdEval(t, tab, "window.clicks = [], 1")
	res := cmdFails(t, tab, protocol.Action{Type: "click", Selector: "#offscreen"}, protocol.CodeNotVisible)
	if !strings.Contains(res.Error, "element not visible: #offscreen lies off the page beyond its left edge") {
		t.Fatalf("click on an element off the page: %q", res.Error)
	}
	cmdFails(t, tab, protocol.Action{Type: "hover", Selector: "#offscreen"}, protocol.CodeNotVisible)
	cmdExpect(t, tab, "[window.offClicked === undefined, clicks.length]", "[true,0]")
	res = cmdFails(t, tab, protocol.Action{Type: "screenshot", Selector: "#offscreen"}, protocol.CodeNotVisible)
	if !strings.Contains(res.Error, "off the page") {
		t.Fatalf("screenshot of an element off the page: %q", res.Error)
	}
}

// A click that runs out of time after its events went (a handler busy
// for longer) fails with timeout, but it did reach the page: it makes its
// frame, so a plan based on the frame before it no longer runs.
func TestClickTimesOutAfterItsEvents(t *testing.T) {
	tab, _, seq := tabAt(t, "/click.html")
	res := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: "#busy", Timeout: protocol.Duration(300 * time.Millisecond)}))
	if res.OK || res.Code != protocol.CodeTimeout || res.Sequence != seq+1 || res.Results[0].Sequence != seq+1 {
		t.Fatalf("click on a handler busy for 1.5s, with 300ms: want timeout and frame %d, got %+v", seq+1, res)
	}
	stale := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: "#btn", BasedOnSequence: protocol.Based(seq)}))
	if stale.Code != protocol.CodeStaleFrame {
		t.Fatalf("a plan based on the frame before the timed-out click: %+v", stale)
	}
	cmdExpect(t, tab, "document.title", `"Busy done"`)
}

// Elements that are missing (element_not_found), display:none or of zero
// size (not_visible) cannot be clicked: no frame, and no handler runs.
func TestClickElementNotClickable(t *testing.T) {
	tab, _, _ := tabAt(t, "/click.html")
	cases := []struct {
		selector, exact string
		code            protocol.Code
	}{
		{"#missing", "element not found: #missing", protocol.CodeElementNotFound},
		{".missing-button", "element not found: .missing-button", protocol.CodeElementNotFound},
		{"#hidden-btn", "element not visible: #hidden-btn", protocol.CodeNotVisible},
		{"#zero", "element not visible: #zero", protocol.CodeNotVisible},
	}
	for _, tc := range cases {
		res := cmdFails(t, tab, protocol.Action{Type: "click", Selector: tc.selector}, tc.code)
		if tc.exact != "" && res.Error != tc.exact {
			t.Fatalf("click %s: error %q, want %q", tc.selector, res.Error, tc.exact)
		}
	}
	cmdExpect(t, tab, "[typeof window.hiddenClicked, typeof window.zeroClicked]", `["undefined","undefined"]`)
}

// Every action that takes a selector answers element_not_found with
// DR-013's message when nothing matches, and produces no frame.
func TestElementNotFoundEveryAction(t *testing.T) {
	dir := testdir.Enterable(t)
	tab, _, _ := tabAt(t, "/form.html", fileRoots(t, dir))
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, a := range []protocol.Action{
		{Type: "click", Selector: "#missing"},
		{Type: "click", Selector: "#missing", Double: true},
		{Type: "hover", Selector: "#missing"},
		{Type: "drag", From: "#missing", To: "#name"},
		{Type: "type", Selector: "#missing", Text: "x"},
		{Type: "fill", Selector: "#missing", Text: "x"},
		{Type: "focus", Selector: "#missing"},
		{Type: "select", Selector: "#missing", Value: "a"},
		{Type: "scroll", Selector: "#missing"},
		{Type: "upload", Selector: "#missing", Files: []string{file}},
		{Type: "text", Selector: "#missing"},
		{Type: "html", Selector: "#missing"},
		{Type: "screenshot", Selector: "#missing"},
	} {
		res := cmdFails(t, tab, a, protocol.CodeElementNotFound)
		if res.Error != "element not found: #missing" {
			t.Errorf("%s %+v: error %q, want %q", a.Type, a, res.Error, "element not found: #missing")
		}
	}
}

// Selectors with quotes, backslashes and newlines reach the page as
// written.
func TestClickEscapedSelectors(t *testing.T) {
	tab, _, _ := tabAt(t, "/click.html")
	cases := []struct{ selector, hit string }{
		{`[data-x="a\"b"]`, "quoted"},
		{`[data-x='a"b']`, "quoted"},
		{`button[data-y="a\\b"]`, "backslash"},
		{"div.wrap\n#nl", "newline"},
		{"div.wrap >\n\tbutton#nl", "newline"},
	}
	for _, tc := range cases {
		cmdEval(t, tab, "window.hit = null, 1")
		cmdMutate(t, tab, protocol.Action{Type: "click", Selector: tc.selector})
		if got := cmdEval(t, tab, "window.hit"); got != `"`+tc.hit+`"` {
			t.Fatalf("click %q hit %s, want %q", tc.selector, got, tc.hit)
		}
	}
}

// A selector is never script: selectors written to break out of a script
// string fail as invalid (bad_request) or unmatched (element_not_found;
// timeout for wait-for), for every action that takes one, and nothing
// they contain runs.
func TestSelectorsCannotInjectScript(t *testing.T) {
	dir := testdir.Enterable(t)
	tab, _, _ := tabAt(t, "/form.html", fileRoots(t, dir))
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	selectors := []string{
		`"); window.pwned=1; ("`,
		`'); window.pwned=1; ('`,
		"`); window.pwned=1; (`",
		"${window.pwned=1}",
		`\"); window.pwned=1; //`,
		"</script><script>window.pwned=1</script>",
		"#q\"]'); window.pwned=1; //",
		"#q') || (window.pwned=1) || ('",
	}
	for _, sel := range selectors {
		for _, a := range []protocol.Action{
			{Type: "click", Selector: sel},
			{Type: "hover", Selector: sel},
			{Type: "drag", From: sel, To: "#name"},
			{Type: "drag", From: "#name", To: sel},
			{Type: "type", Selector: sel, Text: "x"},
			{Type: "fill", Selector: sel, Text: "x"},
			{Type: "focus", Selector: sel},
			{Type: "select", Selector: sel, Value: "a"},
			{Type: "scroll", Selector: sel},
			{Type: "upload", Selector: sel, Files: []string{file}},
			{Type: "wait-for", Selector: sel, Timeout: protocol.Duration(300 * time.Millisecond)},
			{Type: "text", Selector: sel},
			{Type: "html", Selector: sel},
			{Type: "screenshot", Selector: sel},
		} {
			res := send(t, tab.ID(), one(a))
			ok := res.Code == protocol.CodeBadRequest || res.Code == protocol.CodeElementNotFound ||
				a.Type == "wait-for" && res.Code == protocol.CodeTimeout
			if res.OK || !ok {
				t.Errorf("%s with selector %q: want bad_request or element_not_found, got %+v", a.Type, sel, res)
			}
		}
	}
	cmdExpect(t, tab, "typeof window.pwned", `"undefined"`)
}

// hover moves the mouse onto the element: mouseenter fires and :hover
// applies (a CSS tooltip shows), without a click; hovering elsewhere
// leaves it.
func TestHover(t *testing.T) {
	tab, _, _ := tabAt(t, "/hover.html")
	cmdMutate(t, tab, protocol.Action{Type: "hover", Selector: "#menu"})
	var got struct {
		Status, Tip      string
		Entered, Overs   int
		Hovered, Clicked bool
	}
	state := "({Status: document.getElementById('status').textContent, Tip: getComputedStyle(document.getElementById('tip')).display, " +
		"Entered: window.entered, Overs: window.overs, Hovered: document.getElementById('menu').matches(':hover'), Clicked: !!window.menuClicked})"
	cmdEvalInto(t, tab, state, &got)
	if got.Status != "hovered" || got.Tip != "inline" || got.Entered != 1 || got.Overs < 1 || !got.Hovered || got.Clicked {
		t.Fatalf("after hover #menu: %+v", got)
	}
	cmdMutate(t, tab, protocol.Action{Type: "hover", Selector: "#away"})
	cmdEvalInto(t, tab, state, &got)
	if got.Status != "left" || got.Tip != "none" || got.Hovered || got.Clicked {
		t.Fatalf("after hover #away: %+v", got)
	}
}

// drag presses the mouse on one element, moves it and releases it over
// another; the page implements dragging with mouse events.
func TestDrag(t *testing.T) {
	tab, _, _ := tabAt(t, "/drag.html")
	for _, target := range []string{"target", "other"} {
		cmdEval(t, tab, "window.moves = 0, window.path = 0, window.dropped = null, 1")
		cmdMutate(t, tab, protocol.Action{Type: "drag", From: "#item", To: "#" + target})
		var got struct {
			Dropped  string
			Moves    int
			Path     int
			Dragging bool
			Inside   bool
		}
		cmdEvalInto(t, tab, `(() => {
			const i = document.getElementById('item').getBoundingClientRect();
			const r = document.getElementById('`+target+`').getBoundingClientRect();
			const x = i.left + i.width / 2, y = i.top + i.height / 2;
			return {Dropped: window.dropped, Moves: window.moves, Path: window.path, Dragging: window.dragging,
				Inside: x >= r.left && x <= r.right && y >= r.top && y <= r.bottom};
		})()`, &got)
		// The page sees the whole path: Chromium coalesces the moves into
		// one event or two per frame, each listing those it stands for.
		if got.Dropped != target || got.Moves < 1 || got.Path < 8 || got.Dragging || !got.Inside {
			t.Fatalf("drag #item to #%s: %+v", target, got)
		}
	}
	res := cmdFails(t, tab, protocol.Action{Type: "drag", From: "#item", To: "#missing"}, protocol.CodeElementNotFound)
	if res.Error != "element not found: #missing" {
		t.Fatalf("drag to a missing element: %+v", res)
	}
	// A failed drag does not leave the page mid-drag.
	cmdExpect(t, tab, "window.dragging", "false")
}

// type focuses the selector's element (or uses the focused one) and
// inserts the text with input events; clear replaces the content; fill
// clears and types.
func TestTypeAndFill(t *testing.T) {
	tab, _, _ := tabAt(t, "/form.html")

	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#name", Text: "hello"})
	if v := cmdValue(t, tab, "name"); v != "hello" {
		t.Fatalf("type #name hello: value %q", v)
	}
	cmdExpect(t, tab, "[document.activeElement.id, window.inputs.name >= 1]", `["name",true]`)

	cmdMutate(t, tab, protocol.Action{Type: "focus", Selector: "#area"})
	cmdMutate(t, tab, protocol.Action{Type: "type", Text: "into the focused one"})
	if v := cmdValue(t, tab, "area"); v != "into the focused one" {
		t.Fatalf("type without selector: textarea value %q", v)
	}
	if v := cmdValue(t, tab, "name"); v != "hello" {
		t.Fatalf("type without selector changed #name to %q", v)
	}

	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#prefilled", Text: "new", Clear: true})
	if v := cmdValue(t, tab, "prefilled"); v != "new" {
		t.Fatalf("type --clear: value %q, want %q", v, "new")
	}

	cmdEval(t, tab, "window.inputs = {}, 1")
	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#prefilled", Text: "filled"})
	if v := cmdValue(t, tab, "prefilled"); v != "filled" {
		t.Fatalf("fill: value %q", v)
	}
	cmdExpect(t, tab, "window.inputs.prefilled >= 1", "true")

	const unicode = "héllo wörld ✓ 😀 \"quotes\" \\ back"
	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#area", Text: unicode})
	if v := cmdValue(t, tab, "area"); v != unicode {
		t.Fatalf("fill with unicode: value %q, want %q", v, unicode)
	}
}

// type with key Enter submits the form: the navigation belongs to the
// type's one frame, and no page frame follows it.
func TestTypeKeyEnterSubmitsInOneFrame(t *testing.T) {
	tab, frames, seq := tabAt(t, "/form.html")
	want := site("/search.html?q=desk+lamps")
	res := send(t, tab.ID(), one(protocol.Action{Type: "type", Selector: "#q", Text: "desk lamps", Key: "Enter", BasedOnSequence: protocol.Based(seq)}))
	if !res.OK || res.Sequence != seq+1 || res.Results[0].URL != want {
		t.Fatalf("type --key Enter: want one frame at %s, got %+v", want, res)
	}
	if f := frames.next(); f.Sequence != seq+1 || f.Action != "type" || f.URL != want || f.FullPage == nil {
		t.Fatalf("the type's frame: %+v", f)
	}
	res = send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "document.getElementById('query').textContent", BasedOnSequence: protocol.Based(seq + 1)}))
	if !res.OK || res.Sequence != seq+2 || string(res.Results[0].Value) != `"desk lamps"` {
		t.Fatalf("plan after the submit: %+v", res)
	}
}

// focus makes the element the document's active element.
func TestFocus(t *testing.T) {
	tab, _, _ := tabAt(t, "/form.html")
	for _, id := range []string{"area", "after-keys", "name"} {
		cmdMutate(t, tab, protocol.Action{Type: "focus", Selector: "#" + id})
		cmdExpect(t, tab, "document.activeElement.id", `"`+id+`"`)
	}
}

// key presses one key on the focused element: named keys and characters,
// with the modifiers set on the event.
func TestKeyNamesAndModifiers(t *testing.T) {
	tab, _, _ := tabAt(t, "/form.html")
	type event struct {
		Key                    string
		Ctrl, Alt, Shift, Meta bool
		Target                 string
	}
	cases := []struct {
		action protocol.Action
		want   event
	}{
		{protocol.Action{Key: "Enter"}, event{Key: "Enter"}},
		{protocol.Action{Key: "Escape"}, event{Key: "Escape"}},
		{protocol.Action{Key: "Backspace"}, event{Key: "Backspace"}},
		{protocol.Action{Key: "Delete"}, event{Key: "Delete"}},
		{protocol.Action{Key: "ArrowUp"}, event{Key: "ArrowUp"}},
		{protocol.Action{Key: "ArrowDown"}, event{Key: "ArrowDown"}},
		{protocol.Action{Key: "ArrowLeft"}, event{Key: "ArrowLeft"}},
		{protocol.Action{Key: "ArrowRight"}, event{Key: "ArrowRight"}},
		{protocol.Action{Key: "Home"}, event{Key: "Home"}},
		{protocol.Action{Key: "End"}, event{Key: "End"}},
		{protocol.Action{Key: "PageUp"}, event{Key: "PageUp"}},
		{protocol.Action{Key: "PageDown"}, event{Key: "PageDown"}},
		{protocol.Action{Key: "Space"}, event{Key: " "}},
		{protocol.Action{Key: "F1"}, event{Key: "F1"}},
		{protocol.Action{Key: "F2"}, event{Key: "F2"}},
		{protocol.Action{Key: "F12"}, event{Key: "F12"}},
		{protocol.Action{Key: "Tab"}, event{Key: "Tab"}},
		{protocol.Action{Key: "x"}, event{Key: "x"}},
		{protocol.Action{Key: "7"}, event{Key: "7"}},
		{protocol.Action{Key: "a", Ctrl: true}, event{Key: "a", Ctrl: true}},
		{protocol.Action{Key: "x", Alt: true}, event{Key: "x", Alt: true}},
		{protocol.Action{Key: "m", Meta: true}, event{Key: "m", Meta: true}},
		{protocol.Action{Key: "ArrowLeft", Shift: true}, event{Key: "ArrowLeft", Shift: true}},
		{protocol.Action{Key: "ArrowRight", Ctrl: true, Shift: true}, event{Key: "ArrowRight", Ctrl: true, Shift: true}},
		{protocol.Action{Key: "Enter", Ctrl: true, Alt: true, Shift: true, Meta: true}, event{Key: "Enter", Ctrl: true, Alt: true, Shift: true, Meta: true}},
	}
	for _, tc := range cases {
		cmdMutate(t, tab, protocol.Action{Type: "focus", Selector: "#keys"})
		a := tc.action
		a.Type = "key"
		cmdMutate(t, tab, a)
		var got event
		cmdEvalInto(t, tab, "window.keys.length ? window.keys[window.keys.length - 1] : null", &got)
		want := tc.want
		want.Target = "keys"
		if got != want {
			t.Fatalf("key %+v: last keydown %+v, want %+v", tc.action, got, want)
		}
	}
	// Tab moved the focus on, as a keyboard's would.
	cmdMutate(t, tab, protocol.Action{Type: "focus", Selector: "#keys"})
	cmdMutate(t, tab, protocol.Action{Type: "key", Key: "Tab"})
	cmdExpect(t, tab, "document.activeElement.id", `"after-keys"`)
}

// Character keys type their character into the focused input, Space a
// space, Backspace deletes; an unknown key name is a bad request naming it.
func TestKeyTypesCharacters(t *testing.T) {
	tab, _, _ := tabAt(t, "/form.html")
	cmdMutate(t, tab, protocol.Action{Type: "focus", Selector: "#keys"})
	for _, k := range []string{"x", "Y", "7", "Space", "!"} {
		cmdMutate(t, tab, protocol.Action{Type: "key", Key: k})
	}
	cmdExpect(t, tab, "document.getElementById('keys').value", `"xY7 !"`)
	cmdMutate(t, tab, protocol.Action{Type: "key", Key: "Backspace"})
	cmdExpect(t, tab, "document.getElementById('keys').value", `"xY7 "`)
	cmdExpect(t, tab, "window.inputs.keys >= 6", "true")

	res := cmdFails(t, tab, protocol.Action{Type: "key", Key: "Foo"}, protocol.CodeBadRequest)
	if !strings.Contains(res.Error, "Foo") {
		t.Fatalf("unknown key: error %q does not name it", res.Error)
	}
	cmdExpect(t, tab, "document.getElementById('keys').value", `"xY7 "`)
	// type checks its --key before typing, so a bad one changes nothing
	// (and so makes no frame).
	res = cmdFails(t, tab, protocol.Action{Type: "type", Selector: "#keys", Text: "zz", Key: "Foo"}, protocol.CodeBadRequest)
	if !strings.Contains(res.Error, "Foo") {
		t.Fatalf("type --key Foo: error %q does not name it", res.Error)
	}
	cmdExpect(t, tab, "document.getElementById('keys').value", `"xY7 "`)
}

// select chooses an option of a native <select> by value, else by its
// text, and fires input and change.
func TestSelectOption(t *testing.T) {
	tab, _, _ := tabAt(t, "/form.html")
	cases := []struct{ value, want string }{
		{"b", "b"},
		{"Cherry pie", "c"}, // by text
		{"a", "a"},
		{"2", "2"}, // a value wins over another option's text
		{"1", "1"},
		{"Banana", "b"},
	}
	for i, tc := range cases {
		cmdMutate(t, tab, protocol.Action{Type: "select", Selector: "#fruit", Value: tc.value})
		var got struct {
			Value          string
			Inputs, Change int
		}
		cmdEvalInto(t, tab, "({Value: document.getElementById('fruit').value, Inputs: window.inputs.fruit, Change: window.changes.fruit})", &got)
		if got.Value != tc.want || got.Inputs != i+1 || got.Change != i+1 {
			t.Fatalf("select %q: %+v, want value %q after %d input and change events", tc.value, got, tc.want, i+1)
		}
	}
	res := cmdFails(t, tab, protocol.Action{Type: "select", Selector: "#fruit", Value: "zzz"}, protocol.CodeElementNotFound)
	if !strings.Contains(res.Error, "zzz") {
		t.Fatalf("select of a missing option: error %q does not name the value", res.Error)
	}
	cmdFails(t, tab, protocol.Action{Type: "select", Selector: "#name", Value: "a"}, protocol.CodeBadRequest)
	cmdExpect(t, tab, "[document.getElementById('fruit').value, window.changes.fruit]", `["b",6]`)
}

// scroll brings an element into view, or moves the window to or by x,y,
// instantly.
func TestScroll(t *testing.T) {
	tab, _, _ := tabAt(t, "/long.html")
	cmdMutate(t, tab, protocol.Action{Type: "scroll", Selector: "#bottom"})
	cmdExpect(t, tab, `(() => { const r = document.getElementById('bottom').getBoundingClientRect();
		return scrollY > 0 && r.top >= 0 && r.bottom <= innerHeight; })()`, "true")
	steps := []struct {
		action protocol.Action
		y      string
	}{
		{protocol.Action{To: "0,400"}, "400"},
		{protocol.Action{By: "0,150"}, "550"},
		{protocol.Action{By: "0,-50"}, "500"},
		{protocol.Action{To: "0, 0"}, "0"},
	}
	for _, s := range steps {
		a := s.action
		a.Type = "scroll"
		if got := string(cmdMutate(t, tab, a).Value); got != `{"scroller":"window","x":0,"y":`+s.y+`}` {
			t.Fatalf("scroll %+v answered %s", a, got)
		}
		cmdExpect(t, tab, "scrollY", s.y)
	}
	for _, bad := range []string{"down", "NaN,0", "0,Inf", "-Inf,1", "infinity,2", "1e309,0"} {
		cmdFails(t, tab, protocol.Action{Type: "scroll", To: bad}, protocol.CodeBadRequest)
		cmdFails(t, tab, protocol.Action{Type: "scroll", By: bad}, protocol.CodeBadRequest)
	}
}

// An app whose page cannot scroll has a pane that does: scroll --by moves
// the pane a wheel in the middle of the viewport would, and says which;
// a selector with --to or --by names the element to scroll.
func TestScrollMovesThePaneOfAnApp(t *testing.T) {
	tab, _, _ := tabAt(t, "/pane.html")
	if got := string(cmdMutate(t, tab, protocol.Action{Type: "scroll", By: "0,500"}).Value); got != `{"scroller":"div#app","x":0,"y":500}` {
		t.Fatalf("scroll --by 0,500 answered %s", got)
	}
	cmdMutate(t, tab, protocol.Action{Type: "scroll", Selector: "#app", To: "0,100"})
	cmdExpect(t, tab, "[scrollY, document.getElementById('app').scrollTop]", "[0,100]")
}

// upload sets the files of a file input, which sees a change event; a
// missing file is a bad request naming it.
func TestUpload(t *testing.T) {
	dir := testdir.Enterable(t)
	tab, _, _ := tabAt(t, "/upload.html", fileRoots(t, dir))
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.csv")
	for p, content := range map[string]string{a: "alpha", b: "x,y\n1,2\n"} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type files struct {
		Names   []string
		Changes int
		First   string
	}
	read := func(id string) files {
		t.Helper()
		var f files
		cmdEvalInto(t, tab, `(async () => {
			const el = document.getElementById('`+id+`');
			return {Names: Array.from(el.files, f => f.name), Changes: window.changes['`+id+`'] || 0,
				First: el.files.length ? await el.files[0].text() : ""};
		})()`, &f)
		return f
	}

	cmdMutate(t, tab, protocol.Action{Type: "upload", Selector: "#one", Files: []string{a}})
	if got := read("one"); !reflect.DeepEqual(got, files{Names: []string{"a.txt"}, Changes: 1, First: "alpha"}) {
		t.Fatalf("upload #one a.txt: %+v", got)
	}
	cmdMutate(t, tab, protocol.Action{Type: "upload", Selector: "#many", Files: []string{a, b}})
	if got := read("many"); !reflect.DeepEqual(got, files{Names: []string{"a.txt", "b.csv"}, Changes: 1, First: "alpha"}) {
		t.Fatalf("upload #many a.txt b.csv: %+v", got)
	}

	missing := filepath.Join(dir, "no-such-file.txt")
	res := cmdFails(t, tab, protocol.Action{Type: "upload", Selector: "#one", Files: []string{missing}}, protocol.CodeBadRequest)
	if want := "upload.files[0]: " + missing + ": no such file or directory"; res.Error != want {
		t.Fatalf("upload of a missing file: error %q, want %q", res.Error, want)
	}
	res = cmdFails(t, tab, protocol.Action{Type: "upload", Selector: "#one", Files: []string{dir}}, protocol.CodeBadRequest)
	if want := "upload.files[0]: " + dir + ": is not a regular file"; res.Error != want {
		t.Fatalf("upload of a directory: error %q, want %q", res.Error, want)
	}
	cmdFails(t, tab, protocol.Action{Type: "upload", Selector: "#text", Files: []string{a}}, protocol.CodeBadRequest)
	if res := cmdFails(t, tab, protocol.Action{Type: "upload", Selector: "#off", Files: []string{a}}, protocol.CodeBadRequest); res.Error != "element #off is disabled" {
		t.Fatalf("upload into a disabled input: %q", res.Error)
	}
	cmdExpect(t, tab, "document.getElementById('off').files.length", "0")
	if got := read("one"); !reflect.DeepEqual(got, files{Names: []string{"a.txt"}, Changes: 1, First: "alpha"}) {
		t.Fatalf("failed uploads changed #one: %+v", got)
	}
}

// Every state-changing action produces exactly one frame: a plan that
// starts at frame S bases its action i on S+i, and the frames come in
// that order, each named after its action.
func TestEveryMutatingActionIsOneFrame(t *testing.T) {
	dir := testdir.Enterable(t)
	tab, frames, seq := tabAt(t, "/form.html", fileRoots(t, dir))
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	actions := []protocol.Action{
		{Type: "focus", Selector: "#name"},
		{Type: "type", Text: "abc"},
		{Type: "fill", Selector: "#prefilled", Text: "x"},
		{Type: "key", Key: "Tab"},
		{Type: "select", Selector: "#fruit", Value: "b"},
		{Type: "scroll", By: "0,10"},
		{Type: "eval", Expression: "document.getElementById('name').value"},
		{Type: "navigate", URL: site("/upload.html")},
		{Type: "upload", Selector: "#one", Files: []string{file}},
		{Type: "navigate", URL: site("/hover.html")},
		{Type: "hover", Selector: "#menu"},
		{Type: "click", Selector: "#menu"},
		{Type: "navigate", URL: site("/drag.html")},
		{Type: "drag", From: "#item", To: "#target"},
		{Type: "back"},
		{Type: "forward"},
		{Type: "reload", Wait: true}, // it answers at commit without
		{Type: "eval", Expression: "window.dropped"},
	}
	for i := range actions {
		actions[i].BasedOnSequence = protocol.Based(seq + int64(i))
	}
	res := send(t, tab.ID(), protocol.Plan{ID: "every-action", Actions: actions})
	if !res.OK || res.Executed != len(actions) || res.Sequence != seq+int64(len(actions)) || len(res.Results) != len(actions) {
		t.Fatalf("plan of every state-changing action from frame %d: %+v", seq, res)
	}
	for i, r := range res.Results {
		if !r.OK || r.Type != actions[i].Type || r.Sequence != seq+int64(i)+1 {
			t.Fatalf("result %d (%s): %+v", i, actions[i].Type, r)
		}
		f := frames.next()
		if f.Sequence != seq+int64(i)+1 || f.Action != actions[i].Type || f.Source != protocol.SourceAgent || f.PlanID != "every-action" {
			t.Fatalf("frame for action %d (%s): %+v", i, actions[i].Type, f)
		}
	}
	if v := string(res.Results[6].Value); v != `"abc"` {
		t.Fatalf("type without selector after focus typed %s", v)
	}
	// The reload started the drag page afresh.
	if v := string(res.Results[len(actions)-1].Value); v != "null" {
		t.Fatalf("after the reload window.dropped = %s, want null", v)
	}
}

// type and fill refuse a field that would drop their text unseen, set
// whole-value inputs (date, colour, range) as a picker would, and type
// into the focused element through shadow roots.
func TestTypeAndFillFields(t *testing.T) {
	tab, _, _ := tabAt(t, "/fields.html")
	for _, tc := range []struct{ id, text, want string }{
		{"date", "2024-02-29", "2024-02-29"},
		{"time", "07:30", "07:30"},
		{"color", "#00FF7f", "#00ff7f"},
		{"range", "6", "6"},
	} {
		cmdEval(t, tab, "window.events = [], 1")
		cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#" + tc.id, Text: tc.text})
		if v := cmdValue(t, tab, tc.id); v != tc.want {
			t.Fatalf("fill #%s %q: value %q, want %q", tc.id, tc.text, v, tc.want)
		}
		cmdExpect(t, tab, "window.events", `["input:`+tc.id+`","change:`+tc.id+`"]`)
	}
	// type --clear replaces as fill does.
	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#date", Text: "2025-12-01", Clear: true})
	if v := cmdValue(t, tab, "date"); v != "2025-12-01" {
		t.Fatalf("type --clear #date: value %q", v)
	}

	refused := []struct {
		a    protocol.Action
		says string
	}{
		{protocol.Action{Type: "type", Selector: "#date", Text: "2024-01-01"}, "takes a whole value: set it with fill"},
		{protocol.Action{Type: "fill", Selector: "#date", Text: "tomorrow"}, `"tomorrow" is not a value for element #date (an <input type=date>): e.g. 2024-01-31`},
		{protocol.Action{Type: "fill", Selector: "#range", Text: "7"}, "a number from 0 to 10 in steps of 2"},
		{protocol.Action{Type: "type", Selector: "#number", Text: "abc"}, "takes only numbers"},
		{protocol.Action{Type: "fill", Selector: "#number", Text: "1,5"}, "takes only numbers"},
		{protocol.Action{Type: "type", Selector: "#readonly", Text: "x"}, "element #readonly is read-only"},
		{protocol.Action{Type: "fill", Selector: "#readonly-area", Text: "x"}, "element #readonly-area is read-only"},
		{protocol.Action{Type: "fill", Selector: "#disabled", Text: "x"}, "element #disabled is disabled"},
		{protocol.Action{Type: "type", Selector: "#check", Text: "x"}, "is an <input type=checkbox>, which takes no text"},
		{protocol.Action{Type: "type", Selector: "#button", Text: "x"}, "is a <button>, which takes no text"},
		{protocol.Action{Type: "type", Selector: "#pick", Text: "x"}, "choose an option with select"},
		{protocol.Action{Type: "select", Selector: "#off", Value: "a"}, "element #off is disabled"},
		{protocol.Action{Type: "select", Selector: "#some", Value: "no"}, `option "no" of #some is disabled`},
		{protocol.Action{Type: "select", Selector: "#some", Value: "Shut"}, `option "Shut" of #some is disabled`},
	}
	for _, tc := range refused {
		res := cmdFails(t, tab, tc.a, protocol.CodeBadRequest)
		if !strings.Contains(res.Error, tc.says) {
			t.Fatalf("%s %s %q: error %q does not say %q", tc.a.Type, tc.a.Selector, tc.a.Text+tc.a.Value, res.Error, tc.says)
		}
	}
	cmdExpect(t, tab, "[readonly.value, document.getElementById('readonly-area').value, disabled.value, number.value, some.value]",
		`["kept","kept","kept","","on"]`)

	// Without a selector: the focused element, which must take text.
	cmdEval(t, tab, "document.activeElement.blur(), 1")
	res := cmdFails(t, tab, protocol.Action{Type: "type", Text: "lost"}, protocol.CodeBadRequest)
	if !strings.Contains(res.Error, "the focused element (body) is a <body>, which takes no text") {
		t.Fatalf("type with the body focused: %q", res.Error)
	}
	cmdEval(t, tab, "host.shadowRoot.getElementById('inner').focus(), 1")
	cmdMutate(t, tab, protocol.Action{Type: "type", Text: "in the shadow"})
	cmdExpect(t, tab, "host.shadowRoot.getElementById('inner').value", `"in the shadow"`)

	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#editable", Text: "new words"})
	cmdExpect(t, tab, "editable.textContent", `"new words"`)
	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#number", Text: "-1.5e3"})
	if v := cmdValue(t, tab, "number"); v != "-1.5e3" {
		t.Fatalf("fill #number: value %q", v)
	}
}

// A CSS selector that matches nothing in the document matches inside open
// shadow roots: web components' buttons and fields are clickable and
// typable by selector, as they are by snapshot ref.
func TestSelectorsReachIntoShadowRoots(t *testing.T) {
	tab, _, _ := tabAt(t, "/shadow.html")
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#shadow-button"})
	cmdExpect(t, tab, "host.shadowRoot.getElementById('shadow-button').dataset.clicked", `"yes"`)
	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#card-field", Text: "in a component"})
	cmdExpect(t, tab, "card.shadowRoot.getElementById('card-field').value", `"in a component"`)
	if got := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "text", Selector: "#shadow-button"})); got != "shadow button" {
		t.Fatalf("text #shadow-button = %q", got)
	}
	cmdFails(t, tab, protocol.Action{Type: "click", Selector: "#host #shadow-button"}, protocol.CodeElementNotFound)
}

// cmdValue is the value of the field with id.
func cmdValue(t *testing.T, tab *Tab, id string) string {
	t.Helper()
	var v string
	cmdEvalInto(t, tab, "document.getElementById('"+id+"').value", &v)
	return v
}

// type appends at the end of a field it focuses, as a user clicking into
// it to add text would; in an editor's paragraph, at that paragraph's
// end. fill with empty text clears a field.
func TestTypeAppendsAndFillClears(t *testing.T) {
	tab, _, _ := tabAt(t, "/typing.html")
	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#prefilled", Text: " more"})
	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#area", Text: " more"})
	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#para1", Text: " more"})
	cmdExpect(t, tab, "[prefilled.value, area.value, para1.textContent, para2.textContent]",
		`["prefilled more","existing text more","para one more","para two"]`)
	// Focused already: the caret stays where it is.
	cmdEval(t, tab, "prefilled.focus(), prefilled.setSelectionRange(0, 0), 1")
	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#prefilled", Text: ">"})
	cmdExpect(t, tab, "prefilled.value", `">prefilled more"`)

	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#clearme", Text: ""})
	cmdExpect(t, tab, "clearme.value", `""`)
	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#area", Clear: true})
	cmdExpect(t, tab, "area.value", `""`)
	res := cmdFails(t, tab, protocol.Action{Type: "type", Selector: "#area"}, protocol.CodeBadRequest)
	if !strings.Contains(res.Error, "type needs the text to insert") {
		t.Fatalf("type without text: %q", res.Error)
	}
}

// A typing's frame and reply carry the title and URL the page has after
// it: the check that the text took is the typing's barrier, and must see
// what its input handlers did.
func TestTypeFrameSeesWhatTheTypingDid(t *testing.T) {
	tab, frames, _ := tabAt(t, "/typing.html")
	for _, a := range []protocol.Action{
		{Type: "type", Selector: "#search", Text: "go"},
		{Type: "fill", Selector: "#search", Text: "gopher"},
		{Type: "type", Selector: "#search", Text: "s", Keys: true},
	} {
		r := cmdMutate(t, tab, a)
		value := cmdValue(t, tab, "search")
		wantTitle, wantURL := "Search: "+value, site("/typing.html?q="+value)
		if r.Title != wantTitle || r.URL != wantURL {
			t.Fatalf("%s %q: reply at %q %q, want %q %q", a.Type, a.Text, r.URL, r.Title, wantURL, wantTitle)
		}
		if f := frames.until(r.Sequence); f.Title != wantTitle || f.URL != wantURL {
			t.Fatalf("%s %q: frame at %q %q, want %q %q", a.Type, a.Text, f.URL, f.Title, wantURL, wantTitle)
		}
	}
}

// type and fill refuse what a field would drop or the page would refuse,
// instead of answering ok; --keys types a key per character, which such
// fields take.
func TestTypeRefusesLostText(t *testing.T) {
	tab, _, _ := tabAt(t, "/typing.html")
	refused := []struct {
		a    protocol.Action
		says string
	}{
		{protocol.Action{Type: "type", Selector: "#short", Text: "cdef"}, `"cdef" is 4 characters, but element #short takes at most 5, and holds 2 already (maxlength)`},
		{protocol.Action{Type: "fill", Selector: "#code input", Text: "1234"}, "type it with --keys"},
		{protocol.Action{Type: "type", Selector: "#digits", Text: "12ab34"}, `element #digits did not take the text: it still holds ""`},
		{protocol.Action{Type: "fill", Selector: "#masked", Text: ""}, `element #masked could not be cleared: it still holds "12/3"`},
		{protocol.Action{Type: "type", Selector: "#in-fieldset", Text: "x"}, "element #in-fieldset is disabled"},
		{protocol.Action{Type: "focus", Selector: "#inert-field"}, "element #inert-field is inert"},
		{protocol.Action{Type: "type", Selector: "#gone", Text: "x"}, "element #gone is not shown"},
		{protocol.Action{Type: "focus", Selector: "#unseen"}, "element #unseen is hidden (visibility:hidden)"},
		{protocol.Action{Type: "type", Selector: "#plain", Text: "x"}, "element #plain cannot be focused: it is not a field"},
	}
	for _, tc := range refused {
		res := send(t, tab.ID(), one(tc.a))
		if res.OK || res.Code != protocol.CodeBadRequest || !strings.Contains(res.Error, tc.says) {
			t.Errorf("%s %s %q: want bad_request saying %q, got %+v", tc.a.Type, tc.a.Selector, tc.a.Text, tc.says, res)
		}
	}
	cmdExpect(t, tab, "[short.value, code(), digits.value, document.getElementById('in-fieldset').value]", `["ab","","",""]`)

	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#digits", Text: "12ab34", Keys: true})
	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#code input", Text: "1234", Keys: true})
	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#short", Text: "abcdefg", Keys: true})
	cmdExpect(t, tab, "[digits.value, code(), short.value]", `["1234","1234","abcde"]`)
	// fill types over the selected content, as a user does: no Backspace
	// for the page to handle its own way; the same text again is kept.
	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#masked", Text: "56/78"})
	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#short", Text: "abcde"})
	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#digits", Text: "99", Keys: true})
	cmdExpect(t, tab, "[masked.value, short.value, digits.value]", `["56/78","abcde","99"]`)

	// A host that delegates focus passes it, and the text, to its field.
	cmdMutate(t, tab, protocol.Action{Type: "focus", Selector: "#delegating"})
	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: "#delegating", Text: "delegated"})
	cmdExpect(t, tab, "delegating.shadowRoot.getElementById('inside').value", `"delegated"`)
}

// key sends what a US keyboard does: Shift gives the capital or the
// symbol, a character that needs Shift holds it, punctuation has its code
// and keyCode, and a modifier key is down in its own keydown.
func TestKeyEventsAsAKeyboardSendsThem(t *testing.T) {
	tab, _, _ := tabAt(t, "/typing.html")
	cmdMutate(t, tab, protocol.Action{Type: "focus", Selector: "#keys"})
	for _, a := range []protocol.Action{
		{Type: "key", Key: "a", Shift: true},
		{Type: "key", Key: "1", Shift: true},
		{Type: "key", Key: "."},
		{Type: "key", Key: "?"},
		{Type: "key", Key: "Shift"},
		{Type: "key", Key: "esc"},
	} {
		cmdMutate(t, tab, a)
	}
	cmdExpect(t, tab, "[document.getElementById('keys').value, JSON.stringify(keys.filter(k => k[0] === 'keydown'))]",
		`["A!.?","[[\"keydown\",\"A\",\"KeyA\",65,true,0],[\"keydown\",\"!\",\"Digit1\",49,true,0],[\"keydown\",\".\",\"Period\",190,false,0],`+
			`[\"keydown\",\"?\",\"Slash\",191,true,0],[\"keydown\",\"Shift\",\"ShiftLeft\",16,true,1],[\"keydown\",\"Escape\",\"Escape\",27,false,0]]"]`)
}
