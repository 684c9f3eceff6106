package actors

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// Acceptance tests of JavaScript dialogs: held open for an agent to answer
// with the dialog action, reported on the tab's dialog event subject,
// answered by default after TabOptions.DialogTimeout. The helpers
// (cmdMutate, cmdEval, ...) are in commands_read_test.go.

// cmdDialogEvent is a message on <prefix>.tab.<tab>.event.dialog.
type cmdDialogEvent struct {
	Tab     string `json:"tab"`
	Type    string `json:"type"`
	Message string `json:"message"`
	URL     string `json:"url"`
	Answer  string `json:"answer"`
	Open    bool   `json:"open"`
	Auto    bool   `json:"auto"`
}

// cmdWatchDialogs subscribes to a tab's dialog events.
func cmdWatchDialogs(t *testing.T, tab *Tab) *frameWatch {
	t.Helper()
	return watchFrames(t, testConn, protocol.DefaultSubjects.TabEvents(tab.ID(), "dialog"))
}

// cmdNextDialog waits for the next dialog event.
func cmdNextDialog(t *testing.T, w *frameWatch) cmdDialogEvent {
	t.Helper()
	select {
	case m := <-w.ch:
		var ev cmdDialogEvent
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatalf("dialog event %s: %v", m.Data, err)
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no dialog event within 10s")
	}
	return cmdDialogEvent{}
}

// cmdOpenDialog opens a tab at dialog.html, runs trigger there, and
// returns the opening event of the dialog it opened, with the tab's
// dialog events for what follows.
func cmdOpenDialog(t *testing.T, trigger protocol.Action) (*Tab, *frameWatch, cmdDialogEvent) {
	t.Helper()
	tab, _, _ := tabAt(t, "/dialog.html")
	events := cmdWatchDialogs(t, tab)
	if trigger.Type == "eval" {
		// Its value cannot come back: it fails so, but it ran (a frame).
		before := tab.Info().Sequence
		res := send(t, tab.ID(), one(trigger))
		if res.OK || res.Code != protocol.CodeDialogOpen || !strings.Contains(res.Error, "its value cannot come back") || res.Sequence != before+1 {
			t.Fatalf("an eval that opens a dialog: %+v", res)
		}
	} else {
		cmdMutate(t, tab, trigger)
	}
	ev := cmdNextDialog(t, events)
	if !ev.Open || ev.Tab != tab.ID() || ev.URL != site("/dialog.html") {
		t.Fatalf("%s: dialog event %+v, want an open dialog on %s", trigger.Type, ev, site("/dialog.html"))
	}
	return tab, events, ev
}

// A dialog stays open until the agent answers it: the click that opened
// it returns, the opening is reported, and the dialog action's answer is
// what the page's confirm or prompt returns.
func TestDialogAnsweredByAgent(t *testing.T) {
	cases := []struct {
		name    string
		button  string
		typ     string
		message string
		answer  protocol.Action
		check   string // page expression
		want    string // its JSON value after the answer
	}{
		{"confirm accepted", "#confirm", "confirm", "sure?", protocol.Action{Answer: "accept"}, "window.confirmed", "true"},
		{"confirm dismissed", "#confirm", "confirm", "sure?", protocol.Action{Answer: "dismiss"}, "window.confirmed", "false"},
		{"prompt answered", "#prompt", "prompt", "name?", protocol.Action{Answer: "accept", Text: "hi"}, "window.prompted", `"hi"`},
		{"prompt dismissed", "#prompt", "prompt", "name?", protocol.Action{Answer: "dismiss"}, "window.prompted", "null"},
		{"alert", "#alert", "alert", "hello", protocol.Action{Answer: "accept"}, "window.alerted", "true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab, _, ev := cmdOpenDialog(t, protocol.Action{Type: "click", Selector: tc.button, Timeout: protocol.Duration(10 * time.Second)})
			if ev.Type != tc.typ || ev.Message != tc.message {
				t.Fatalf("dialog event %+v, want a %s %q", ev, tc.typ, tc.message)
			}
			a := tc.answer
			a.Type = "dialog"
			cmdMutate(t, tab, a)
			cmdExpect(t, tab, tc.check, tc.want)
			// The dialog is gone: the tab works, and answering again is
			// a bad request.
			cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#plain"})
			cmdExpect(t, tab, "window.plainClicked", "true")
			cmdFails(t, tab, protocol.Action{Type: "dialog", Answer: "accept"}, protocol.CodeBadRequest)
		})
	}
}

