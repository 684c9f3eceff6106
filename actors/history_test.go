package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// historyBus starts a stock NATS server with JetStream that carries at
// most 64 KiB per message (so a big page's content goes to the object
// store), connects to it and starts a history there.
func historyBus(t *testing.T, opts HistoryOptions) (*nats.Conn, *History) {
	t.Helper()
	srv := stockServer(t, &server.Options{MaxPayload: 64 << 10, JetStream: true, StoreDir: t.TempDir()})
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	h, err := StartHistory(ctx, nc, protocol.DefaultSubjects, opts, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return nc, h
}

// follow is an ordered consumer of a tab's frames in the history, from
// its first kept frame on: what an observer that joins late reads.
func follow(t *testing.T, nc *nats.Conn, subj protocol.Subjects, subject string) jetstream.Consumer {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// A cluster that has just lost a member may not answer yet, or
	// answer 503: ask again, as the product does (jetStreamUnsettled).
	var cons jetstream.Consumer
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Second))
		cons, err = js.OrderedConsumer(ctx, subj.FrameStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
		cancel()
		if err == nil {
			return cons
		}
		if !jetStreamUnsettled(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		t.Logf("the history's consumer, again: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
}

// stockServer runs a nats-server of its own with opts on a loopback
// port, as an external bus, until the test ends.
func stockServer(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.NoSigs, opts.NoLog = "127.0.0.1", -1, true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return srv
}

// replay reads n messages from an ordered consumer, in order.
func replay(t *testing.T, cons jetstream.Consumer, n int) []jetstream.Msg {
	t.Helper()
	deadline := time.Now().Add(testscale.D(60 * time.Second))
	var out []jetstream.Msg
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("replayed %d of %d frames within 60s", len(out), n)
		}
		// A fetch the cluster is not ready for yet (a consumer whose
		// server the request's route does not know of yet: no
		// responders) is made again: the ordered consumer goes on from
		// the last message it gave.
		batch, err := cons.Fetch(n-len(out), jetstream.FetchMaxWait(10*time.Second))
		if err == nil {
			for m := range batch.Messages() {
				out = append(out, m)
			}
			err = batch.Error()
		}
		switch {
		case err == nil, errors.Is(err, nats.ErrTimeout):
		case jetStreamUnsettled(err):
			t.Logf("the history's fetch, again after %d of %d: %v", len(out), n, err)
			time.Sleep(100 * time.Millisecond)
		default:
			t.Fatal(err)
		}
	}
	return out
}

// evals is a plan of n evals, each a frame.
func evals(n int) protocol.Plan {
	p := protocol.Plan{}
	for i := range n {
		p.Actions = append(p.Actions, protocol.Action{Type: "eval", Expression: fmt.Sprint(i)})
	}
	return p
}

