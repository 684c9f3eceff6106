package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/cutproxy"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// startNode starts a real node (headless Chromium, its frame history,
// authentication), and names its first tab.
func startNode(t *testing.T, ctx context.Context) (*actors.Node, string) {
	t.Helper()
	node, err := actors.StartNode(ctx, actors.NodeOptions{Launch: cdpdriver.LaunchOptions{Headless: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	return node, node.Tabs()[0].Tab
}

// A real node (headless Chromium, its frame history, authentication):
// an observer (role observer)
// replays a tab's frames from 1 and follows, an agent (role agent) sends plans, and
// the connection of both is cut again and again. The observer's frames
// have no gap and no duplicate, and each plan ran once: every eval makes
// one frame, so the tab's sequence grows by exactly one per plan.
func TestRealNodeThroughCuts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	node, tab := startNode(t, ctx)
	px := cutproxy.New(t, node.Bus().ClientURL())
	var reconnects atomic.Int64
	observerCreds := bustest.AddUser(t, node.Bus(), protocol.RoleObserver)
	agentCreds := bustest.AddUser(t, node.Bus(), protocol.RoleAgent)
	observer := connect(t, px.URL(), &observerCreds, func(e client.Event) {
		switch e.Kind {
		case client.EventReconnected:
			reconnects.Add(1)
		case client.EventGap:
			t.Errorf("gap: %+v", e)
		}
	})
	agent := connect(t, px.URL(), &agentCreds, nil)

	eval := func(i int) protocol.PlanResult {
		t.Helper()
		res, err := agent.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}})
		if err != nil || !res.OK {
			t.Fatalf("plan %d: %+v, %v", i, res, err)
		}
		return res
	}
	seq := int64(1)
	for i := range 5 { // frames stored before the observer comes
		if res := eval(i); res.Sequence != seq+1 {
			t.Fatalf("plan %d: sequence %d, want %d", i, res.Sequence, seq+1)
		}
		seq++
	}
	w, err := observer.Watch(ctx, tab, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const plans, every = 20, 5
	for i := range plans {
		if i%every == 2 {
			awaitCount(t, &reconnects, int64(i/every))
			px.Cut()
		}
		if res := eval(i); res.Sequence != seq+1 {
			t.Fatalf("plan %d: the tab is at %d, want %d: a plan ran twice, or not at all", i, res.Sequence, seq+1)
		}
		seq++
	}
	for want := int64(1); want <= seq; want++ {
		if f := next(t, w); f.Tab != tab || f.Sequence != want {
			t.Fatalf("the observer got frame %d, want %d", f.Sequence, want)
		}
	}
}