// While a dialog is open every other action fails fast with dialog_open,
// says how to answer it, and produces no frame.
func TestDialogOpenBlocksOtherActions(t *testing.T) {
	tab, _, ev := cmdOpenDialog(t, protocol.Action{Type: "click", Selector: "#confirm"})
	if ev.Type != "confirm" {
		t.Fatalf("dialog event %+v", ev)
	}
	for _, a := range []protocol.Action{
		{Type: "eval", Expression: "1"},
		{Type: "click", Selector: "#plain"},
		{Type: "text"},
		{Type: "title"},
		{Type: "navigate", URL: site("/read.html")},
	} {
		a.Timeout = protocol.Duration(5 * time.Second)
		res := cmdFails(t, tab, a, protocol.CodeDialogOpen)
		if !strings.Contains(res.Error, "dialog accept") {
			t.Fatalf("%s while a dialog is open: error %q does not say how to answer it", a.Type, res.Error)
		}
	}
	cmdMutate(t, tab, protocol.Action{Type: "dialog", Answer: "accept"})
	cmdExpect(t, tab, "[window.confirmed, typeof window.plainClicked]", `[true,"undefined"]`)
}

// A dialog that opens as the agent answers another (two confirms in a
// row) is reported as the first was, and held for its own answer: the
// dialog action that led to it returns.
func TestDialogAfterDialog(t *testing.T) {
	tab, events, ev := cmdOpenDialog(t, protocol.Action{Type: "eval", Expression: "window.answers = [confirm('one'), confirm('two')]"})
	if ev.Message != "one" {
		t.Fatalf("first dialog event %+v", ev)
	}
	// A deadline beyond the test's 60s wait for a reply: an answer that
	// waited on the second dialog would never come back in time.
	cmdMutate(t, tab, protocol.Action{Type: "dialog", Answer: "accept", Timeout: protocol.Duration(2 * time.Minute)})
	for ev := cmdNextDialog(t, events); !ev.Open || ev.Message != "two"; ev = cmdNextDialog(t, events) {
		if ev.Open {
			t.Fatalf("dialog event %+v, want the second dialog's", ev)
		}
	}
	cmdMutate(t, tab, protocol.Action{Type: "dialog", Answer: "dismiss", Timeout: protocol.Duration(2 * time.Minute)})
	cmdExpect(t, tab, "window.answers", "[true,false]")
}

// The dialog action with no dialog open is a bad request.
func TestDialogWithoutDialog(t *testing.T) {
	tab, _, _ := tabAt(t, "/dialog.html")
	cmdFails(t, tab, protocol.Action{Type: "dialog", Answer: "accept"}, protocol.CodeBadRequest)
	cmdFails(t, tab, protocol.Action{Type: "dialog", Answer: "dismiss", Text: "x"}, protocol.CodeBadRequest)
	cmdExpect(t, tab, "1 + 1", "2")
}

// With no time to wait (a negative DialogTimeout, the CLI's
// --dialog-timeout 0) every dialog gets DialogDefault at once, dismiss
// included, and its one event says which answer it got.
func TestDialogAnsweredAtOnce(t *testing.T) {
	for _, tc := range []struct{ def, answer, confirmed, prompted string }{
		{"accept", "accept", "true", `"Ada"`},
		{"dismiss", "dismiss", "false", "null"},
	} {
		t.Run(tc.def, func(t *testing.T) {
			tab, _, _ := tabAt(t, "/dialog.html", func(o *TabOptions) {
				o.DialogTimeout, o.DialogDefault = -1, tc.def
			})
			events := cmdWatchDialogs(t, tab)
			cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#confirm"})
			if ev := cmdNextDialog(t, events); !ev.Open || !ev.Auto || ev.Answer != tc.answer || ev.Type != "confirm" {
				t.Fatalf("event %+v, want confirm answered %q at once", ev, tc.answer)
			}
			cmdPoll(t, tab, "window.confirmed !== undefined", 10*time.Second)
			cmdExpect(t, tab, "window.confirmed", tc.confirmed)
			cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#prompt"})
			cmdNextDialog(t, events)
			cmdPoll(t, tab, "window.prompted !== undefined", 10*time.Second)
			cmdExpect(t, tab, "window.prompted", tc.prompted)
		})
	}
}