// An observer that starts reading after 50 frames replays all 50 from
// the stream, content included (a big page's from the object store),
// then the frames the tab makes meanwhile and after, with no gap and no
// duplicate at the seam.
func TestHistoryReplaysThenFollows(t *testing.T) {
	nc, h := historyBus(t, HistoryOptions{})
	tab := openTab(t, func(o *TabOptions) { o.Conn, o.History = nc, h })
	subject := protocol.DefaultSubjects.TabFrames(tab.ID())
	live := watchFrames(t, nc, subject)
	plan := protocol.Plan{Actions: []protocol.Action{
		{Type: "navigate", URL: site("/big.html"), Wait: true},   // 2: content in the object store
		{Type: "navigate", URL: site("/index.html"), Wait: true}, // 3: content inline
	}}
	plan.Actions = append(plan.Actions, evals(47).Actions...) // 4..50
	res, err := request(nc, tab.ID(), plan)
	if err != nil || !res.OK || res.Sequence != 50 {
		t.Fatalf("50 frames: %+v %v", res, err)
	}
	seen := map[int64]protocol.Frame{}
	for seq := int64(2); seq <= 50; seq++ {
		seen[seq] = live.until(seq)
	}

	observer, err := nats.Connect(nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	cons := follow(t, observer, protocol.DefaultSubjects, subject)
	// The tab goes on while the observer replays.
	more := make(chan error, 1)
	go func() {
		res, err := request(nc, tab.ID(), evals(10))
		if err == nil && (!res.OK || res.Sequence != 60) {
			err = fmt.Errorf("10 more frames: %+v", res)
		}
		more <- err
	}()
	msgs := replay(t, cons, 60)
	if err := <-more; err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		f, err := protocol.DecodeFrame(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		if f.Sequence != int64(i+1) {
			t.Fatalf("message %d is frame %d: a gap or a duplicate", i, f.Sequence)
		}
		if id := m.Headers().Get(jetstream.MsgIDHeader); id != protocol.FrameMsgID(tab.ID(), f.Sequence) {
			t.Fatalf("frame %d's message id %q", f.Sequence, id)
		}
		if want, ok := seen[f.Sequence]; ok && (want.URL != f.URL || (want.FullPage == nil) != (f.FullPage == nil) || want.FullPage != nil && *want.FullPage != *f.FullPage) {
			t.Fatalf("frame %d replayed differs from the live one", f.Sequence)
		}
	}
	big, _ := protocol.DecodeFrame(msgs[1].Data())
	ref := big.FullPageRef
	if ref == nil || ref.Bucket != protocol.DefaultSubjects.ContentBucket() || ref.Object != protocol.ContentObject(tab.ID(), 2) || ref.Chunks != 0 {
		t.Fatalf("frame 2's content reference: %+v (note %q)", ref, big.Note)
	}
	content, err := FetchContent(observer, big, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(*content) != ref.Bytes || int64(ref.Bytes) <= nc.MaxPayload() || !strings.Contains(*content, "The very last row") {
		t.Fatalf("frame 2's content: %d bytes, ref says %d, bus max %d", len(*content), ref.Bytes, nc.MaxPayload())
	}
	if f, _ := protocol.DecodeFrame(msgs[2].Data()); f.FullPage == nil || !strings.Contains(*f.FullPage, "heading") {
		t.Fatalf("frame 3 has no inline content: %+v", f)
	}
	// One more frame is the next message: nothing was delivered twice.
	if res, err := request(nc, tab.ID(), evals(1)); err != nil || res.Sequence != 61 {
		t.Fatalf("frame 61: %+v %v", res, err)
	}
	if f, _ := protocol.DecodeFrame(replay(t, cons, 1)[0].Data()); f.Sequence != 61 {
		t.Fatalf("after frame 60 came frame %d", f.Sequence)
	}
}

// A frame published again (a republish after a reconnect) is stored once:
// the stream knows it by its message id.
func TestHistoryStoresAFrameOnce(t *testing.T) {
	nc, h := historyBus(t, HistoryOptions{})
	tab := openTab(t, func(o *TabOptions) { o.Conn, o.History = nc, h })
	subject := protocol.DefaultSubjects.TabFrames(tab.ID())
	res, err := request(nc, tab.ID(), evals(2))
	if err != nil || res.Sequence != 3 {
		t.Fatalf("plan: %+v %v", res, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	var stored *jetstream.RawStreamMsg
	waitUntil(t, func() bool {
		stored, err = h.Stream().GetLastMsgForSubject(ctx, subject)
		return err == nil && strings.Contains(string(stored.Data), `"sequence":3`)
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: protocol.DefaultSubjects.HistoryFrames(tab.ID()), Data: stored.Data, Header: stored.Header})
	if err != nil {
		t.Fatal(err)
	}
	if !ack.Duplicate || ack.Sequence != stored.Sequence {
		t.Fatalf("frame 3 published again was stored again: %+v (first at %d)", ack, stored.Sequence)
	}
	info, err := h.Stream().Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects[subject]; n != 3 {
		t.Fatalf("%d frames stored for the tab, want 3", n)
	}
}

// A closed tab's frames and large contents stay in the history; a tab's
// large content leaves with its frame when the tab's count limit pushes
// the frame out.
func TestHistoryOutlivesTabAndDropsOldContent(t *testing.T) {
	nc, h := historyBus(t, HistoryOptions{MaxPerTab: 4})
	tab := openTab(t, func(o *TabOptions) { o.Conn, o.History = nc, h })
	subject := protocol.DefaultSubjects.TabFrames(tab.ID())
	frames := watchFrames(t, nc, subject)
	res, err := request(nc, tab.ID(), protocol.Plan{Actions: []protocol.Action{{Type: "navigate", URL: site("/big.html"), Wait: true}}})
	if err != nil || !res.OK {
		t.Fatalf("navigate: %+v %v", res, err)
	}
	// Live, the frame names the tab's copy of its content; in the
	// history, the object store's.
	if live := frames.until(res.Sequence); live.FullPageRef == nil || live.FullPageRef.Subject != protocol.DefaultSubjects.TabContent(tab.ID()) {
		t.Fatalf("big frame live: %+v", live.FullPageRef)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	var big protocol.Frame
	waitUntil(t, func() bool {
		stored, err := h.Stream().GetLastMsgForSubject(ctx, subject)
		if err == nil {
			big, err = protocol.DecodeFrame(stored.Data)
		}
		return err == nil && big.Sequence == res.Sequence
	})
	if big.FullPageRef == nil || big.FullPageRef.Bucket == "" {
		t.Fatalf("big frame stored: %+v", big.FullPageRef)
	}
	obs, err := h.js.ObjectStore(ctx, big.FullPageRef.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	// Frames 3 and 4, and the close frame 5: frame 2 is still one of
	// the last 4.
	if res, err = request(nc, tab.ID(), evals(2)); err != nil || res.Sequence != 4 {
		t.Fatalf("evals: %+v %v", res, err)
	}
	frames.until(4)
	if _, err := obs.GetInfo(ctx, big.FullPageRef.Object); err != nil {
		t.Fatalf("frame 2's content while frame 2 is kept: %v", err)
	}
	tab.Stop()
	last, err := h.Stream().GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(last.Data), `"sequence":5`) || !strings.Contains(string(last.Data), `"action":"close"`) {
		t.Fatalf("the closed tab's current frame: %s; want its close frame 5", last.Data)
	}
	if _, err := FetchContent(nc, big, 30*time.Second); err != nil {
		t.Fatalf("the closed tab's large content: %v", err)
	}

	// Another tab: its frame 6 pushes its big frame 2 out, and the
	// content goes with it.
	tab2 := openTab(t, func(o *TabOptions) { o.Conn, o.History = nc, h })
	frames2 := watchFrames(t, nc, protocol.DefaultSubjects.TabFrames(tab2.ID()))
	if res, err = request(nc, tab2.ID(), protocol.Plan{Actions: append([]protocol.Action{{Type: "navigate", URL: site("/big.html"), Wait: true}}, evals(4).Actions...)}); err != nil || res.Sequence != 6 {
		t.Fatalf("second tab: %+v %v", res, err)
	}
	frames2.until(6)
	gone := protocol.Frame{Sequence: 2, FullPageRef: &protocol.ContentRef{Bucket: big.FullPageRef.Bucket, Object: protocol.ContentObject(tab2.ID(), 2), Sequence: 2, Bytes: big.FullPageRef.Bytes}}
	waitUntil(t, func() bool {
		// Short: a read that meets the delete half way waits to its
		// deadline (the object store's chunks are gone under it).
		_, err := FetchContent(nc, gone, 2*time.Second)
		return protocol.CodeOf(err) == protocol.CodeBadRequest && strings.Contains(err.Error(), "left the history")
	})
	if _, err := FetchContent(nc, big, 30*time.Second); err != nil {
		t.Fatalf("the first tab's content went too: %v", err)
	}
}

// File storage: a node stopped and started again on the same directory
// still has the history of the tabs it closed, content included.
func TestHistoryFileStorageSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	opts := NodeOptions{History: HistoryOptions{Storage: HistoryFile, Dir: dir}}
	node := startTestNode(t, opts)
	if node.History() == nil || node.History().Options().Storage != HistoryFile {
		t.Fatal("the node runs without file history")
	}
	nc, err := node.Bus().Connect("history-test")
	if err != nil {
		t.Fatal(err)
	}
	tab := node.Tabs()[0].Tab
	res, err := request(nc, tab, protocol.Plan{Actions: append([]protocol.Action{{Type: "navigate", URL: site("/index.html"), Wait: true}}, evals(3).Actions...)})
	if err != nil || !res.OK {
		t.Fatalf("plan: %+v %v", res, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	subject := node.Subjects().TabFrames(tab)
	waitUntil(t, func() bool {
		m, err := node.History().Stream().GetLastMsgForSubject(ctx, subject)
		return err == nil && strings.Contains(string(m.Data), fmt.Sprintf(`"sequence":%d`, res.Sequence))
	})
	if _, err := node.CloseTab(ctx, tab); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}

	node = startTestNode(t, opts)
	nc, err = node.Bus().Connect("history-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cons := follow(t, nc, node.Subjects(), subject)
	for i, m := range replay(t, cons, int(res.Sequence)) {
		f, err := protocol.DecodeFrame(m.Data())
		if err != nil || f.Sequence != int64(i+1) || f.Tab != tab {
			t.Fatalf("frame %d of the closed tab after a restart: %+v %v", i+1, f, err)
		}
		if f.Sequence == 2 && (f.FullPage == nil || !strings.Contains(*f.FullPage, "heading")) {
			t.Fatalf("frame 2 lost its content: %+v", f)
		}
	}
}

// A node on an external bus without JetStream runs without history (it
// warns): plans run and frames flow live as ever.
func TestHistoryNeedsJetStream(t *testing.T) {
	srv := stockServer(t, &server.Options{})
	node := startTestNode(t, NodeOptions{Bus: bus.Options{URL: srv.ClientURL()}})
	if node.History() != nil {
		t.Fatal("a history on a bus without JetStream")
	}
	nc, err := node.Bus().Connect("history-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tab := node.Tabs()[0].Tab
	frames := watchFrames(t, nc, node.Subjects().TabFrames(tab))
	res, err := request(nc, tab, evals(1))
	if err != nil || !res.OK {
		t.Fatalf("plan: %+v %v", res, err)
	}
	frames.until(res.Sequence)
}

// On a cluster of three, the history with Replicas 3 is kept by every
// member: the frame stream and the content bucket each have two
// replicas beside their leader. Replicas out of range are bad requests.
func TestHistoryReplicatedOnACluster(t *testing.T) {
	_, conns := historyCluster(t, "history-cluster-secret")
	h := startReplicatedHistory(t, conns[0])
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	info, err := h.Stream().Info(ctx)
	if err != nil || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("the frame stream on a cluster of three: %+v, %v", info.Cluster, err)
	}
	for _, bad := range []int{-1, 6} {
		if _, err := StartHistory(ctx, conns[1], protocol.DefaultSubjects, HistoryOptions{Replicas: bad}, zerolog.Nop()); protocol.CodeOf(err) != protocol.CodeBadRequest {
			t.Errorf("replicas %d: %v, want bad_request", bad, err)
		}
	}
}

// A frame stream an older node made, which took the live frame subjects
// themselves, is updated in place: its frames stay, the tab's frames are
// stored from the history subjects under their frame subjects, and a
// live publish alone is no longer stored.
func TestHistoryUpdatesAnOlderStream(t *testing.T) {
	srv := stockServer(t, &server.Options{JetStream: true, StoreDir: t.TempDir()})
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	subj := protocol.DefaultSubjects
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: subj.FrameStream(), Subjects: []string{subj.AllFrames()},
		Storage: jetstream.MemoryStorage, Duplicates: time.Minute, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	old := protocol.Frame{Version: protocol.Version, Tab: "OLD", Sequence: 1, URL: "about:blank"}
	msg, err := frameMessage(old, subj.TabFrames("OLD"), nc.MaxPayload(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}

	h, err := StartHistory(ctx, nc, subj, HistoryOptions{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.Stream().CachedInfo().Config
	if want := append([]string{subj.AllHistoryFrames()}, subj.PersonEvents()...); !slices.Equal(cfg.Subjects, want) || cfg.SubjectTransform == nil {
		t.Fatalf("the stream after the update: subjects %v, transform %+v", cfg.Subjects, cfg.SubjectTransform)
	}
	tab := openTab(t, func(o *TabOptions) { o.Conn, o.History = nc, h })
	if res, err := request(nc, tab.ID(), evals(2)); err != nil || res.Sequence != 3 {
		t.Fatalf("plan: %+v %v", res, err)
	}
	// A live publish alone: not stored (the tab's frame 4 would be).
	live := protocol.Frame{Version: protocol.Version, Tab: "LIVE", Sequence: 1, URL: "about:blank"}
	if msg, err = frameMessage(live, subj.TabFrames("LIVE"), nc.MaxPayload(), nil); err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
	tab.Stop()
	info, err := h.Stream().Info(ctx, jetstream.WithSubjectFilter(subj.AllFrames()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{subj.TabFrames("OLD"): 1, subj.TabFrames(tab.ID()): 4} // 3 and the close frame
	if fmt.Sprint(info.State.Subjects) != fmt.Sprint(want) {
		t.Fatalf("stored frames by subject: %v, want %v", info.State.Subjects, want)
	}
}
