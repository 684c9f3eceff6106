package bus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A member that died (kill -9: it never took its own users out of the
// cluster's registry) and starts again under its name with fresh
// passwords (serve makes new ones every start) logs its users in with
// the new passwords, and the dead one's passwords no longer log in
// anywhere: a copy of an old credentials file is no key to the cluster.
func TestRestartedMemberOwnsItsUsersAgain(t *testing.T) {
	listen, routes := bustest.ClusterRoutes(t, 3)
	const own = "agent-m3"
	oldPassword, newPassword := "the-password-before", "the-password-after"
	hash := func(p string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	member := func(i int, users []bus.User) *bus.Bus {
		return startBus(t, bus.Options{
			Name: fmt.Sprintf("m%d", i+1), Prefix: "fb", Users: users,
			Cluster:   &bus.ClusterOptions{Listen: listen[i], Secret: clusterSecret, Routes: routes},
			JetStream: &bus.JetStreamOptions{},
		})
	}
	m1, m2 := member(0, nil), member(1, nil)
	m3 := member(2, []bus.User{{Name: own, PasswordHash: hash(oldPassword), Role: protocol.RoleAgent}})
	for _, m := range []*bus.Bus{m1, m2, m3} {
		waitUntil(t, "the cluster's routes", func() bool { return connectedRoutes(m) == 2 })
	}
	waitUntil(t, "the first m3's user on m1", func() bool { return logsIn(t, m1, own, oldPassword) })
	m3.Close() // as a kill -9 would leave it: its user still in the registry

	m3 = member(2, []bus.User{{Name: own, PasswordHash: hash(newPassword), Role: protocol.RoleAgent}})
	// The name is m3's alone now (for a node: the node registry said so).
	claimUsers(t, m3, map[string]string{own: newPassword})
	// A user added after the restart reaches m3 through its registry watch
	// after every older entry did: from then on m3 follows the registry.
	addUser(t, m1, bus.User{Name: "marker", PasswordHash: testHash, Role: protocol.RoleObserver})
	waitUntil(t, "the marker user on m3", func() bool { return logsIn(t, m3, "marker", testPassword) })
	for i, m := range []*bus.Bus{m1, m2, m3} {
		waitUntil(t, fmt.Sprintf("m%d: the new password logs in", i+1), func() bool { return logsIn(t, m, own, newPassword) })
		if logsIn(t, m, own, oldPassword) {
			t.Errorf("m%d: the dead member's password still logs %s in", i+1, own)
		}
	}
}

// A member that stops (its user stays in the registry) and starts again
// with the same password, hashed anew as serve does at every start,
// closes no connection of its user at another member: the registry's
// entry stays, and the member takes its hash. Before, its claim put the
// new hash, and every member closed the user's connections (a node's
// clients at other members were cut off at each of its restarts).
func TestRestartedMemberWithItsPasswordClosesNoConnection(t *testing.T) {
	listen, routes := bustest.ClusterRoutes(t, 3)
	const own, password = "agent-m3", "the-password-it-keeps"
	member := func(i int, users []bus.User) *bus.Bus {
		return startBus(t, bus.Options{
			Name: fmt.Sprintf("m%d", i+1), Prefix: "fb", Users: users,
			Cluster:   &bus.ClusterOptions{Listen: listen[i], Secret: clusterSecret, Routes: routes},
			JetStream: &bus.JetStreamOptions{},
		})
	}
	ownUser := func() []bus.User {
		hash, err := bus.HashPassword(password) // a salt of its own: another hash at every start
		if err != nil {
			t.Fatal(err)
		}
		return []bus.User{{Name: own, PasswordHash: hash, Role: protocol.RoleAgent}}
	}
	m1, m2 := member(0, nil), member(1, nil)
	m3 := member(2, ownUser())
	for _, m := range []*bus.Bus{m1, m2, m3} {
		waitUntil(t, "the cluster's routes", func() bool { return connectedRoutes(m) == 2 })
	}
	claimUsers(t, m3, map[string]string{own: password})
	waitUntil(t, "m3's user on m1", func() bool { return logsIn(t, m1, own, password) })
	atM1, err := dialAs(t, m1.ClientURL(), own, password, nats.IgnoreDiscoveredServers())
	if err != nil {
		t.Fatal(err)
	}
	m3.Close()

	m3 = member(2, ownUser())
	claimUsers(t, m3, map[string]string{own: password})
	// m1 follows the claim's change, if any, before a user added after it.
	addUser(t, m3, bus.User{Name: "marker", PasswordHash: testHash, Role: protocol.RoleObserver})
	waitUntil(t, "the marker user on m1", func() bool { return logsIn(t, m1, "marker", testPassword) })
	if atM1.nc.IsClosed() {
		t.Error("m1 closed the connection of m3's user as m3 started again with its password")
	}
	for i, m := range []*bus.Bus{m1, m2, m3} {
		if !logsIn(t, m, own, password) {
			t.Errorf("m%d refuses m3's user", i+1)
		}
	}
}

func logsIn(t *testing.T, b *bus.Bus, user, password string) bool {
	uc, err := dialAs(t, b.ClientURL(), user, password, nats.IgnoreDiscoveredServers())
	if err != nil {
		return false
	}
	uc.nc.Close()
	return true
}

// An agent and an observer at one member of a cluster try to read and
// write the registries the members share: the users (names, roles,
// bcrypt hashes) and the nodes' heartbeats placement reads. Every way
// they have: a KV put (a publish on $KV.<bucket>.<key>), a subscription
// to the buckets' subjects, the JetStream API under their history prefix
// and as $JS.API (stream info, message get, direct get), and a direct get
// on the frame stream they may read that asks for a registry's subject.
// Nothing is forged, no answer carries a hash or an entry; the route
// port takes no client login either.
func TestUsersCannotReachTheClusterRegistries(t *testing.T) {
	members := startCluster(t, 3, []bus.User{
		{Name: "agent", PasswordHash: testHash, Role: protocol.RoleAgent},
		{Name: "observer", PasswordHash: testHash, Role: protocol.RoleObserver},
	})
	subj := protocol.Subjects{Prefix: "fb"}
	node := connect(t, members[0], "node")
	js, err := jetstream.New(node)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(60*time.Second))
	defer cancel()
	// The members' registry is up once a user added there is (the cluster
	// elects JetStream's leader first).
	addUser(t, members[0], bus.User{Name: "late", PasswordHash: testHash, Role: protocol.RoleObserver})
	nodes, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: subj.NodesBucket(), Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Put(ctx, "one", []byte(`{"node":"one","tabs":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: subj.FrameStream(), Subjects: []string{subj.AllFrames()}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	users, err := js.KeyValue(ctx, subj.UsersBucket())
	if err != nil {
		t.Fatal(err)
	}
	buckets := []string{subj.UsersBucket(), subj.NodesBucket()}

	leaked, answered, forgedTried := 0, 0, 0
	for _, user := range []string{"agent", "observer"} {
		uc := mustDialAs(t, members[2].ClientURL(), user)
		for _, b := range buckets {
			for _, s := range []string{"$KV." + b + ".>", "$KV." + b + ".agent", "$JS.API.>"} {
				if sub, err := uc.nc.SubscribeSync(s); err == nil {
					if m, err := sub.NextMsg(100 * time.Millisecond); err == nil {
						t.Errorf("%s subscribed to %s and received %s", user, s, m.Subject)
					}
				}
			}
			for _, key := range []string{"evil", "one", "agent"} {
				forgedTried++
				_ = uc.nc.Publish("$KV."+b+"."+key, []byte(`{"node":"evil","tabs":0,"name":"evil","role":"admin"}`))
			}
			stream := "KV_" + b
			var asks []string
			for _, api := range []string{subj.JSAPIPrefix(), "$JS.API"} {
				asks = append(asks,
					api+".STREAM.INFO."+stream,
					api+".STREAM.MSG.GET."+stream,
					api+".DIRECT.GET."+stream,
					api+".DIRECT.GET."+stream+".$KV."+b+".agent",
					api+".DIRECT.GET."+stream+".$KV."+b+".one",
					api+".STREAM.PURGE."+stream,
					api+".STREAM.UPDATE."+stream,
					api+".CONSUMER.CREATE."+stream,
				)
			}
			for _, s := range asks {
				body := []byte(`{"last_by_subj":"$KV.` + b + `.agent","seq":1}`)
				if m, err := uc.nc.Request(s, body, 300*time.Millisecond); err == nil {
					answered++
					if strings.Contains(string(m.Data), "$2a$") || strings.Contains(string(m.Data), `"tabs"`) {
						leaked++
						t.Errorf("%s asked %s and got %.200s", user, s, m.Data)
					}
				}
			}
			// The frame stream it may read, asked for a registry's subject.
			for _, s := range []string{subj.JSAPIPrefix() + ".DIRECT.GET." + subj.FrameStream(), subj.JSAPIPrefix() + ".DIRECT.GET." + subj.FrameStream() + ".$KV." + b + ".agent"} {
				if m, err := uc.nc.Request(s, []byte(`{"last_by_subj":"$KV.`+b+`.agent"}`), time.Second); err == nil {
					if len(m.Data) > 0 {
						leaked++
						t.Errorf("%s asked %s and got %.200s", user, s, m.Data)
					}
				}
			}
		}
		uc.nc.Close()
	}
	// The route port is for members: a client login there is refused
	// (nats.go would then go to the client port the route's INFO names:
	// not here).
	for _, login := range []nats.Option{nats.UserInfo("agent", testPassword), nats.UserInfo("framebus-route", "not-the-secret-at-all"), nats.UserInfo("framebus-route", clusterSecret)} {
		route := "nats://" + strings.TrimPrefix(members[0].ClusterURL(), "nats-route://")
		if nc, err := nats.Connect(route, login, nats.IgnoreDiscoveredServers(), nats.NoReconnect(), nats.Timeout(2*time.Second)); err == nil {
			t.Errorf("a client logged in at the route port %s (%s)", route, nc.ConnectedUrl())
			nc.Close()
		}
	}
	forged := 0
	for _, kv := range []jetstream.KeyValue{users, nodes} {
		for _, key := range []string{"evil", "one", "agent"} {
			if e, err := kv.Get(ctx, key); err == nil && strings.Contains(string(e.Value()), "evil") {
				forged++
			}
		}
	}
	t.Logf("%d forged puts tried, %d stored; %d API answers, %d carried a registry's content", forgedTried, forged, answered, leaked)
	if forged != 0 {
		t.Errorf("%d forged registry entries stored", forged)
	}
}