// A dialog nobody answers within DialogTimeout gets DialogDefault
// ("accept" unless "dismiss"), reported in a second event; the tab stays
// usable.
func TestDialogDefaultAnswerAfterTimeout(t *testing.T) {
	cases := []struct {
		def, answer, want string
	}{
		{"", "accept", "true"},
		{"accept", "accept", "true"},
		{"dismiss", "dismiss", "false"},
	}
	for _, tc := range cases {
		t.Run("default "+tc.answer+" ("+tc.def+")", func(t *testing.T) {
			tab, _, _ := tabAt(t, "/dialog.html", func(o *TabOptions) {
				o.DialogTimeout = 300 * time.Millisecond
				o.DialogDefault = tc.def
			})
			events := cmdWatchDialogs(t, tab)
			cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#confirm"})
			if ev := cmdNextDialog(t, events); !ev.Open || ev.Type != "confirm" || ev.Message != "sure?" {
				t.Fatalf("opening event %+v", ev)
			}
			ev := cmdNextDialog(t, events)
			if ev.Open || ev.Answer != tc.answer || ev.Type != "confirm" || ev.Tab != tab.ID() {
				t.Fatalf("answering event %+v, want the default answer %q", ev, tc.answer)
			}
			cmdPoll(t, tab, "window.confirmed !== undefined", 10*time.Second)
			cmdExpect(t, tab, "window.confirmed", tc.want)
			cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#plain"})
			cmdExpect(t, tab, "window.plainClicked", "true")
		})
	}
}

// A dialog the page opens as it loads ends a navigate --wait as it ends a
// click: the navigation is done, its frame made, and the dialog waits for
// its answer (it used to fail as "timeout waiting for page load").
//
// The navigate's frame cannot carry the page's content (the dialog holds
// the page); the first frame after the answer does.
func TestDialogWhileLoading(t *testing.T) {
	tab, frames, _ := tabAt(t, "/read.html")
	events := cmdWatchDialogs(t, tab)
	res := cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/dialogload.html"), Wait: true, Timeout: protocol.Duration(10 * time.Second)})
	if res.URL != site("/dialogload.html") {
		t.Fatalf("navigate --wait to a page that asks as it loads: %+v", res)
	}
	if f := frames.until(res.Sequence); f.FullPage != nil || !strings.Contains(f.Note, "dialog") {
		t.Fatalf("the navigate's frame, with the dialog open: %+v", f)
	}
	if ev := cmdNextDialog(t, events); !ev.Open || ev.Type != "confirm" {
		t.Fatalf("dialog event %+v", ev)
	}
	res2 := cmdFails(t, tab, protocol.Action{Type: "ready", Timeout: protocol.Duration(5 * time.Second)}, protocol.CodeDialogOpen)
	if !strings.Contains(res2.Error, "dialog accept") {
		t.Fatalf("ready while the page asks: %q", res2.Error)
	}
	answered := cmdMutate(t, tab, protocol.Action{Type: "dialog", Answer: "dismiss"})
	if f := frames.until(answered.Sequence); f.FullPage == nil || !strings.Contains(*f.FullPage, "Asks as it loads") {
		t.Fatalf("the frame after the answer does not carry the page's content: %+v", f)
	}
	cmdRead(t, tab, protocol.Action{Type: "ready", Timeout: protocol.Duration(10 * time.Second)})
	cmdExpect(t, tab, "window.answer", "false")
	if f := frames.next(); f.FullPage != nil {
		t.Fatalf("the content is sent again at the same URL: %+v", f)
	}
}
