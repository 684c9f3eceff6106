package bus_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

const clusterSecret = "a-cluster-secret-for-tests"

// startCluster starts n embedded buses in one cluster, with JetStream,
// each with the users given; each lists every member's route (JetStream's
// cluster wants its routes configured, not only learned).
func startCluster(t testing.TB, n int, users []bus.User) []*bus.Bus {
	t.Helper()
	listen, routes := bustest.ClusterRoutes(t, n)
	var members []*bus.Bus
	for i := range n {
		c := &bus.ClusterOptions{Listen: listen[i], Secret: clusterSecret, Routes: routes}
		members = append(members, startBus(t, bus.Options{
			Name: fmt.Sprintf("m%d", i+1), Prefix: "fb", Cluster: c,
			JetStream: &bus.JetStreamOptions{}, Users: users,
		}))
	}
	// Every member routes to every other (the first learns of the later
	// ones from their routes, and tells each of the others).
	for _, m := range members {
		waitUntil(t, "the cluster's routes", func() bool { return connectedRoutes(m) == n-1 })
	}
	return members
}

// connectedRoutes counts the other members a bus has a route to.
func connectedRoutes(b *bus.Bus) int {
	rz, err := b.Server().Routez(nil)
	if err != nil {
		return -1
	}
	peers := map[string]bool{}
	for _, r := range rz.Routes {
		peers[r.RemoteID] = true
	}
	return len(peers)
}

