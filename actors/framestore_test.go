package actors

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A tab makes frames steadily on a cluster of three whose frame stream
// has three replicas, with agents racing to plan against its frames as
// they see them live, while the server that leads the stream goes away.
// Live frames keep coming through the election at the tab's own pace
// (they never wait for the stream), and the history ends with every
// frame of the tab once, in order: the frames made while the cluster
// elects the stream's next leader are sent to the stream again until the
// new leader acks them, each after the one before.
func TestStreamLeaderLostDuringRacingAgents(t *testing.T) {
	members, conns := historyCluster(t, "leader-change-secret")
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	h := startReplicatedHistory(t, conns[0])
	leader := streamLeader(t, h)
	// The tab's node, and the agents' member: the two that stay.
	node, agents := (leader+1)%len(members), (leader+2)%len(members)
	// Every frame kept: the tab makes more than the default 1000 on a
	// fast machine.
	h, err := StartHistory(ctx, conns[node], protocol.DefaultSubjects, HistoryOptions{Replicas: 3, MaxPerTab: 1 << 20}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tab := historyTab(t, conns[node], h)
	subject := protocol.DefaultSubjects.TabFrames(tab.ID())
	live := watchArrivals(t, conns[agents], subject)
	waitUntil(t, func() bool { // the tab's plan subject known at the agents' member
		_, err := request(conns[agents], tab.ID(), evals(1))
		return err == nil
	})

	stop := make(chan struct{})
	planErr := make(chan error, 4)
	failed := func() bool { return len(planErr) > 0 }
	var wg sync.WaitGroup
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt()
	// The tab's pace: plans of one frame each, unguarded, from the
	// node's member, every 10 ms.
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if res, err := request(conns[node], tab.ID(), evals(1)); err != nil || !res.OK {
				planErr <- fmt.Errorf("plan: %+v %v", res, err)
				return
			}
		}
	}()
	// Racing agents: each plans against the last frame it saw live, as
	// fast as it is answered.
	var ran, stale [2]int
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := protocol.Action{Type: "eval", Expression: "1", BasedOnSequence: protocol.Based(max(live.last(), 1))}
				res, err := request(conns[agents], tab.ID(), one(a))
				switch {
				case err != nil:
					planErr <- err
					return
				case res.OK:
					ran[i]++
				case res.Code == protocol.CodeStaleFrame:
					stale[i]++
				default:
					planErr <- fmt.Errorf("guarded plan: %+v", res)
					return
				}
			}
		}()
	}
	atSequence := func(n int64) func() bool { return func() bool { return tab.Info().Sequence >= n || failed() } }
	// Long enough before the loss for the lateness a busy machine gives
	// anyway to show, as it will after.
	waitUntil(t, atSequence(200))
	killedAt := tab.Info().Sequence
	lost := fmt.Sprintf("s%d", leader+1)
	members[leader].Close()
	// Frames go on through the election, and some after it.
	waitUntil(t, func() bool {
		ctx, cancel := context.WithTimeout(ctx, testscale.D(3*time.Second)) // no answer during the election
		defer cancel()
		info, err := h.Stream().Info(ctx)
		return failed() || (err == nil && info.Cluster != nil && info.Cluster.Leader != "" && info.Cluster.Leader != lost)
	})
	elected := tab.Info().Sequence
	waitUntil(t, atSequence(elected+50))
	halt()
	if failed() {
		t.Fatal(<-planErr)
	}
	last := tab.Info().Sequence
	waitUntil(t, func() bool { return live.last() >= last })

	// Live: the gap between two frames reaching the agents is at most
	// the gap between their making plus what it was at most before the
	// leader was lost, plus 100 ms.
	arrivals := live.all()
	for i, a := range arrivals { // the first frame may have come before the subscription
		if a.seq != arrivals[0].seq+int64(i) || arrivals[0].seq > 2 {
			t.Fatalf("live frame %d is frame %d: want every frame once, in order", arrivals[0].seq+int64(i), a.seq)
		}
	}
	var before, worst time.Duration
	worstAt := int64(0)
	for i := 1; i < len(arrivals); i++ {
		late := arrivals[i].at.Sub(arrivals[i-1].at) - arrivals[i].made.Sub(arrivals[i-1].made)
		switch {
		case arrivals[i].seq <= killedAt:
			before = max(before, late)
		case late > worst:
			worst, worstAt = late, arrivals[i].seq
		}
	}
	// (The 100 ms scales: a loaded machine's scheduler alone can hold a
	// goroutine that long, election or not.)
	if worst > before+testscale.D(100*time.Millisecond) {
		t.Errorf("live frame %d reached the agents %s later after the one before than the tab made it (before the leader was lost: at most %s)", worstAt, worst, before)
	}

	tab.Stop() // its frames have reached the stream, or were given up
	var info *jetstream.StreamInfo
	waitUntil(t, func() bool { // the cluster, a member short, may not answer at once
		var err error
		info, err = h.Stream().Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil && !jetStreamUnsettled(err) {
			t.Fatal(err)
		}
		return err == nil
	})
	// Its frames, and the close frame Stop made after them.
	if stored := info.State.Subjects[subject]; stored != uint64(last)+1 {
		t.Errorf("the history has %d frames of the tab, want %d and its close frame", stored, last)
	}
	for i, m := range replay(t, follow(t, conns[node], protocol.DefaultSubjects, subject), int(min(uint64(last), info.State.Subjects[subject]))) {
		if f, err := protocol.DecodeFrame(m.Data()); err != nil || f.Sequence != int64(i+1) {
			t.Fatalf("stored frame %d is frame %d (%v); want every frame once, in order", i+1, f.Sequence, err)
		}
	}
	t.Logf("%d frames, the stream's leader %s lost after frame %d, the next elected by frame %d; live frames at most %s later than made (%s before); agents' plans: %v ran, %v stale",
		last, lost, killedAt, elected, worst, before, ran, stale)
}

