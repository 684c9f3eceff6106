package client_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A member of a cluster of four, each in a process of its own, is
// frozen (SIGSTOP: its sockets stay open, it answers nothing), first
// one that keeps a replica of the frame stream (three replicas), then
// the stream's leader. An observer reads the history all the while:
// frames --from 1 and a new watch --from 1 get every stored frame, in
// order, from the members that can answer, through the member that
// keeps no replica (the server hands each direct get to any replica,
// the frozen one too) and through one that does.
func TestHistoryReadsWhileAMemberIsFrozen(t *testing.T) {
	const n = 4
	observerHash, err := bus.HashPassword(observerPassword)
	if err != nil {
		t.Fatal(err)
	}
	adminHash, err := bus.HashPassword("admin-password")
	if err != nil {
		t.Fatal(err)
	}
	listen, routes := bustest.ClusterRoutes(t, n)
	var members []*bustest.Member
	for i := range n {
		members = append(members, bustest.StartMember(t, bus.Options{Name: fmt.Sprintf("w%d", i+1), JetStream: &bus.JetStreamOptions{},
			Users: []bus.User{
				{Name: "obs", PasswordHash: observerHash, Role: protocol.RoleObserver},
				{Name: "admin", PasswordHash: adminHash, Role: protocol.RoleAdmin},
			},
			Cluster: &bus.ClusterOptions{Listen: listen[i], Routes: routes, Secret: "frozen-cluster-secret"}}, raceEnabled))
	}
	var urls []string
	for _, m := range members {
		urls = append(urls, m.URL)
	}
	// The node's stand-in: an admin, in the node's account, that stores
	// frames as a node does.
	nc, err := nats.Connect(strings.Join(urls, ","), nats.UserInfo("admin", "admin-password"), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	var h *actors.History
	for h == nil { // the cluster elects JetStream's leader first
		try, cancelTry := context.WithTimeout(ctx, testscale.D(10*time.Second))
		h, err = actors.StartHistory(try, nc, subj, actors.HistoryOptions{Replicas: 3}, zerolog.Nop())
		cancelTry()
		if ctx.Err() != nil {
			t.Fatalf("the replicated history: %v", err)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const frames = 300
	for seq := int64(1); seq <= frames; seq++ {
		store(t, ctx, js, frame("T1", seq))
	}
	// Every replica has them all (a direct get may go to any).
	waitReplicas(t, ctx, h.Stream(), frames)
	leader, replicas, outside := placement(t, ctx, h.Stream(), n)

	read := func(t *testing.T, via int) {
		c, _ := newObserver(t, members[via].URL)
		began := time.Now()
		var got []int64
		err := c.Frames(ctx, "T1", 1, 0, func(f client.Frame) error {
			got = append(got, f.Sequence)
			return nil
		})
		checkAll(t, "frames --from 1", got, err, frames)
		framesTook := time.Since(began)
		began = time.Now()
		w, err := c.Watch(ctx, "T1", 1)
		if err != nil {
			t.Fatalf("watch --from 1: %v", err)
		}
		defer w.Stop()
		got = nil
		for len(got) < frames {
			got = append(got, next(t, w).Sequence)
		}
		checkAll(t, "watch --from 1", got, nil, frames)
		t.Logf("through w%d: frames --from 1 in %s, watch --from 1 in %s", via+1, framesTook, time.Since(began))
	}

	t.Run("replica", func(t *testing.T) {
		frozen := replicas[0]
		members[frozen].Freeze(t)
		defer members[frozen].Thaw(t)
		t.Logf("w%d frozen, the leader w%d", frozen+1, leader+1)
		read(t, outside)
		read(t, leader)
	})
	waitReplicas(t, ctx, h.Stream(), frames)
	leader, replicas, outside = placement(t, ctx, h.Stream(), n)
	t.Run("leader", func(t *testing.T) {
		members[leader].Freeze(t)
		defer members[leader].Thaw(t)
		t.Logf("the leader w%d frozen", leader+1)
		read(t, outside)
		read(t, replicas[0])
	})
}

// placement is where stream's replicas are among n members w1..wn: its
// leader, the other replicas, and a member outside.
func placement(t *testing.T, ctx context.Context, s jetstream.Stream, n int) (leader int, replicas []int, outside int) {
	t.Helper()
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("the frame stream: %v", err)
	}
	index := func(name string) int {
		var i int
		if _, err := fmt.Sscanf(name, "w%d", &i); err != nil {
			t.Fatalf("member %q: %v", name, err)
		}
		return i - 1
	}
	in := map[int]bool{}
	leader = index(info.Cluster.Leader)
	in[leader] = true
	for _, r := range info.Cluster.Replicas {
		replicas = append(replicas, index(r.Name))
		in[index(r.Name)] = true
	}
	for outside = 0; in[outside] && outside < n; outside++ {
	}
	if outside == n {
		t.Fatalf("every member keeps a replica: %+v", info.Cluster)
	}
	return leader, replicas, outside
}

// newObserver is an observer's client connected to url alone.
func newObserver(t *testing.T, url string) (*client.Client, chan client.Event) {
	wc := &watchCluster{}
	return wc.observer(t, []string{url})
}

// store stores f in the frame stream as a node does: on the tab's
// history subject, with its message id, acked.
func store(t testing.TB, ctx context.Context, js jetstream.JetStream, f protocol.Frame) {
	t.Helper()
	data, err := protocol.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: subj.HistoryFrames(f.Tab), Header: nats.Header{}, Data: data}
	m.Header.Set(jetstream.MsgIDHeader, protocol.FrameMsgID(f.Tab, f.Sequence))
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
}

// waitReplicas waits until every replica of stream is current and
// the stream holds n messages.
func waitReplicas(t testing.TB, ctx context.Context, s jetstream.Stream, n uint64) {
	t.Helper()
	for {
		try, cancel := context.WithTimeout(ctx, testscale.D(3*time.Second))
		info, err := s.Info(try)
		cancel()
		if err == nil && info.State.Msgs >= n && info.Cluster != nil && len(info.Cluster.Replicas) == 2 {
			current := true
			for _, r := range info.Cluster.Replicas {
				current = current && r.Current && !r.Offline && r.Lag == 0
			}
			if current {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the stream's replicas did not catch up: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkAll checks that got is frames 1 to n, once each, in order.
func checkAll(t *testing.T, what string, got []int64, err error, n int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v (after %d frames)", what, err, len(got))
	}
	if len(got) != n {
		t.Fatalf("%s: %d frames, want %d", what, len(got), n)
	}
	for i, seq := range got {
		if seq != int64(i+1) {
			t.Fatalf("%s: frame %d is %d", what, i+1, seq)
		}
	}
}
