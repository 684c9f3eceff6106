package client_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
)

// An observer watches a tab through a member of a cluster of three; that
// member's server goes away mid-stream. The client reconnects to another
// member, and the frames come on with no gap and none twice, from the
// history every member keeps (three replicas). The member lost is not
// the frame stream's leader: frames the node publishes while a stream
// elects a new leader are not stored (the node publishes them without
// waiting for the stream's ack), which is issue 21's to close.
func TestWatchSurvivesALostClusterMember(t *testing.T) {
	const password = "observer-password"
	hash, err := bus.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	listen, routes := bustest.ClusterRoutes(t, 3)
	var members []*bus.Bus
	for i := range 3 {
		b, err := bus.Start(bus.Options{Name: fmt.Sprintf("w%d", i+1), JetStream: &bus.JetStreamOptions{},
			Users:   []bus.User{{Name: "obs", PasswordHash: hash, Role: protocol.RoleObserver}},
			Cluster: &bus.ClusterOptions{Listen: listen[i], Routes: routes, Secret: "watch-cluster-secret"}})
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
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
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

	// The observer's client: the member to lose first, the others to
	// reconnect to.
	urls := []string{members[lost].ClientURL(), members[0].ClientURL(), members[3-lost].ClientURL()}
	creds := &protocol.Credentials{User: "obs", Password: password, Role: protocol.RoleObserver,
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
	defer c.Close()
	if got := c.Conn().ConnectedUrl(); got != urls[0] {
		t.Fatalf("connected to %s, want %s", got, urls[0])
	}
	w, err := c.Watch(context.Background(), "T1", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const before, after = 20, 20
	seen := map[int64]int{}
	for seq := int64(1); seq <= before; seq++ {
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
	select {
	case f := <-w.Frames():
		t.Errorf("frame %d after the last one", f.Sequence)
	case <-time.After(200 * time.Millisecond):
	}
	if got := c.Conn().ConnectedUrl(); got == urls[0] {
		t.Errorf("still connected to the lost member %s", got)
	}
	reconnected := false
	for len(events) > 0 {
		if e := <-events; e.Kind == client.EventReconnected {
			reconnected = true
		}
	}
	if !reconnected {
		t.Error("no reconnected event")
	}
}
