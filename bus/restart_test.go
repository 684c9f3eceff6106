package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// keptUsersFile is where a member with a store keeps the users it
// follows (bus.keptUsersFile).
const keptUsersFile = "framebus-cluster-users.json"

// storedCluster starts members of a three-member cluster, each with a
// JetStream store directory of its own that outlives it.
type storedCluster struct {
	t              *testing.T
	listen, routes []string
	stores         []string
}

func newStoredCluster(t *testing.T) *storedCluster {
	listen, routes := bustest.ClusterRoutes(t, 3)
	c := &storedCluster{t: t, listen: listen, routes: routes}
	for range 3 {
		c.stores = append(c.stores, t.TempDir())
	}
	return c
}

// start starts member i (0-based) on its store; users are its own.
func (c *storedCluster) start(i int, users ...bus.User) *bus.Bus {
	return startBus(c.t, bus.Options{
		Name: fmt.Sprintf("m%d", i+1), Prefix: "fb", Users: users,
		Cluster:   &bus.ClusterOptions{Listen: c.listen[i], Secret: clusterSecret, Routes: c.routes},
		JetStream: &bus.JetStreamOptions{StoreDir: c.stores[i]},
	})
}

func (c *storedCluster) startAll() []*bus.Bus {
	members := []*bus.Bus{c.start(0), c.start(1), c.start(2)}
	for _, m := range members {
		waitUntil(c.t, "the cluster's routes", func() bool { return connectedRoutes(m) == 2 })
	}
	return members
}

// kept are the names in member i's kept users file.
func (c *storedCluster) kept(i int) []string {
	data, err := os.ReadFile(filepath.Join(c.stores[i], keptUsersFile))
	if err != nil {
		return nil
	}
	var users []bus.User
	if err := json.Unmarshal(data, &users); err != nil {
		c.t.Fatalf("m%d's kept users: %v", i+1, err)
	}
	var names []string
	for _, u := range users {
		names = append(names, u.Name)
	}
	return names
}

// A member with a store keeps the users it follows over a restart: it
// lets them in at once, with no registry to answer (here: the other two
// members are down, so JetStream has no quorum at all). The kept file is
// its owner's alone and holds bcrypt hashes, never a password.
func TestRestartedMemberLetsItsUsersInBeforeTheRegistry(t *testing.T) {
	c := newStoredCluster(t)
	members := c.startAll()
	addUser(t, members[0], bus.User{Name: "late", PasswordHash: testHash, Role: protocol.RoleAgent})
	waitUntil(t, "the user kept by m3", func() bool { return slices.Contains(c.kept(2), "late") })
	for _, m := range members {
		m.Close()
	}

	path := filepath.Join(c.stores[2], keptUsersFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the kept users file is %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), testPassword) {
		t.Error("the kept users file holds the password")
	}
	if !strings.Contains(string(data), testHash) {
		t.Errorf("the kept users file does not hold the user's bcrypt hash: %s", data)
	}

	m3 := c.start(2) // alone: no registry answers
	if !logsIn(t, m3, "late", testPassword) {
		t.Fatal("the restarted member refuses a user it followed before its restart")
	}
	if logsIn(t, m3, "late", "another password") {
		t.Fatal("a kept user logs in with another password")
	}
}

// The attacker's side of the kept users: a user removed while a member
// was down logs in there until the member follows the registry again,
// and not after: then it is refused, and its connection is closed. Once
// removed with the cluster running (the registry holds a delete marker),
// once gone with the whole cluster (the registry, in memory, starts
// empty: only the reconciliation after the watch's initial values takes
// it out).
func TestUserRemovedWhileAMemberWasDownIsCutOff(t *testing.T) {
	c := newStoredCluster(t)
	members := c.startAll()
	for _, name := range []string{"removed", "forgotten"} {
		addUser(t, members[0], bus.User{Name: name, PasswordHash: testHash, Role: protocol.RoleAgent})
	}
	waitUntil(t, "both users kept by m3", func() bool { return len(c.kept(2)) == 2 })

	// The first: removed while m3 is down.
	members[2].Close()
	if err := members[0].RemoveUser("removed"); err != nil {
		t.Fatal(err)
	}
	members[2] = c.start(2)
	cutOff(t, members[2], "removed")

	// The second: the whole cluster stops; it comes back without it.
	for _, m := range members {
		m.Close()
	}
	members = c.startAll()
	for i, m := range members {
		cutOff(t, m, "forgotten")
		waitUntil(t, fmt.Sprintf("the user out of m%d's kept file", i+1), func() bool { return !slices.Contains(c.kept(i), "forgotten") })
	}
}

