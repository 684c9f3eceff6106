package client_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/cutproxy"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A node the registry names that does not answer (an entry written as a
// node that died a moment ago would have left it) is in the gathered
// tabs, status and session list as unreachable, never left out; once
// the bucket forgets it, it is gone from them. A plan to a tab its last
// listing put on a node that is gone is node_unavailable, naming it; to
// a tab no node ever listed, tab_not_found.
func TestGatherReportsUnreachableNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	node, err := actors.StartNode(ctx, actors.NodeOptions{Name: "live", Launch: cdpdriver.LaunchOptions{Headless: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	agentCreds := bustest.AddUser(t, node.Bus(), protocol.RoleAgent)
	agent := connect(t, agentCreds.URL, &agentCreds, nil)

	list, err := agent.Tabs(ctx)
	if err != nil || len(list.Nodes) != 1 || list.Nodes[0] != (protocol.NodeState{Node: "live", State: protocol.NodeAnswered}) || list.Tabs[0].Node != "live" {
		t.Fatalf("tabs of one node: %+v %v", list, err)
	}

	// The ghost: an entry in the registry, and nothing on the bus.
	admin := bustest.Connect(t, node.Bus(), protocol.RoleAdmin)
	js, _ := jetstream.New(admin)
	kv, err := js.KeyValue(ctx, node.Subjects().NodesBucket())
	if err != nil {
		t.Fatal(err)
	}
	// It renews its entry, as a node that hangs without answering would,
	// until the test stops it.
	ghost, _ := json.Marshal(protocol.NodeEntry{Node: "ghost", Host: "nowhere", PID: 1})
	rev, err := kv.Create(ctx, "ghost", ghost)
	if err != nil {
		t.Fatal(err)
	}
	stopGhost := make(chan struct{})
	ghostStopped := make(chan struct{})
	go func() {
		defer close(ghostStopped)
		for {
			select {
			case <-stopGhost:
				return
			case <-time.After(protocol.NodeHeartbeat / 2):
				uctx, ucancel := context.WithTimeout(context.Background(), testscale.D(5*time.Second))
				next, err := kv.Update(uctx, "ghost", ghost, rev)
				ucancel()
				if err != nil {
					t.Errorf("renew the ghost: %v", err)
					return
				}
				rev = next
			}
		}
	}()
	t.Cleanup(func() { // when the test fails before it stops the ghost
		select {
		case <-stopGhost:
		default:
			close(stopGhost)
		}
		<-ghostStopped
	})
	wantStates := func(got []protocol.NodeState, want ...protocol.NodeState) bool {
		return slices.EqualFunc(got, want, func(g, w protocol.NodeState) bool { return g.Node == w.Node && g.State == w.State })
	}
	live := protocol.NodeState{Node: "live", State: protocol.NodeAnswered}
	gone := protocol.NodeState{Node: "ghost", State: protocol.NodeUnreachable}
	deadline := time.Now().Add(testscale.D(10 * time.Second)) // the node's watch sees the ghost
	for {
		list, err = agent.Tabs(ctx)
		if err == nil && wantStates(list.Nodes, gone, live) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tabs with a ghost in the registry: %+v %v", list, err)
		}
	}
	st, err := agent.Status(ctx)
	if err != nil || !wantStates(st.Nodes, gone, live) || st.Profiles[0].Node != "live" || st.Nodes[0].Limits != nil || st.Nodes[1].Limits == nil {
		t.Fatalf("status with a ghost: %+v %v", st, err)
	}
	sl, err := agent.Sessions(ctx)
	if err != nil || !wantStates(sl.Nodes, gone, live) {
		t.Fatalf("sessions with a ghost: %+v %v", sl, err)
	}

	close(stopGhost)
	<-ghostStopped
	// No one renews it: within NodeTTL (and a second for the server's
	// expiry timer) it is gone from the registry, and once the node has
	// seen it go (its registry watch), the gather ends as soon as the
	// live node answered.
	waitForGone := time.Now().Add(testscale.D(protocol.NodeTTL + 10*time.Second))
	for {
		list, err = agent.Tabs(ctx)
		if err == nil && wantStates(list.Nodes, live) {
			break
		}
		if time.Now().After(waitForGone) {
			t.Fatalf("tabs once the ghost expired: %+v %v", list, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A tab no node ever listed.
	_, err = agent.Plan(ctx, "NOSUCHTAB", protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1"}})
	if codeOf(err) != protocol.CodeTabNotFound {
		t.Fatalf("a plan to an unknown tab: %v", err)
	}
}

// A gathered read (tabs, status, sessions) whose connection is lost
// before any node answered is sent again once the client is back,
// instead of failing "the connection was lost": the stand-in node cuts
// the client's connection at the first request and answers the second.
func TestGatherGoesOnThroughACut(t *testing.T) {
	t.Parallel()
	tabs, _ := protocol.Marshal(protocol.TabList{OK: true, Node: "n1", Tabs: []protocol.TabInfo{{Tab: "t1", Node: "n1", Sequence: 3}}})
	px, asked := cutAtFirstRequest(t, tabs, subj.Tabs())
	agent := connect(t, px.URL(), nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	list, err := agent.Tabs(ctx)
	if err != nil || len(list.Tabs) != 1 || list.Tabs[0].Tab != "t1" || asked.Load() != 2 {
		t.Fatalf("tabs through a cut: %+v %v (asked %d times); want the second answer", list, err, asked.Load())
	}
}

// A request that only reads (here the tab's latest frame, on its content
// subject) whose answer is lost with the connection is sent again once
// it is back; one that may change something (a new tab) is not, and
// says the node may have carried it out.
func TestReadOnlyRequestGoesOnThroughACut(t *testing.T) {
	t.Parallel()
	px, asked := cutAtFirstRequest(t, []byte(`{"ok":true,"sequence":7}`), subj.TabContent("t1"), subj.Browser(protocol.DefaultProfile, protocol.OpNewTab))
	agent := connect(t, px.URL(), nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var r protocol.ContentReply
	if err := agent.Request(ctx, subj.TabContent("t1"), protocol.ContentRequest{Latest: true}, &r); err != nil || r.Sequence != 7 || asked.Load() != 2 {
		t.Fatalf("the latest frame through a cut: %+v %v (asked %d times); want the second answer", r, err, asked.Load())
	}
	asked.Store(0)
	err := agent.Request(ctx, subj.Browser(protocol.DefaultProfile, protocol.OpNewTab), nil, nil)
	if codeOf(err) != protocol.CodeUnavailable || !strings.Contains(err.Error(), "may have carried the request out") || asked.Load() != 1 {
		t.Fatalf("a new tab through a cut: %v (asked %d times); want unavailable, not sent again", err, asked.Load())
	}
}

// cutAtFirstRequest is a server with a stand-in node answering subjects
// and a proxy to it: the first request on any of them cuts the proxy's
// connections and gets no answer, the next ones get answer. asked counts
// the requests.
func cutAtFirstRequest(t *testing.T, answer []byte, subjects ...string) (px *cutproxy.Proxy, asked *atomic.Int64) {
	t.Helper()
	s := testServer(t)
	node := nodeConn(t, s)
	px = cutproxy.New(t, s.ClientURL())
	asked = new(atomic.Int64)
	for _, subject := range subjects {
		if _, err := node.Subscribe(subject, func(m *nats.Msg) {
			if asked.Add(1) == 1 {
				px.Cut() // and no answer
				return
			}
			_ = m.Respond(answer)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := node.Flush(); err != nil {
		t.Fatal(err)
	}
	return px, asked
}
