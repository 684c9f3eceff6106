package actors

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// A plan is cancelled by its id on the tab's cancel subject: the running
// one is cut short at once and answered cancelled, one still queued is
// answered cancelled when its turn comes, and the tab goes on at once.
func TestCancelAPlan(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	cancel := func(id string) protocol.CancelReply {
		t.Helper()
		data, _ := json.Marshal(protocol.CancelRequest{PlanID: id})
		msg, err := testConn.Request(protocol.DefaultSubjects.TabCancel(tab.ID()), data, 10*time.Second)
		if err != nil {
			t.Fatalf("cancel %s: %v", id, err)
		}
		var r protocol.CancelReply
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	replies := make(chan protocol.PlanResult, 2)
	ask := func(plan protocol.Plan) {
		data, _ := json.Marshal(plan)
		msg, err := testConn.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 60*time.Second)
		if err != nil {
			t.Errorf("plan %s: %v", plan.ID, err)
			replies <- protocol.PlanResult{}
			return
		}
		res, _ := protocol.DecodePlanResult(msg.Data)
		replies <- res
	}
	go ask(protocol.Plan{ID: "long", Actions: []protocol.Action{
		{Type: "wait-for", Selector: "#never", Timeout: protocol.Duration(50 * time.Second)},
		{Type: "eval", Expression: "window.ranAfter = true"},
	}})
	waitUntil(t, func() bool { return len(tab.inbox) == 0 && tab.cancels.runningID() == "long" })
	// Queued behind it, and cancelled before its turn.
	if r := cancel("queued"); !r.OK || r.Cancelled {
		t.Fatalf("cancel of a plan not running yet: %+v", r)
	}
	go ask(protocol.Plan{ID: "queued", Action: &protocol.Action{Type: "eval", Expression: "window.queuedRan = true"}})
	waitUntil(t, func() bool { return len(tab.inbox) == 1 })
	if r := cancel("long"); !r.OK || !r.Cancelled {
		t.Fatalf("cancel of the running plan: %+v", r)
	}
	for range 2 {
		res := <-replies
		if res.OK || res.Code != protocol.CodeCancelled || !strings.Contains(res.Error, "cancelled") {
			t.Fatalf("a cancelled plan answered %+v", res)
		}
		if res.PlanID == "long" && (len(res.Results) != 1 || res.Results[0].Code != protocol.CodeCancelled) {
			t.Fatalf("the running plan's results: %+v", res)
		}
	}
	cmdExpect(t, tab, "[window.ranAfter, window.queuedRan]", "[null,null]")
	if r := cancel("long"); !r.OK || r.Cancelled {
		t.Fatalf("cancel of a plan that ended: %+v", r)
	}
	// A cancel without a plan id is a bad request.
	msg, err := testConn.Request(protocol.DefaultSubjects.TabCancel(tab.ID()), []byte(`{}`), 10*time.Second)
	if err != nil || !strings.Contains(string(msg.Data), "bad_request") {
		t.Fatalf("cancel {}: %s %v", msg.Data, err)
	}
}
