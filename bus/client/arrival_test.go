package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A tab opened on a node at one member of a cluster takes plans there at
// once, but its subscription reaches the other members a moment later:
// an agent at another member that sends a plan to a tab it was just
// told of (here by the agent at the node's member that opened it) gets
// no responders from NATS. The client sends it again while
// a live node lists the tab, so every plan sent right after its tab new
// runs (without that, some were tab_not_found).
func TestPlanToATabJustOpenedAtAnotherMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	listen, routes := bustest.ClusterRoutes(t, 2)
	member := func(i int, name string) bus.Options {
		return bus.Options{Name: name, Cluster: &bus.ClusterOptions{Listen: listen[i], Routes: routes, Secret: "arrival-cluster-secret"}}
	}
	other := member(1, "other")
	other.JetStream = &bus.JetStreamOptions{}
	far, err := bus.Start(other)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { far.Close() })
	node, err := actors.StartNode(ctx, actors.NodeOptions{Name: "near", Bus: member(0, "near"),
		Launch: cdpdriver.LaunchOptions{Headless: true}, History: actors.HistoryOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	creds := bustest.AddUser(t, node.Bus(), protocol.RoleAgent)
	opener := connect(t, creds.URL, &creds, nil) // at the node's own member
	creds.URL = far.ClientURL()
	var agent *client.Client
	deadline := time.Now().Add(wait)
	for agent == nil { // until the other member has followed the shared users
		cctx, ccancel := context.WithTimeout(ctx, testscale.D(time.Second))
		agent, err = client.Connect(cctx, client.Options{URL: creds.URL, Credentials: &creds})
		ccancel()
		if err != nil && time.Now().After(deadline) {
			t.Fatalf("the agent at the other member: %v", err)
		}
	}
	t.Cleanup(agent.Close)

	const tabs = 10
	failed := 0
	for i := range tabs {
		tab, err := opener.NewTab(ctx, protocol.DefaultProfile, "about:blank")
		if err != nil {
			t.Fatalf("tab new %d: %v", i, err)
		}
		res, err := agent.Plan(ctx, tab.Tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}})
		if err != nil || !res.OK {
			failed++
			t.Logf("plan %d, right after its tab new: %+v %v", i, res, err)
		}
		if _, err := agent.CloseTab(ctx, protocol.DefaultProfile, tab.Tab); err != nil {
			t.Fatalf("close tab %d: %v", i, err)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d plans sent right after their tab new failed", failed, tabs)
	}
}

// A plan to a tab that a live node lists, while nothing at the client's
// server answers for it yet (its subscription on its way from another
// member), is sent again until the tab answers: here a stand-in node
// lists T1 at once and T1's own subscription comes 300 ms later. Without
// the resend the plan is tab_not_found. A tab listed whose subscription
// never comes is unavailable, saying so, within the client's bound; a
// tab no node lists is tab_not_found at once.
func TestPlanWaitsForATabOnItsWay(t *testing.T) {
	s := testServer(t, nodeUser())
	nc := nodeConn(t, s)
	listed := []protocol.TabInfo{{Tab: "T1", Node: "n1", Sequence: 1}, {Tab: "T2", Node: "n1", Sequence: 1}}
	answer := func(subject string, reply any) {
		if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
			data, _ := json.Marshal(reply)
			_ = m.Respond(data)
		}); err != nil {
			t.Fatal(err)
		}
	}
	answer(subj.Tabs(), protocol.TabList{OK: true, Node: "n1", Tabs: listed})
	answer(subj.NodeProfile("n1", protocol.DefaultProfile, protocol.OpStatus), map[string]any{"ok": true})
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := connect(t, s.ClientURL(), &protocol.Credentials{User: "node", Password: "node-secret"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	eval := protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}}

	arrives := time.AfterFunc(300*time.Millisecond, func() {
		answer(subj.TabPlan("T1"), protocol.PlanResult{OK: true, Tab: "T1", Sequence: 2})
	})
	defer arrives.Stop()
	res, err := c.Plan(ctx, "T1", eval)
	if err != nil || !res.OK || res.Sequence != 2 {
		t.Fatalf("a plan to a listed tab whose subscription comes 300 ms later: %+v %v", res, err)
	}

	_, err = c.Plan(ctx, "T2", eval)
	if codeOf(err) != protocol.CodeUnavailable || !errors.Is(err, client.ErrTabNotHereYet) || !strings.Contains(err.Error(), "node n1") {
		t.Fatalf("a plan to a listed tab that never answers: %v", err)
	}
	_, err = c.Plan(ctx, "T3", eval)
	if codeOf(err) != protocol.CodeTabNotFound {
		t.Fatalf("a plan to a tab no node lists: %v", err)
	}
}
