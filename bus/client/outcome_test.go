package client_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/internal/cutproxy"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A plan carries its call's deadline, a moment before it, or its own
// when that is earlier (which then bounds the call too); a plan that was
// sent and got no answer, whether its tab is silent or the connection
// was lost for the rest of the call, is outcome_unknown naming its id.
func TestPlanDeadlineAndLostAnswer(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	got := make(chan protocol.Plan, 8)
	if _, err := node.Subscribe(subj.TabPlan("t1"), func(m *nats.Msg) {
		plan, err := protocol.DecodePlan(m.Data)
		if err != nil {
			t.Error(err)
		}
		got <- plan // and never answered
	}); err != nil {
		t.Fatal(err)
	}
	if err := node.Flush(); err != nil {
		t.Fatal(err)
	}
	px := cutproxy.New(t, s.ClientURL())
	agent := connect(t, px.URL(), nil, nil)
	unknown := func(err error, id string) {
		t.Helper()
		if codeOf(err) != protocol.CodeOutcomeUnknown || !strings.Contains(err.Error(), "plan "+id+" ") || !strings.Contains(err.Error(), "framebus frames --tab t1") {
			t.Fatalf("plan %s without an answer: %v; want outcome_unknown naming it", id, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Second))
	end, _ := ctx.Deadline()
	_, err := agent.Plan(ctx, "t1", evalPlan("p-silent"))
	cancel()
	unknown(err, "p-silent")
	if p := <-got; p.ID != "p-silent" || !p.Deadline.Before(end) || p.Deadline.Before(end.Add(-2*time.Second)) {
		t.Fatalf("the tab got plan %s with deadline %v; want one before the call's, %v", p.ID, p.Deadline, end)
	}

	own := evalPlan("p-own")
	own.Deadline = time.Now().Add(500 * time.Millisecond)
	ctx, cancel = context.WithTimeout(context.Background(), testscale.D(time.Minute))
	_, err = agent.Plan(ctx, "t1", own)
	callLeft := ctx.Err() == nil
	cancel()
	unknown(err, "p-own")
	if p := <-got; !p.Deadline.Equal(own.Deadline) || !callLeft {
		t.Fatalf("a plan with its own deadline %v reached the tab with %v (its call ended by it: %v)", own.Deadline, p.Deadline, callLeft)
	}

	ctx, cancel = context.WithTimeout(context.Background(), testscale.D(2*time.Second))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := agent.Plan(ctx, "t1", evalPlan("p-cut"))
		done <- err
	}()
	if p := <-got; p.ID != "p-cut" {
		t.Fatalf("the tab got %s", p.ID)
	}
	px.SetDown(true) // cut, and not back before the call ends
	unknown(<-done, "p-cut")

	// Never sent: the bus is still away when the call ends.
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = agent.Plan(ctx, "t1", evalPlan("p-unsent"))
	if codeOf(err) != protocol.CodeUnavailable || !strings.Contains(err.Error(), "plan p-unsent was not sent to tab t1") || !strings.Contains(err.Error(), "it did not run, and will not") {
		t.Fatalf("a plan the call never sent: %v", err)
	}
	select {
	case p := <-got:
		t.Fatalf("the tab got plan %s, which was never sent", p.ID)
	default:
	}
}

// A plan sent, its connection lost, and sent again to a tab on its way
// back after its node restarted is answered "not taken" (unavailable)
// for that send; the first may have been begun by the old node. The
// client sends it again until the tab answers for the id (here the
// restored tab's outcome_unknown, duplicate), never handing "not taken"
// to its caller, who would send it anew; a tab that does not come back
// within the deadline is outcome_unknown. A plan whose first send is
// answered "not taken" is so.
func TestPlanResentToATabOnItsWayBack(t *testing.T) {
	t.Parallel()
	onItsWayBack := []byte(`{"ok":false,"code":"unavailable","error":"tab t1 is on its way back: ... this request was not taken"}`)
	begun, _ := protocol.Marshal(protocol.PlanResult{Version: protocol.Version, Tab: "t1", PlanID: "p-begun", Duplicate: true,
		Code: protocol.CodeOutcomeUnknown, Error: "plan p-begun began before the tab's node restarted", Results: []protocol.ActionResult{}})
	s := testServer(t)
	node := nodeConn(t, s)
	px := cutproxy.New(t, s.ClientURL())
	var asked atomic.Int64
	back := atomic.Bool{}
	if _, err := node.Subscribe(subj.TabPlan("t1"), func(m *nats.Msg) {
		switch n := asked.Add(1); {
		case n == 1:
			px.Cut() // the old node took it, and died
		case n == 2 || !back.Load():
			_ = m.Respond(onItsWayBack)
		default:
			_ = m.Respond(begun)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := node.Flush(); err != nil {
		t.Fatal(err)
	}
	agent := connect(t, px.URL(), nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	go func() {
		for asked.Load() < 3 {
			time.Sleep(10 * time.Millisecond)
		}
		back.Store(true) // the tab is back after a few "not taken"
	}()
	res, err := agent.Plan(ctx, "t1", evalPlan("p-begun"))
	if err != nil || !res.Duplicate || res.Code != protocol.CodeOutcomeUnknown {
		t.Fatalf("a plan resent to a tab on its way back: %+v %v (asked %d times); want the restored tab's outcome_unknown", res, err, asked.Load())
	}

	back.Store(false)
	asked.Store(0)
	short, cancelShort := context.WithTimeout(context.Background(), testscale.D(2*time.Second))
	defer cancelShort()
	_, err = agent.Plan(short, "t1", evalPlan("p-never-back"))
	if codeOf(err) != protocol.CodeOutcomeUnknown || !strings.Contains(err.Error(), "p-never-back") {
		t.Fatalf("a plan resent to a tab that stays on its way back: %v; want outcome_unknown naming it", err)
	}

	asked.Store(1) // the next is answered "not taken" at once
	res, err = agent.Plan(ctx, "t1", evalPlan("p-fresh"))
	if err != nil || res.Code != protocol.CodeUnavailable || asked.Load() != 2 {
		t.Fatalf("a plan whose only send was not taken: %+v %v (asked %d times); want unavailable, sent once", res, err, asked.Load())
	}
}