// arrival is a live frame as a subscriber got it: its sequence, when it
// came, and when the tab made it.
type arrival struct {
	seq      int64
	at, made time.Time
}

// arrivals records a subject's live frames as they come.
type arrivals struct {
	mu   sync.Mutex
	list []arrival
}

func watchArrivals(t *testing.T, nc *nats.Conn, subject string) *arrivals {
	t.Helper()
	a := &arrivals{}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		at := time.Now()
		f, err := protocol.DecodeFrame(m.Data)
		if err != nil {
			return
		}
		a.mu.Lock()
		a.list = append(a.list, arrival{seq: f.Sequence, at: at, made: f.Time})
		a.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return a
}

// last is the last frame's sequence, 0 for none.
func (a *arrivals) last() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	last := int64(0)
	for _, f := range a.list {
		last = max(last, f.seq)
	}
	return last
}

// all is the frames that came, each the first time (a client drops a
// frame it has seen).
func (a *arrivals) all() []arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	var list []arrival
	for _, f := range a.list {
		if len(list) == 0 || f.seq > list[len(list)-1].seq {
			list = append(list, f)
		}
	}
	return list
}

// historyCluster starts a cluster of three buses with JetStream and
// connects a node to each.
func historyCluster(t *testing.T, secret string) ([]*bus.Bus, []*nats.Conn) {
	t.Helper()
	listen, routes := bustest.ClusterRoutes(t, 3)
	var members []*bus.Bus
	var conns []*nats.Conn
	for i := range 3 {
		b, err := bus.Start(bus.Options{Name: fmt.Sprintf("s%d", i+1), JetStream: &bus.JetStreamOptions{},
			Cluster: &bus.ClusterOptions{Listen: listen[i], Routes: routes, Secret: secret}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		nc, err := b.Connect("node")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		members, conns = append(members, b), append(conns, nc)
	}
	return members, conns
}

// startReplicatedHistory starts a history with three replicas once the
// cluster has elected JetStream's leader.
func startReplicatedHistory(t *testing.T, nc *nats.Conn) *History {
	t.Helper()
	var h *History
	waitUntil(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Second))
		defer cancel()
		var err error
		h, err = StartHistory(ctx, nc, protocol.DefaultSubjects, HistoryOptions{Replicas: 3}, zerolog.Nop())
		return err == nil
	})
	return h
}

// streamLeader is the index (s1 is 0) of the member leading h's frame
// stream.
func streamLeader(t *testing.T, h *History) int {
	t.Helper()
	leader := -1
	waitUntil(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Second))
		defer cancel()
		info, err := h.Stream().Info(ctx)
		if err != nil || info.Cluster == nil {
			return false
		}
		_, err = fmt.Sscanf(info.Cluster.Leader, "s%d", &leader)
		leader--
		return err == nil
	})
	return leader
}

