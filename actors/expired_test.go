package actors

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// A plan's deadline is the last moment any action of it may start:
//   - a plan that reaches the tab past its deadline runs nothing
//     (expired, saying it had passed when the plan arrived);
//   - one whose deadline passes while it waits behind another plan in the
//     tab's mailbox is answered expired then, without running, but for a
//     repeat of the plan the tab runs, which gets that run's result;
//   - an action running at the deadline is cut short there, well before
//     its own timeout, and the actions after it do not run.
//
// Every refused plan leaves the page as it was (no side effect of its
// eval) and makes no frame.
func TestPlanDeadlineOnTheTab(t *testing.T) {
	tab, frames, seq := tabAt(t, "/read.html")

	// Past its deadline on arrival.
	late := protocol.Plan{ID: "late", Deadline: time.Now().Add(-2 * time.Second),
		Action: &protocol.Action{Type: "eval", Expression: "window.lateRan = true"}}
	res := send(t, tab.ID(), late)
	if res.OK || res.Code != protocol.CodeExpired || res.Executed != 0 || res.Stopped == nil || res.Stopped.Index != 0 ||
		!strings.Contains(res.Error, "before the plan reached this node") || !strings.Contains(res.Error, "nothing of it ran") {
		t.Fatalf("a plan past its deadline on arrival answered %+v", res)
	}
	// Sent again under its id: the first answer, not a run.
	if again := send(t, tab.ID(), late); again.Code != protocol.CodeExpired || !again.Duplicate {
		t.Fatalf("the expired plan sent again answered %+v", again)
	}

	// Expired in the mailbox: queued behind a plan that holds the tab,
	// it is answered at its deadline while the other still runs.
	replies := make(chan protocol.PlanResult, 2)
	ask := func(plan protocol.Plan) {
		res, err := request(testConn, tab.ID(), plan)
		if err != nil {
			t.Error(err)
		}
		replies <- res
	}
	go ask(protocol.Plan{ID: "holder", Action: &protocol.Action{Type: "wait-for", Selector: "#never", Timeout: protocol.Duration(50 * time.Second)}})
	waitUntil(t, func() bool { return len(tab.inbox) == 0 && tab.cancels.runningID() == "holder" })
	queued := protocol.Plan{ID: "queued", Deadline: time.Now().Add(300 * time.Millisecond),
		Actions: []protocol.Action{{Type: "eval", Expression: "window.queuedRan = true"}, {Type: "eval", Expression: "window.queuedRan2 = true"}}}
	go ask(queued)
	res = <-replies
	if res.PlanID != "queued" || res.OK || res.Code != protocol.CodeExpired || res.Executed != 0 || len(res.Results) != 0 ||
		!strings.Contains(res.Error, "before its first action (eval) could start") {
		t.Fatalf("a plan whose deadline passed in the mailbox answered %+v", res)
	}
	if id := tab.cancels.runningID(); id != "holder" {
		t.Fatalf("the queued plan was answered once the tab ran %q, not while it ran the holder", id)
	}
	data, _ := json.Marshal(protocol.CancelRequest{PlanID: "holder"})
	if _, err := testConn.Request(protocol.DefaultSubjects.TabCancel(tab.ID()), data, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if res := <-replies; res.PlanID != "holder" || res.Code != protocol.CodeCancelled {
		t.Fatalf("the holder answered %+v", res)
	}
	if again := send(t, tab.ID(), queued); again.Code != protocol.CodeExpired || !again.Duplicate {
		t.Fatalf("the plan expired in the mailbox, sent again: %+v", again)
	}

	// A repeat of the plan the tab runs, queued behind it, is not
	// answered expired at its deadline: it gets the run's result.
	first := protocol.Plan{ID: "same", Action: &protocol.Action{Type: "wait-for", Selector: "#never", Timeout: protocol.Duration(50 * time.Second)}}
	go ask(first)
	waitUntil(t, func() bool { return len(tab.inbox) == 0 && tab.cancels.runningID() == "same" })
	repeat := first
	repeat.Deadline = time.Now().Add(300 * time.Millisecond)
	go ask(repeat)
	waitUntil(t, func() bool { return len(tab.inbox) == 1 && time.Now().After(repeat.Deadline) })
	data, _ = json.Marshal(protocol.CancelRequest{PlanID: "same"})
	if _, err := testConn.Request(protocol.DefaultSubjects.TabCancel(tab.ID()), data, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	one, two := <-replies, <-replies
	if one.Duplicate {
		one, two = two, one
	}
	if one.Code != protocol.CodeCancelled || two.Code != protocol.CodeCancelled || !two.Duplicate {
		t.Fatalf("a plan and its repeat queued behind it past the repeat's deadline: %+v and %+v; want the run's result twice", one, two)
	}

	// Cut short at the deadline while running: the wait-for would wait
	// 90 s, the request waits 60 s at most (request), far more than the
	// deadline: an answer at all says it was cut there.
	running := protocol.Plan{ID: "running", Deadline: time.Now().Add(5 * time.Second), Actions: []protocol.Action{
		{Type: "wait-for", Selector: "#never", Timeout: protocol.Duration(90 * time.Second)},
		{Type: "eval", Expression: "window.afterRan = true"},
	}}
	res = send(t, tab.ID(), running)
	if res.OK || res.Code != protocol.CodeTimeout || len(res.Results) != 1 || res.Stopped == nil || res.Stopped.Index != 0 ||
		!strings.Contains(res.Results[0].Error, "cut short at plan running's deadline") {
		t.Fatalf("a plan whose action ran past its deadline answered %+v", res)
	}

	cmdExpect(t, tab, "[window.lateRan, window.queuedRan, window.queuedRan2, window.afterRan]", "[null,null,null,null]")
	// The eval just sent made the only frame since the navigation.
	if f := frames.next(); f.Sequence != seq+1 || f.Action != "eval" || f.PlanID != "" {
		t.Fatalf("the first frame after the refused plans: %+v, want the check's eval, %d", f, seq+1)
	}
}