// cutOff logs in as user at m until it is refused, keeping the first
// connection that got in; that one must then be closed, and no login get
// through afterwards.
func cutOff(t *testing.T, m *bus.Bus, user string) {
	t.Helper()
	var first *userConn
	through := 0
	waitUntil(t, user+" refused at "+m.Server().Name(), func() bool {
		uc, err := dialAs(t, m.ClientURL(), user, testPassword, nats.IgnoreDiscoveredServers())
		if err != nil {
			return true
		}
		through++
		if first == nil {
			first = uc
		} else {
			uc.nc.Close()
		}
		return false
	})
	t.Logf("%s: %d logins at %s got through before it followed the registry", user, through, m.Server().Name())
	if first != nil {
		waitUntil(t, "the connection that got in closed", first.nc.IsClosed)
	}
	for range 10 {
		if logsIn(t, m, user, testPassword) {
			t.Fatalf("%s logged in at %s after it was refused", user, m.Server().Name())
		}
	}
}

// A member's own configured user (for a node: one its creds add made,
// in its users.json) removed at another member while it was down stays
// removed when it starts again with it: it is not put back in the
// cluster (KV Create would put it over the deletion), and the member
// refuses it too once it has read the registry.
func TestOwnUserRemovedWhileAMemberWasDownStaysRemoved(t *testing.T) {
	c := newStoredCluster(t)
	own := bus.User{Name: "bob", PasswordHash: testHash, Role: protocol.RoleAgent}
	members := []*bus.Bus{c.start(0), c.start(1), c.start(2, own)}
	waitUntil(t, "m3's user at m1", func() bool { return logsIn(t, members[0], own.Name, testPassword) })
	members[2].Close()
	if err := members[0].RemoveUser(own.Name); err != nil {
		t.Fatal(err)
	}
	members[2] = c.start(2, own) // its file of users still names bob
	cutOff(t, members[2], own.Name)
	// Every member refuses bob, and goes on refusing him. (A member whose
	// watch's consumer was on m3 follows the deletion late: the watch
	// is made again once its consumer is missed.)
	for i, m := range members {
		waitUntil(t, fmt.Sprintf("bob refused at m%d", i+1), func() bool { return !logsIn(t, m, own.Name, testPassword) })
	}
	for range 5 {
		for i, m := range members {
			if logsIn(t, m, own.Name, testPassword) {
				t.Fatalf("m%d: the user removed while m3 was down logs in again after m3's restart", i+1)
			}
		}
	}
	if slices.ContainsFunc(members[2].Users(), func(u bus.User) bool { return u.Name == own.Name }) {
		t.Errorf("m3 still lists the user: %v", members[2].Users())
	}
}

// A change of the cluster's users made the moment the member leading
// the users' bucket is lost waits out the election ("no response from
// stream" while there is no leader) instead of failing: the user added
// and the user removed are so at every member left.
func TestUserChangesWaitOutTheRegistrysElection(t *testing.T) {
	c := newStoredCluster(t)
	members := c.startAll()
	carol := bus.User{Name: "carol", PasswordHash: testHash, Role: protocol.RoleAgent}
	addUser(t, members[0], carol)
	for _, m := range members {
		waitUntil(t, "carol at "+m.Server().Name(), func() bool { return logsIn(t, m, carol.Name, testPassword) })
	}
	leader := registryLeader(t, members[0])
	var left []*bus.Bus
	for _, m := range members {
		if m.Server().Name() == leader {
			m.Close()
		} else {
			left = append(left, m)
		}
	}
	if len(left) != 2 {
		t.Fatalf("the registry's leader %q is no member", leader)
	}
	dave := bus.User{Name: "dave", PasswordHash: testHash, Role: protocol.RoleAgent}
	if err := left[0].RemoveUser(carol.Name); err != nil {
		t.Fatalf("remove a user as the registry's leader is lost: %v", err)
	}
	if err := left[1].AddUser(dave); err != nil {
		t.Fatalf("add a user as the registry's leader is lost: %v", err)
	}
	for _, m := range left {
		cutOff(t, m, carol.Name)
		waitUntil(t, "dave at "+m.Server().Name(), func() bool { return logsIn(t, m, dave.Name, testPassword) })
	}
}

// registryLeader is the name of the member leading the users' bucket.
func registryLeader(t *testing.T, m *bus.Bus) string {
	t.Helper()
	nc, err := m.Connect("leader")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	var leader string
	waitUntil(t, "the users' bucket's leader", func() bool {
		s, err := js.Stream(ctx, "KV_"+protocol.Subjects{Prefix: "fb"}.UsersBucket())
		if err == nil && s.CachedInfo().Cluster != nil {
			leader = s.CachedInfo().Cluster.Leader
		}
		return leader != ""
	})
	return leader
}
