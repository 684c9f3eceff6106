package client_test

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/cutproxy"
	"github.com/framebus/framebus/protocol"
)

// planTab answers plans on tab as the node does: each plan id runs once
// (a frame per run), a repeated id gets the first result with duplicate
// true. It counts the runs of each id and the requests.
type planTab struct {
	mu       sync.Mutex
	runs     map[string]int
	results  map[string]protocol.PlanResult
	seq      int64
	requests atomic.Int64
	// hold, when set, is waited for before answering a first run (a
	// slow action), so the test can cut the connection meanwhile.
	hold chan struct{}
	// latest, when set, is told each frame once published, for
	// answerLatest: a watch back from a cut asks it, as it asks a node.
	latest *atomic.Int64
}

// Its frames follow frame after.
func answerPlans(t testing.TB, nc *nats.Conn, tab string, after int64) *planTab {
	t.Helper()
	p := &planTab{runs: map[string]int{}, results: map[string]protocol.PlanResult{}, seq: after}
	_, err := nc.Subscribe(subj.TabPlan(tab), func(m *nats.Msg) {
		p.requests.Add(1)
		var plan protocol.Plan
		_ = json.Unmarshal(m.Data, &plan)
		p.mu.Lock()
		if res, ok := p.results[plan.ID]; ok {
			p.mu.Unlock()
			res.Duplicate = true
			reply(m, res)
			return
		}
		p.runs[plan.ID]++
		p.seq++
		res := protocol.PlanResult{OK: true, Tab: tab, PlanID: plan.ID, Executed: 1, Sequence: p.seq}
		p.results[plan.ID] = res
		hold, latest := p.hold, p.latest
		p.mu.Unlock()
		publish(t, nc, frame(tab, res.Sequence))
		if latest != nil {
			latest.Store(res.Sequence)
		}
		if hold != nil {
			go func() { <-hold; reply(m, res) }()
			return
		}
		reply(m, res)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return p
}

func reply(m *nats.Msg, v any) {
	data, _ := protocol.Marshal(v)
	_ = m.Respond(data)
}

func evalPlan(id string) protocol.Plan {
	return protocol.Plan{ID: id, Action: &protocol.Action{Type: "eval", Expression: "1+1"}}
}

// The connection of an observer and an agent is cut again and again
// while the agent sends plans and the tab makes frames: the observer's
// frames have no gap and no duplicate, and every plan ran exactly once,
// each answered to the agent.
func TestCutsLoseNothing(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	frameHistory(t, node, 10_000)
	tab := answerPlans(t, node, "t1", 0)
	latest := answerLatest(t, node, "t1")
	tab.mu.Lock()
	tab.latest = latest
	tab.mu.Unlock()
	px := cutproxy.New(t, s.ClientURL())
	var disconnects atomic.Int64
	agent := connect(t, px.URL(), nil, nil)
	w, reconnects := watchFromOne(t, px.URL(), func(e client.Event) {
		if e.Kind == client.EventDisconnected {
			disconnects.Add(1)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()

	const plans, cuts = 60, 6
	got := make(chan []int64, 1)
	go func() {
		var seqs []int64
		for f := range w.Frames() {
			seqs = append(seqs, f.Sequence)
			if f.Sequence == plans {
				break
			}
		}
		got <- seqs
	}()
	for i := range plans {
		if i%(plans/cuts) == plans/cuts/2 {
			awaitCount(t, reconnects, int64(i/(plans/cuts))) // the observer is back from the cut before
			px.Cut()
		}
		res, err := agent.Plan(ctx, "t1", evalPlan(""))
		if err != nil || !res.OK {
			t.Fatalf("plan %d: %+v, %v", i, res, err)
		}
	}
	var seqs []int64
	select {
	case seqs = <-got:
	case <-ctx.Done():
		w.Stop() // so its error can be read: it never ends by itself
		t.Fatalf("the observer did not get all %d frames within %s: %v", plans, 2*wait, w.Err())
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("the observer's frames: %v; want 1..%d, each once", seqs, plans)
		}
	}
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if len(tab.runs) != plans {
		t.Errorf("%d plan ids ran, want %d", len(tab.runs), plans)
	}
	for id, n := range tab.runs {
		if n != 1 {
			t.Errorf("plan %s ran %d times", id, n)
		}
	}
	if disconnects.Load() < cuts || reconnects.Load() < cuts {
		t.Errorf("%d disconnects and %d reconnects reported, want %d of each", disconnects.Load(), reconnects.Load(), cuts)
	}
}

// A cut while the tab runs a plan loses its answer: the client sends the
// same id again once it is back, the tab answers the first result with
// duplicate true, and the plan ran once.
func TestPlanResentAfterLostAnswer(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	frameHistory(t, node, 100)
	tab := answerPlans(t, node, "t1", 0)
	tab.hold = make(chan struct{})
	px := cutproxy.New(t, s.ClientURL())
	agent := connect(t, px.URL(), nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	done := make(chan error, 1)
	var res protocol.PlanResult
	go func() {
		var err error
		res, err = agent.Plan(ctx, "t1", evalPlan("p-lost"))
		done <- err
	}()
	awaitCount(t, &tab.requests, 1)
	px.Cut()
	awaitCount(t, &tab.requests, 2) // sent again after the reconnect: answered as a duplicate
	close(tab.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.PlanID != "p-lost" || !res.Duplicate {
		t.Fatalf("result %+v, want the first run's, duplicate", res)
	}
	if tab.runs["p-lost"] != 1 {
		t.Fatalf("ran %d times", tab.runs["p-lost"])
	}
}

// A plan sent while the bus cannot be reached waits, and is sent when
// the connection is back; a context that ends first ends it.
func TestPlanWaitsForTheConnection(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	tab := answerPlans(t, node, "t1", 0)
	px := cutproxy.New(t, s.ClientURL())
	down := make(chan struct{}, 8)
	agent := connect(t, px.URL(), nil, func(e client.Event) {
		if e.Kind == client.EventDisconnected {
			down <- struct{}{}
		}
	})
	px.SetDown(true)
	select {
	case <-down:
	case <-time.After(wait):
		t.Fatal("no disconnect reported")
	}

	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	if _, err := agent.Plan(short, "t1", evalPlan("p-given-up")); codeOf(err) != protocol.CodeUnavailable {
		t.Fatalf("a plan whose context ends while the bus is away: %v, want unavailable", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := agent.Plan(ctx, "t1", evalPlan("p-waits"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the plan returned while the bus was away: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	px.SetDown(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if tab.runs["p-waits"] != 1 || tab.runs["p-given-up"] != 0 {
		t.Fatalf("runs %v, want p-waits once, p-given-up never", tab.runs)
	}
}

func awaitCount(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for n.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("count %d, want %d", n.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The server restarts (file storage, same port) while an observer
// watches and an agent sends plans: the observer resumes after its last
// frame, with no gap and no duplicate (frames published again after the
// restart are stored once), and the plan sent meanwhile runs once.
func TestServerRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, -1, dir)
	port := s.Addr().(*net.TCPAddr).Port
	node := nodeConn(t, s)
	frameHistoryIn(t, node, 1000, jetstream.FileStorage)
	for seq := int64(1); seq <= 20; seq++ {
		publish(t, node, frame("t1", seq))
	}
	agent := connect(t, s.ClientURL(), nil, nil)
	w, reconnects := watchFromOne(t, s.ClientURL(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	for seq := int64(1); seq <= 20; seq++ {
		if f := next(t, w); f.Sequence != seq {
			t.Fatalf("frame %d, want %d", f.Sequence, seq)
		}
	}

	s.Shutdown()
	s.WaitForShutdown()
	planned := make(chan error, 1)
	go func() { // sent while the server is away
		_, err := agent.Plan(ctx, "t1", evalPlan("p-restart"))
		planned <- err
	}()
	s = startServer(t, port, dir)
	node = nodeConn(t, s)
	tab := answerPlans(t, node, "t1", 20)
	awaitCount(t, reconnects, 1)
	if err := <-planned; err != nil {
		t.Fatal(err)
	}
	for seq := int64(15); seq <= 30; seq++ { // 15..20 again: stored once
		if seq != 21 { // 21 is the plan's frame
			publish(t, node, frame("t1", seq))
		}
	}
	for seq := int64(21); seq <= 30; seq++ {
		if f := next(t, w); f.Sequence != seq {
			t.Fatalf("after the restart: frame %d, want %d", f.Sequence, seq)
		}
	}
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if tab.runs["p-restart"] != 1 {
		t.Fatalf("the plan ran %d times", tab.runs["p-restart"])
	}
}

// answerLatest answers a question for tab's last published frame as
// the node does (protocol.ContentRequest.Latest), with the sequence the
// test stores in the result: a watch that reconnects after frames were
// published and before they were stored learns from it that they are
// to come (bus/client/latest.go).
func answerLatest(t testing.TB, nc *nats.Conn, tab string) *atomic.Int64 {
	t.Helper()
	latest := new(atomic.Int64)
	_, err := nc.Subscribe(subj.TabContent(tab), func(m *nats.Msg) {
		var req protocol.ContentRequest
		if json.Unmarshal(m.Data, &req) == nil && req.Latest {
			reply(m, protocol.ContentReply{OK: true, Sequence: latest.Load()})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return latest
}

// watchFromOne connects an observer to url and watches t1 from frame 1:
// its reconnects are counted, a gap fails the test, and other events go
// to events too (when not nil).
func watchFromOne(t *testing.T, url string, events func(client.Event)) (*client.Watcher, *atomic.Int64) {
	t.Helper()
	reconnects := new(atomic.Int64)
	observer := connect(t, url, nil, func(e client.Event) {
		switch e.Kind {
		case client.EventReconnected:
			reconnects.Add(1)
		case client.EventGap:
			t.Errorf("gap: %+v", e)
		}
		if events != nil {
			events(e)
		}
	})
	w, err := observer.Watch(context.Background(), "t1", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w, reconnects
}

// The server restarts without its memory: the frame stream comes back
// empty, its stream sequences from 1 again, and the tab goes on from
// frame 21. The observer, kept away until frames 21 to 25 are stored,
// finds frame 21 in the new stream by its frame sequence, not by the
// stream position it had: 21 to 25, each once, no gap. (Resuming at the
// old stream position, 21, would wait for a 21st message in the new
// stream.)
func TestServerRestartWithoutMemory(t *testing.T) {
	s := startServer(t, -1, t.TempDir())
	port := s.Addr().(*net.TCPAddr).Port
	node := nodeConn(t, s)
	frameHistory(t, node, 1000)
	for seq := int64(1); seq <= 20; seq++ {
		publish(t, node, frame("t1", seq))
	}
	px := cutproxy.New(t, s.ClientURL())
	w, reconnects := watchFromOne(t, px.URL(), nil)
	for seq := int64(1); seq <= 20; seq++ {
		if f := next(t, w); f.Sequence != seq {
			t.Fatalf("frame %d, want %d", f.Sequence, seq)
		}
	}
	px.SetDown(true)
	s.Shutdown()
	s.WaitForShutdown()
	s = startServer(t, port, t.TempDir())
	node = nodeConn(t, s)
	js := frameHistory(t, node, 1000)
	latest := answerLatest(t, node, "t1")
	for seq := int64(21); seq <= 25; seq++ {
		publish(t, node, frame("t1", seq))
		latest.Store(seq)
	}
	awaitStored(t, js, 5)
	px.SetDown(false)
	awaitCount(t, reconnects, 1)
	for seq := int64(21); seq <= 25; seq++ {
		if f := next(t, w); f.Sequence != seq {
			t.Fatalf("after the restart: frame %d, want %d", f.Sequence, seq)
		}
	}
}