// historyTab opens a tab on nc whose frames h keeps.
func historyTab(t *testing.T, nc *nats.Conn, h *History) *Tab {
	t.Helper()
	ctx := context.Background()
	page, err := testBrowser.OpenPage(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := StartTab(ctx, TabOptions{ID: page.TargetID(), Page: page, Conn: nc, Subjects: protocol.DefaultSubjects, Viewport: protocol.DefaultViewport, History: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tab.Stop(); _ = testBrowser.ClosePage(ctx, page) })
	return tab
}

// Large contents put in the object store (three replicas) one after
// another while the bucket's stream changes leader again and again (a
// step down every 700 ms) and a member goes away: each put that fails
// during an election is made again until a leader takes it, and every
// content reads back whole. A put nats.go acks in full can still have
// stored wrong chunks (a chunk sent again after "no responders" goes
// with the last chunk's data): before a frame names it, the object is
// read back, and put again under a new name when it is not whole.
func TestHistoryContentThroughALeaderChange(t *testing.T) {
	members, conns := historyCluster(t, "content-leader-change")
	h := startReplicatedHistory(t, conns[0])
	bucketStream := "OBJ_" + protocol.DefaultSubjects.ContentBucket()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	store := h.startStore(conns[0], "T1", protocol.DefaultSubjects, newContentStore(), zerolog.Nop())
	defer store.close()

	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(700 * time.Millisecond):
			}
			_, _ = conns[0].Request("$JS.API.STREAM.LEADER.STEPDOWN."+bucketStream, nil, 5*time.Second)
		}
	}()
	halt := sync.OnceFunc(func() { close(stop); <-stopped })
	defer halt()
	const contents = 40
	content := func(seq int64) string { return strings.Repeat(fmt.Sprintf("frame %d's page. ", seq), 30000) } // about 500 KB, 4 chunks
	names := map[int64]string{}
	again := 0
	for seq := int64(1); seq <= contents; seq++ {
		if seq == contents/2 {
			go members[2].Close()
		}
		ref, err := store.putContent(seq, content(seq), time.Now().Add(h.opts.StoreTimeout))
		if err != nil {
			t.Fatalf("content %d: %v", seq, err)
		}
		names[seq] = ref.Object
		if ref.Object != protocol.ContentObject("T1", seq) {
			again++
		}
	}
	halt()
	for n := int64(1); n <= contents; n++ {
		got, err := h.content.GetString(ctx, names[n])
		if err != nil || got != content(n) {
			t.Errorf("content %d: %d bytes, want %d: %v", n, len(got), len(content(n)), err)
		}
	}
	t.Logf("%d contents put (%d of them again under a new name), the bucket's stream stepping down every 700 ms, s3 lost after content %d", contents, again, contents/2)
}

// A cluster that lost two of three servers has no leader for the frame
// stream: the tab still answers every plan, and its frames still reach
// live subscribers, in order (at once: the live publish never waits for
// the stream, which gives each up after StoreTimeout).
func TestTabGoesOnWithoutTheStream(t *testing.T) {
	members, conns := historyCluster(t, "no-stream-leader-secret")
	startReplicatedHistory(t, conns[0])
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	h, err := StartHistory(ctx, conns[0], protocol.DefaultSubjects, HistoryOptions{Replicas: 3, StoreTimeout: time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tab := historyTab(t, conns[0], h)
	frames := watchFrames(t, conns[0], protocol.DefaultSubjects.TabFrames(tab.ID()))
	first := tab.Info().Sequence // published before the subscription
	members[1].Close()
	members[2].Close()
	var last int64
	for range 5 {
		res, err := request(conns[0], tab.ID(), evals(1))
		if err != nil || !res.OK {
			t.Fatalf("plan without a stream leader: %+v %v", res, err)
		}
		last = res.Sequence
	}
	deadline := time.Now().Add(time.Minute)
	for want := first + 1; want <= last; {
		if time.Now().After(deadline) {
			t.Fatalf("frame %d not delivered within a minute", want)
		}
		switch f := frames.next(); {
		case f.Sequence == want:
			want++
		case f.Sequence > want:
			t.Fatalf("frame %d came before frame %d", f.Sequence, want)
		}
	}
}
