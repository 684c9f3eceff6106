package client_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/cutproxy"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// An observer watches a tab through a member of a cluster of three; that
// member's server goes away mid-stream. The client reconnects to another
// member, and the frames come on with no gap and none twice, from the
// history every member keeps (three replicas). The member lost is not
// the frame stream's leader: TestWatchSurvivesALostStreamLeader loses
// that one, with a real node (this test's frames are core publishes,
// which a stream electing its leader does not store).
func TestWatchSurvivesALostClusterMember(t *testing.T) {
	wc := newWatchCluster(t)
	var members []*bus.Bus
	for i := range 3 {
		b, err := bus.Start(wc.member(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		members = append(members, b)
	}
	node, err := members[0].Connect("node")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(node)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	var stream jetstream.Stream
	for { // the cluster elects JetStream's leader first
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Second))
		stream, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: subj.FrameStream(), Subjects: []string{subj.AllFrames()},
			Storage: jetstream.MemoryStorage, Replicas: 3, AllowDirect: true, Duplicates: time.Minute})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replicated frame stream: %v", err)
		}
	}
	// The member to lose: neither the node's (the first) nor the
	// stream's leader.
	lost := 2
	if info := stream.CachedInfo(); info.Cluster != nil && info.Cluster.Leader == "w3" {
		lost = 1
	}

	// The node answers the tab's latest frame, as a real one does: a
	// catch-up waits for the history to have it, so frames published
	// before the watch's interest crossed the route are not lost.
	latest := answerLatest(t, node, "T1")

	// The observer's client: the member to lose first, the others to
	// reconnect to.
	urls := []string{members[lost].ClientURL(), members[0].ClientURL(), members[3-lost].ClientURL()}
	c, events := wc.observer(t, urls)
	w, err := c.Watch(context.Background(), "T1", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const before, after = 20, 20
	seen := map[int64]int{}
	for seq := int64(1); seq <= before; seq++ {
		latest.Store(seq)
		publish(t, node, frame("T1", seq))
	}
	if err := node.Flush(); err != nil {
		t.Fatal(err)
	}
	for range before {
		seen[next(t, w).Sequence]++
	}
	members[lost].Close() // the observer's server goes away
	for seq := int64(before + 1); seq <= before+after; seq++ {
		latest.Store(seq)
		publish(t, node, frame("T1", seq))
	}
	for range after {
		seen[next(t, w).Sequence]++
	}
	for seq := int64(1); seq <= before+after; seq++ {
		if seen[seq] != 1 {
			t.Errorf("frame %d delivered %d times", seq, seen[seq])
		}
	}
	checkFailedOver(t, c, w, events, urls[0])
}

