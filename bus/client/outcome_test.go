package client_test

import (
	"context"
	"strings"
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