func waitUntil(t testing.TB, what string, ok func() bool) {
	t.Helper()
	within := testscale.D(30 * time.Second)
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within) // the caller logs why
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Three buses in one cluster: a user logged in to the third reaches the
// node's requests answered on the first, frames published on the second,
// and the history, replicated on all three, through its own account's
// imports.
func TestClusterCarriesEverything(t *testing.T) {
	members := startCluster(t, 3, []bus.User{{Name: "agent", PasswordHash: testHash, Role: protocol.RoleAgent}})
	subj := protocol.Subjects{Prefix: "fb"}
	node1, node2 := connect(t, members[0], "node1"), connect(t, members[1], "node2")
	if _, err := node1.Subscribe(subj.Tabs(), func(m *nats.Msg) {
		if protocol.Answerable(m.Reply) {
			m.Respond([]byte(`{"ok":true,"node":"one","tabs":[]}`))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := node1.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	js, err := jetstream.New(node2)
	if err != nil {
		t.Fatal(err)
	}
	var stream jetstream.Stream
	waitUntil(t, "the replicated frame stream", func() bool { // JetStream's cluster elects its leader first
		try, cancel := context.WithTimeout(ctx, testscale.D(3*time.Second))
		defer cancel()
		stream, err = js.CreateStream(try, jetstream.StreamConfig{
			Name: subj.FrameStream(), Subjects: []string{subj.AllFrames()}, Storage: jetstream.MemoryStorage,
			Replicas: 3, AllowDirect: true,
		})
		if err != nil {
			t.Logf("create the stream: %v", err)
		}
		return err == nil
	})

	agent := mustDialAs(t, members[2].ClientURL(), "agent")
	frames := subscribeSync(t, agent.nc, subj.TabFrames("T1"))
	waitUntil(t, "the tab list across the cluster", func() bool {
		m, err := agent.nc.Request(subj.Tabs(), nil, time.Second)
		return err == nil && strings.Contains(string(m.Data), `"node":"one"`)
	})
	// The subscription's interest reaches the second member before a
	// frame published there comes back to the third.
	waitUntil(t, "a frame from the second member", func() bool {
		m := nats.NewMsg(subj.TabFrames("T1"))
		m.Header.Set(jetstream.MsgIDHeader, protocol.FrameMsgID("T1", 1))
		m.Data = []byte(`{"tab":"T1","sequence":1}`)
		if err := node2.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		_, err := frames.NextMsg(200 * time.Millisecond)
		return err == nil
	})
	// (A replica may answer a direct get before it has the frame.)
	waitUntil(t, "the frame in the history through the third member", func() bool {
		got := batchGet(t, agent.nc, subj.JSAPIPrefix()+".DIRECT.GET."+subj.FrameStream(), `{"seq":1,"batch":10}`)
		return len(got) == 1 && got[0].Header.Get(jetstream.MsgIDHeader) == protocol.FrameMsgID("T1", 1)
	})
	info, err := stream.Info(ctx)
	if err != nil || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("the frame stream's replicas: %+v, %v", info.Cluster, err)
	}
}

// A server without the cluster's secret joins nothing: its routes are
// refused, and a client of it sees none of the cluster's messages.
func TestClusterRefusesRoutesWithoutTheSecret(t *testing.T) {
	members := startCluster(t, 2, nil)
	route, err := url.Parse(members[0].ClusterURL())
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []*url.Userinfo{nil, url.UserPassword("framebus-route", "not-the-secret-at-all"), url.User("framebus-route")} {
		u := *route
		u.User = user
		// The intruder knows the node's account by name, and has a user
		// in it: joined, it would see the frames.
		opts := &server.Options{}
		if err := opts.ProcessConfigString(`accounts { ` + bus.NodeAccount + ` { users: [{user: spy, password: spy}] } }`); err != nil {
			t.Fatal(err)
		}
		opts.ServerName, opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "intruder", "127.0.0.1", -1, true, true
		opts.Cluster = server.ClusterOpts{Name: bus.DefaultClusterName, Host: "127.0.0.1", Port: -1}
		opts.Routes = []*url.URL{&u}
		intruder, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		intruder.Start()
		if !intruder.ReadyForConnections(10 * time.Second) {
			t.Fatal("intruder not ready")
		}
		spy, err := nats.Connect(intruder.ClientURL(), nats.UserInfo("spy", "spy"))
		if err != nil {
			t.Fatal(err)
		}
		sub, err := spy.SubscribeSync(">")
		if err != nil {
			t.Fatal(err)
		}
		spy.Flush()
		// Frames published while it tries (it retries its route).
		node := connect(t, members[1], "node")
		seen := 0
		for range 20 {
			if err := node.Publish("fb.tab.T1.frame", []byte("frame")); err != nil {
				t.Fatal(err)
			}
			if _, err := sub.NextMsg(50 * time.Millisecond); err == nil {
				seen++
			}
		}
		routes := connectedRoutes(members[0])
		spy.Close()
		intruder.Shutdown()
		intruder.WaitForShutdown()
		if seen != 0 || routes != 1 {
			t.Errorf("a route with %v: the intruder saw %d of 20 frames; the member has %d routes, want 1", user, seen, routes)
		}
	}
}

// The members share their users: one added on the first logs in on the
// third at once; removed on the second, it is refused everywhere and its
// connections are closed. A member's own configured users are shared
// too.
func TestClusterSharesUsers(t *testing.T) {
	members := startCluster(t, 3, []bus.User{{Name: "configured", PasswordHash: testHash, Role: protocol.RoleObserver}})
	addUser(t, members[0], bus.User{Name: "late", PasswordHash: testHash, Role: protocol.RoleAgent})
	var conns []*userConn
	for i, m := range members {
		waitUntil(t, fmt.Sprintf("the user on member %d", i+1), func() bool {
			uc, err := dialAs(t, m.ClientURL(), "late", testPassword, nats.IgnoreDiscoveredServers())
			if err == nil {
				conns = append(conns, uc)
			}
			return err == nil
		})
		if got := m.Users(); len(got) != 2 {
			t.Errorf("member %d's users: %+v", i+1, got)
		}
	}
	if err := members[2].AddUser(bus.User{Name: "late", PasswordHash: testHash, Role: protocol.RoleObserver}); err == nil {
		t.Error("a second user of the same name was added on another member")
	}
	if err := members[1].RemoveUser("late"); err != nil {
		t.Fatal(err)
	}
	for i, m := range members {
		waitUntil(t, fmt.Sprintf("the user gone from member %d", i+1), func() bool {
			_, err := dialAs(t, m.ClientURL(), "late", testPassword, nats.IgnoreDiscoveredServers())
			return err != nil
		})
		waitUntil(t, fmt.Sprintf("the user's connection to member %d closed", i+1), conns[i].nc.IsClosed)
	}
}

// addUser adds u at m, again while the cluster's JetStream is not ready
// (unavailable changed nothing).
func addUser(t testing.TB, m *bus.Bus, u bus.User) {
	t.Helper()
	whileUnavailable(t, "add user "+u.Name, func() error { return m.AddUser(u) })
}

// claimUsers claims passwords' users for m, again while the cluster's
// JetStream is not ready (a member just started or restarted).
func claimUsers(t testing.TB, m *bus.Bus, passwords map[string]string) {
	t.Helper()
	whileUnavailable(t, "claim users", func() error { return m.ClaimUsers(passwords) })
}

// whileUnavailable calls call again while it fails unavailable, within
// a minute (scaled), and fails the test on any other error.
func whileUnavailable(t testing.TB, what string, call func() error) {
	t.Helper()
	within := testscale.D(60 * time.Second)
	deadline := time.Now().Add(within)
	for {
		err := call()
		switch {
		case err == nil:
			return
		case protocol.CodeOf(err) != protocol.CodeUnavailable || time.Now().After(deadline):
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Two members of a cluster under one name: the routes between them are
// refused, and each is told (NameClash); a member with a name of its
// own is not.
func TestNameClashIsTold(t *testing.T) {
	listen, routes := bustest.ClusterRoutes(t, 3)
	start := func(i int, name string) *bus.Bus {
		return startBus(t, bus.Options{Name: name, Prefix: "fb", JetStream: &bus.JetStreamOptions{},
			Cluster: &bus.ClusterOptions{Listen: listen[i], Secret: clusterSecret, Routes: routes}})
	}
	other := start(0, "m1")
	first := start(1, "twin")
	second := start(2, "twin")
	waitUntil(t, "a clash told", func() bool { return closed(first.NameClash()) || closed(second.NameClash()) })
	if closed(other.NameClash()) {
		t.Fatal("a member with a name of its own was told of a clash")
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
