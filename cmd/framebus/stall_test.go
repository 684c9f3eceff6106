package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// A plan that is with the tab when its node freezes (one running, one
// queued behind it) starts nothing after the node comes back: the
// browser, which does not freeze with the node, finishes the running
// action meanwhile, and the queued plan's turn would come the moment the
// node reads that answer, before it reads the cancel a client that gave
// up left for it. The two plans here are plain requests (no liveness
// check, no cancel), so only the node can stop them. A client that gives
// up on the frozen node meanwhile is told that its plan may have run.
func TestStallStopsThePlansItHeld(t *testing.T) {
	n := startNode(t, envNode+"=held")
	tab := n.tab()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	bc, err := busclient.Connect(ctx, busclient.Options{CredentialsFile: n.credsFile(serving.AgentCredsFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	if _, err := bc.Tabs(ctx); err != nil { // the client knows the tab's node
		t.Fatal(err)
	}

	// Sent in order on one connection, taken in order by the tab's plan
	// endpoint: once the malformed plan is answered, the two before it
	// are with the tab, the first running.
	nc := bc.Conn()
	send := func(data []byte) *nats.Subscription {
		inbox := nc.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.PublishRequest(bc.Subjects().TabPlan(tab), inbox, data); err != nil {
			t.Fatal(err)
		}
		return sub
	}
	mustPlan := func(p protocol.Plan) []byte {
		data, err := protocol.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// The running action waits on a request the test answers once the
	// node is frozen: the browser finishes it then, however slow the
	// machine.
	reached, release := make(chan struct{}, 1), make(chan struct{})
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case reached <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hold.Close()
	released := sync.OnceFunc(func() { close(release) })
	defer released() // first: a handler still waiting lets Close return
	running := send(mustPlan(protocol.Plan{ID: "held-running", Actions: []protocol.Action{
		{Type: "eval", Expression: fmt.Sprintf("fetch(%q, {mode: 'no-cors'}).then(() => window.__first = 1)", hold.URL+"/hold")},
		{Type: "eval", Expression: "window.__second = 1"},
	}}))
	queued := send(mustPlan(protocol.Plan{ID: "held-queued", Action: &protocol.Action{Type: "eval", Expression: ranMark}}))
	malformed := send([]byte("{"))
	if m, err := malformed.NextMsg(testscale.D(time.Minute)); err != nil || !strings.Contains(string(m.Data), string(protocol.CodeBadRequest)) {
		t.Fatalf("the malformed plan: %v %v", m, err)
	}
	select {
	case <-reached:
	case <-time.After(testscale.D(time.Minute)):
		t.Fatal("the running eval did not reach the hold server")
	}

	thaw := freezeProcess(t, n.process)
	start := time.Now()
	_, err = bc.Plan(ctx, tab, protocol.Plan{ID: "given-up", Action: &protocol.Action{Type: "eval", Expression: ranMark}})
	t.Logf("a plan to the frozen node: %s after %s: %v", protocol.CodeOf(err), time.Since(start).Round(10*time.Millisecond), err)
	if protocol.CodeOf(err) != protocol.CodeNodeUnavailable || !errors.Is(err, busclient.ErrNodeNotLive) ||
		!strings.Contains(err.Error(), "Plan given-up may have run, in whole or in part") || !strings.Contains(err.Error(), "framebus frames --tab "+tab) {
		t.Errorf("a plan to the frozen node: %v; want node_unavailable saying that it may have run and where to look", err)
	}
	released() // the running action ends while the node is frozen
	thaw()

	for _, held := range []struct {
		id  string
		sub *nats.Subscription
	}{{"held-running", running}, {"held-queued", queued}} {
		m, err := held.sub.NextMsg(testscale.D(time.Minute))
		if err != nil {
			t.Fatalf("plan %s: no answer after the thaw: %v", held.id, err)
		}
		var res protocol.PlanResult
		if err := json.Unmarshal(m.Data, &res); err != nil || res.OK || res.Code != protocol.CodeNodeUnavailable || !strings.Contains(res.Error, "stood still") {
			t.Errorf("plan %s, with the tab across the freeze: %s; want node_unavailable, stood still", held.id, m.Data)
		}
	}
	var res protocol.PlanResult
	waitFor(t, "the thawed node's tab answers", 60*time.Second, func() bool {
		pctx, cancel := context.WithTimeout(ctx, testscale.D(10*time.Second))
		defer cancel()
		res, err = bc.Plan(pctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "`${window.__second ?? 0} ${window.__ran ?? 0}`"}})
		return err == nil && res.OK
	})
	if v := string(res.Results[0].Value); v != `"0 0"` {
		t.Errorf("after the thaw, the page's second action and queued plans ran (second, runs): %s", v)
	}
}

// A plan that ran, sent again under its id as the node comes back from
// standing still (a client that reconnected and resends, its answer lost),
// is answered with its run's result, not refused as a plan that "did not
// run".
func TestStallKeepsARunPlansResult(t *testing.T) {
	n := startNode(t, envNode+"=resent")
	tab := n.tab()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	bc, err := busclient.Connect(ctx, busclient.Options{CredentialsFile: n.credsFile(serving.AgentCredsFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	if _, err := bc.Tabs(ctx); err != nil {
		t.Fatal(err)
	}
	ran := protocol.Plan{ID: "ran-before", Action: &protocol.Action{Type: "eval", Expression: ranMark}}
	if res, err := bc.Plan(ctx, tab, ran); err != nil || !res.OK {
		t.Fatalf("the plan: %+v %v", res, err)
	}
	data, err := protocol.Marshal(ran)
	if err != nil {
		t.Fatal(err)
	}

	thaw := freezeProcess(t, n.process)
	// Frozen until a client gives up on it: long enough to count as a stall.
	if _, err := bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: ranMark}}); !errors.Is(err, busclient.ErrNodeNotLive) {
		t.Fatalf("a plan to the frozen node: %v; want ErrNodeNotLive", err)
	}
	nc := bc.Conn()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest(bc.Subjects().TabPlan(tab), inbox, data); err != nil {
		t.Fatal(err)
	}
	thaw()
	m, err := sub.NextMsg(testscale.D(time.Minute))
	if err != nil {
		t.Fatalf("plan %s sent again: no answer: %v", ran.ID, err)
	}
	var res protocol.PlanResult
	if err := json.Unmarshal(m.Data, &res); err != nil || !res.OK || !res.Duplicate || len(res.Results) != 1 || string(res.Results[0].Value) != "1" {
		t.Errorf("plan %s, which ran, sent again as the node came back: %s; want its run's result", ran.ID, m.Data)
	}
}
