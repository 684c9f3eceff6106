package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// leafOptions make a bus named name a leaf node of hub, logged in as the
// hub's leaf user, its JetStream the hub's.
func leafOptions(hub *bustest.Hub, name string) bus.Options {
	return bus.Options{Name: name, Prefix: "fb", Users: []bus.User{{Name: "agent", PasswordHash: testHash, Role: protocol.RoleAgent}},
		Leaf: &bus.LeafOptions{URLs: []string{hub.LeafURL}, User: bustest.HubLeafUser, Password: bustest.HubLeafPassword, JSDomain: bustest.HubDomain}}
}

// A bus that is a leaf node of a hub: a client of the hub's account the
// leaf logs in to reaches the node's requests, gets its frames and reads
// the history, which is the hub's JetStream (the node's account has
// none of its own); a user of the leaf's own listener reads the same
// history through its account's imports. A client of another account of
// the hub gets nothing at all.
func TestLeafNodeOfAHub(t *testing.T) {
	hub := bustest.StartHub(t)
	b := startBus(t, leafOptions(hub, "n1"))
	if b.JetStream() {
		t.Fatal("the leaf's embedded server runs JetStream of its own")
	}
	subj := protocol.Subjects{Prefix: "fb"}
	node := connect(t, b, "node")
	if _, err := node.Subscribe(subj.Tabs(), func(m *nats.Msg) {
		if protocol.Answerable(m.Reply) {
			m.Respond([]byte(`{"ok":true,"node":"n1","tabs":[]}`))
		}
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	nodeJS, err := jetstream.New(node)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodeJS.CreateStream(ctx, jetstream.StreamConfig{
		Name: subj.FrameStream(), Subjects: []string{subj.AllFrames()}, Storage: jetstream.MemoryStorage, AllowDirect: true,
	}); err != nil {
		t.Fatalf("the node creates its frame stream through the leaf: %v", err)
	}

	// Another account of the hub: it listens to everything.
	other, err := nats.Connect(hub.ClientURL, nats.UserInfo(bustest.OtherUser, bustest.OtherPassword), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var otherGot atomic.Int64
	everything, err := other.Subscribe(">", func(m *nats.Msg) {
		otherGot.Add(1)
		t.Logf("another account got %s: %.100q", m.Subject, m.Data)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Flush(); err != nil {
		t.Fatal(err)
	}

	hubClient, err := nats.Connect(hub.ClientURL, nats.UserInfo(bustest.HubUser, bustest.HubPassword), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer hubClient.Close()
	frames := subscribeSync(t, hubClient, subj.TabFrames("T1"))
	waitUntil(t, "the node's tab list from the hub", func() bool {
		m, err := hubClient.Request(subj.Tabs(), nil, time.Second)
		return err == nil && strings.Contains(string(m.Data), `"node":"n1"`)
	})
	// The hub client's interest reaches the leaf before a frame
	// published there comes back.
	waitUntil(t, "a frame from the leaf at the hub", func() bool {
		if err := node.Publish(subj.TabFrames("T1"), []byte(`{"tab":"T1","sequence":1}`)); err != nil {
			t.Fatal(err)
		}
		_, err := frames.NextMsg(200 * time.Millisecond)
		return err == nil
	})
	hubJS, err := jetstream.New(hubClient)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := hubJS.Stream(ctx, subj.FrameStream())
	if err != nil {
		t.Fatalf("the frame stream, at the hub: %v", err)
	}
	waitUntil(t, "the frame in the history at the hub", func() bool { // stored just after it is delivered
		m, err := stream.GetLastMsgForSubject(ctx, subj.TabFrames("T1"))
		return err == nil && string(m.Data) == `{"tab":"T1","sequence":1}`
	})

	// The leaf's own agent reads the same history through its imports.
	agent := mustDialAs(t, b.ClientURL(), "agent")
	agentJS, err := jetstream.NewWithAPIPrefix(agent.nc, subj.JSAPIPrefix())
	if err != nil {
		t.Fatal(err)
	}
	agentStream, err := agentJS.Stream(ctx, subj.FrameStream())
	if err != nil {
		t.Fatalf("the frame stream, for the leaf's agent: %v", err)
	}
	if _, err := agentStream.GetLastMsgForSubject(ctx, subj.TabFrames("T1")); err != nil {
		t.Fatalf("the history for the leaf's agent: %v", err)
	}

	// The user administration stays on each side.
	if _, err := node.Subscribe(subj.AdminUsers(protocol.UsersList), func(m *nats.Msg) { m.Respond([]byte(`{}`)) }); err != nil {
		t.Fatal(err)
	}
	if err := node.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := hubClient.Request(subj.AdminUsers(protocol.UsersList), nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("the leaf's user administration from the hub: %v, want no responders", err)
	}
	hubAdmin := subscribeSync(t, hubClient, subj.AdminUsers(">"))
	// The hub tells the leaf of its interests in order: once a frame of
	// a tab it subscribed to after the user requests comes, it has
	// asked for those too.
	probe := subscribeSync(t, hubClient, subj.TabFrames("T2"))
	waitUntil(t, "the hub's interest after the user requests", func() bool {
		if err := node.Publish(subj.TabFrames("T2"), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		_, err := probe.NextMsg(200 * time.Millisecond)
		return err == nil
	})
	for _, s := range []string{subj.AdminUsers(protocol.UsersAdd), subj.TabFrames("T2")} {
		if err := node.Publish(s, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the frame after the user request", func() bool {
		_, err := probe.NextMsg(200 * time.Millisecond)
		return err == nil
	})
	if m, err := hubAdmin.NextMsg(10 * time.Millisecond); err == nil {
		t.Errorf("a user request from the leaf reached the hub: %s", m.Subject)
	}

	// Nothing reached the other account, nor does its request reach
	// the node.
	if err := other.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := otherGot.Load(); n != 0 {
		t.Errorf("another account of the hub received %d messages of the node's", n)
	}
	if err := everything.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Request(subj.Tabs(), nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("another account's tab list: %v, want no responders", err)
	}
}

// A leaf that cannot join says why at start, within ReadyTimeout: a
// wrong password, a hub that does not listen, a JetStream domain the hub
// does not have.
func TestLeafNodeStartErrors(t *testing.T) {
	hub := bustest.StartHub(t)
	for _, tc := range []struct {
		name string
		edit func(*bus.LeafOptions)
		want string
	}{
		{"wrong password", func(l *bus.LeafOptions) { l.Password = "wrong" }, "Authorization Violation"},
		{"no hub there", func(l *bus.LeafOptions) { l.URLs = []string{"nats://" + bustest.FreeAddr(t)} }, "connection refused"},
		{"another domain", func(l *bus.LeafOptions) { l.JSDomain = "elsewhere" }, `domain "elsewhere"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := leafOptions(hub, "n1")
			opts.ReadyTimeout = 2 * time.Second
			tc.edit(opts.Leaf)
			b, err := bus.Start(opts)
			if err == nil {
				b.Close()
				t.Fatal("started")
			}
			if !errors.Is(err, bus.ErrServerStart) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrServerStart saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), bustest.HubLeafPassword) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// Leaf options that cannot work are refused before anything starts.
func TestLeafOptionsRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts bus.Options
	}{
		{"login in the URL", bus.Options{Leaf: &bus.LeafOptions{URLs: []string{"nats://u:p@127.0.0.1:7422"}}}},
		{"no URL", bus.Options{Leaf: &bus.LeafOptions{}}},
		{"external bus", bus.Options{URL: "nats://127.0.0.1:4222", Leaf: &bus.LeafOptions{URLs: []string{"nats://127.0.0.1:7422"}}}},
		{"own JetStream", bus.Options{JetStream: &bus.JetStreamOptions{}, Leaf: &bus.LeafOptions{URLs: []string{"nats://127.0.0.1:7422"}}}},
		{"user and credentials", bus.Options{Leaf: &bus.LeafOptions{URLs: []string{"nats://127.0.0.1:7422"}, User: "u", CredentialsFile: "/x.creds"}}},
		{"password alone", bus.Options{Leaf: &bus.LeafOptions{URLs: []string{"nats://127.0.0.1:7422"}, Password: "p"}}},
		{"domain not a token", bus.Options{Leaf: &bus.LeafOptions{URLs: []string{"nats://127.0.0.1:7422"}, JSDomain: "a.b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if !errors.Is(err, bus.ErrInvalidOptions) {
				t.Fatalf("Validate() = %v, want ErrInvalidOptions", err)
			}
			if strings.Contains(err.Error(), ":p@") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