// An observer watches a real node's tab through the member of a cluster
// of three that leads the frame stream (three replicas); the node's
// embedded server is another member. That member goes away while the
// tab makes frames, and the observer cannot reach the others until the
// stream has its next leader, so the frames made during the election
// reach it from the history only: the node sent them again until the
// new leader stored them. No gap, none twice.
func TestWatchSurvivesALostStreamLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	wc := newWatchCluster(t)
	var members []*bus.Bus
	for i := 1; i < 3; i++ { // the node's server is the first
		b, err := bus.Start(wc.member(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		members = append(members, b)
	}
	node, err := actors.StartNode(ctx, actors.NodeOptions{Name: "n1", Bus: wc.member(0),
		Launch: cdpdriver.LaunchOptions{Headless: true}, History: actors.HistoryOptions{Replicas: 3}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	members = append([]*bus.Bus{node.Bus()}, members...)
	nc, err := node.Bus().Connect("agent")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The leader to lose: not the node's server.
	lost := 0
	for lost == 0 {
		info, err := node.History().Stream().Info(ctx)
		if err != nil || info.Cluster == nil {
			t.Fatalf("the frame stream: %v", err)
		}
		if _, err := fmt.Sscanf(info.Cluster.Leader, "w%d", &lost); err != nil {
			t.Fatalf("the frame stream's leader %q: %v", info.Cluster.Leader, err)
		}
		if lost--; lost == 0 {
			stepDown(t, nc)
		}
	}

	// The observer reaches the members that stay through proxies.
	toNode, toOther := cutproxy.New(t, members[0].ClientURL()), cutproxy.New(t, members[3-lost].ClientURL())
	urls := []string{members[lost].ClientURL(), toNode.URL(), toOther.URL()}
	c, events := wc.observer(t, urls)
	tab := node.Tabs()[0].Tab
	w, err := c.Watch(ctx, tab, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	eval := func() int64 {
		t.Helper()
		data, _ := protocol.Marshal(protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}})
		m, err := nc.Request(subj.TabPlan(tab), data, wait)
		if err != nil {
			t.Fatal(err)
		}
		res, err := protocol.DecodePlanResult(m.Data)
		if err != nil || !res.OK {
			t.Fatalf("plan: %s %v", m.Data, err)
		}
		return res.Sequence
	}
	const before, after = 20, 40
	seen := map[int64]int{}
	last := int64(0)
	for range before {
		last = eval()
	}
	for seen[last] == 0 {
		seen[next(t, w).Sequence]++
	}
	toNode.SetDown(true)
	toOther.SetDown(true)
	// The stream's leader, and the observer's server, go away while the
	// tab makes frames: a leader that shuts down stores nothing more
	// before the next is elected.
	closed := make(chan struct{})
	go func() { members[lost].Close(); close(closed) }()
	for closing := true; closing; last = eval() {
		select {
		case <-closed:
			closing = false
		default:
		}
	}
	for range after {
		last = eval()
	}
	waitForLeader(t, nc, "w"+fmt.Sprint(lost+1))
	toNode.SetDown(false)
	toOther.SetDown(false)
	for seen[last] == 0 {
		seen[next(t, w).Sequence]++
	}
	for seq := int64(1); seq <= last; seq++ {
		if seen[seq] != 1 {
			t.Errorf("frame %d delivered %d times", seq, seen[seq])
		}
	}
	checkFailedOver(t, c, w, events, urls[0])
}

// stepDown has the frame stream's leader hand over to another replica.
func stepDown(t *testing.T, nc *nats.Conn) {
	t.Helper()
	if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+subj.FrameStream(), nil, wait); err != nil {
		t.Fatal(err)
	}
	waitForLeader(t, nc, "")
}

// waitForLeader waits until the frame stream has a leader other than
// not.
func waitForLeader(t *testing.T, nc *nats.Conn, not string) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Second))
		s, err := js.Stream(ctx, subj.FrameStream())
		cancel()
		if err == nil && s.CachedInfo().Cluster != nil && s.CachedInfo().Cluster.Leader != "" && s.CachedInfo().Cluster.Leader != not {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader of the frame stream within %s: %v", wait, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watchCluster is the configuration of a cluster of three whose members
// share an observer user.
type watchCluster struct {
	listen, routes []string
	hash           string
}

const observerPassword = "observer-password"

func newWatchCluster(t *testing.T) *watchCluster {
	t.Helper()
	hash, err := bus.HashPassword(observerPassword)
	if err != nil {
		t.Fatal(err)
	}
	listen, routes := bustest.ClusterRoutes(t, 3)
	return &watchCluster{listen: listen, routes: routes, hash: hash}
}

// member is member i's options (named w1, w2, w3).
func (wc *watchCluster) member(i int) bus.Options {
	return bus.Options{Name: fmt.Sprintf("w%d", i+1), JetStream: &bus.JetStreamOptions{},
		Users:   []bus.User{{Name: "obs", PasswordHash: wc.hash, Role: protocol.RoleObserver}},
		Cluster: &bus.ClusterOptions{Listen: wc.listen[i], Routes: wc.routes, Secret: "watch-cluster-secret"}}
}

// observer is the observer's client, connected to urls[0] and able to
// reconnect to the others in order; its events go to the channel.
func (wc *watchCluster) observer(t *testing.T, urls []string) (*client.Client, chan client.Event) {
	t.Helper()
	creds := &protocol.Credentials{User: "obs", Password: observerPassword, Role: protocol.RoleObserver,
		InboxPrefix: protocol.InboxPrefix("obs"), JSAPIPrefix: subj.JSAPIPrefix(), Prefix: subj.Prefix}
	events := make(chan client.Event, 16)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := client.Connect(ctx, client.Options{URL: strings.Join(urls, ","), Credentials: creds, ReconnectWait: 20 * time.Millisecond,
		NATSOptions: []nats.Option{nats.DontRandomize()}, OnEvent: func(e client.Event) {
			select {
			case events <- e:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if got := c.Conn().ConnectedUrl(); got != urls[0] {
		t.Fatalf("connected to %s, want %s", got, urls[0])
	}
	return c, events
}

// checkFailedOver checks that the watch has nothing more to deliver, and
// that its client left the lost member with a reconnected event and saw
// no gap.
func checkFailedOver(t *testing.T, c *client.Client, w *client.Watcher, events chan client.Event, lost string) {
	t.Helper()
	select {
	case f := <-w.Frames():
		t.Errorf("frame %d after the last one", f.Sequence)
	case <-time.After(200 * time.Millisecond):
	}
	if got := c.Conn().ConnectedUrl(); got == lost {
		t.Errorf("still connected to the lost member %s", got)
	}
	reconnected := false
	for len(events) > 0 {
		switch e := <-events; e.Kind {
		case client.EventReconnected:
			reconnected = true
		case client.EventGap:
			t.Errorf("gap: %+v", e)
		}
	}
	if !reconnected {
		t.Error("no reconnected event")
	}
}
