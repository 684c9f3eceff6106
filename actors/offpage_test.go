package actors

import (
	"strings"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// An element no scrolling a user can do brings on screen (a closed
// off-canvas menu: at a negative left, moved out by a transform, beyond
// the right edge of a page that hides its sideways overflow) is refused
// by click, hover and screenshot with not_visible, naming where it lies
// and beyond which edge, and nothing reaches it; the snapshot marks it.
// An element below the fold, or below a scrolling pane's fold, is
// scrolled into view and clicked as before, and a menu once opened is
// clicked too.
func TestOffPageElementsAreNotVisible(t *testing.T) {
	tab, _, _ := tabAt(t, "/offcanvas.html")
	s := snapshotOf(t, tab, protocol.Action{NoIdle: true})
	for _, tc := range []struct{ name, side, at string }{
		{`"Left link"`, "left", "at -272,"},
		{`"Slide button"`, "left", "at -"},
		{`"Right button"`, "right", "beyond its right edge"},
	} {
		line := lineWith(t, s.Text, tc.name)
		if !strings.Contains(line, "[offpage="+tc.side+"]") {
			t.Errorf("snapshot line of %s: want [offpage=%s], got %q", tc.name, tc.side, line)
		}
		ref := refFor(t, s.Text, tc.name)
		res := cmdFails(t, tab, protocol.Action{Type: "click", Selector: ref}, protocol.CodeNotVisible)
		if !strings.Contains(res.Error, "element not visible: "+ref+" lies off the page beyond its "+tc.side+" edge") || !strings.Contains(res.Error, tc.at) {
			t.Errorf("click %s (%s): %q", ref, tc.name, res.Error)
		}
		cmdFails(t, tab, protocol.Action{Type: "hover", Selector: ref}, protocol.CodeNotVisible)
		cmdFails(t, tab, protocol.Action{Type: "screenshot", Selector: ref}, protocol.CodeNotVisible)
	}
	// Nothing was clicked, and the page that hides its sideways overflow
	// was not scrolled sideways to reach the right-hand menu.
	cmdExpect(t, tab, "[window.hit === undefined, clicks.length, scrollX]", "[true,0,0]")

	for _, name := range []string{`"Near button"`, `"In the pane"`, `"Far button"`} {
		if line := lineWith(t, s.Text, name); strings.Contains(line, "offpage") {
			t.Errorf("an element a user can scroll to is marked: %q", line)
		}
	}
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: refFor(t, s.Text, `"In the pane"`)})
	cmdExpect(t, tab, "window.hit", `"pane"`)
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: refFor(t, s.Text, `"Far button"`)})
	cmdExpect(t, tab, "[window.hit, scrollY > 0]", `["far",true]`)

	// Opened, the menu is on screen: no mark, and its link clicks.
	cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "scrollTo(0, 0), document.body.classList.add('open'), 1"})
	s = snapshotOf(t, tab, protocol.Action{NoIdle: true})
	if line := lineWith(t, s.Text, `"Left link"`); strings.Contains(line, "offpage") {
		t.Fatalf("the opened menu's link is still marked: %q", line)
	}
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: refFor(t, s.Text, `"Left link"`)})
	cmdExpect(t, tab, "window.hit", `"left"`)
}

// lineWith is the line of a text snapshot that mentions want.
func lineWith(t *testing.T, text, want string) string {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, want) {
			return line
		}
	}
	t.Fatalf("no line with %q in\n%s", want, text)
	return ""
}
