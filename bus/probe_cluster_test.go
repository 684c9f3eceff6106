package bus_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
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
	if err := m3.ClaimUsers(own); err != nil {
		t.Fatal(err)
	}
	// A user added after the restart reaches m3 through its registry watch
	// after every older entry did: from then on m3 follows the registry.
	if err := m1.AddUser(bus.User{Name: "marker", PasswordHash: testHash, Role: protocol.RoleObserver}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the marker user on m3", func() bool { return logsIn(t, m3, "marker", testPassword) })
	for i, m := range []*bus.Bus{m1, m2, m3} {
		waitUntil(t, fmt.Sprintf("m%d: the new password logs in", i+1), func() bool { return logsIn(t, m, own, newPassword) })
		if logsIn(t, m, own, oldPassword) {
			t.Errorf("m%d: the dead member's password still logs %s in", i+1, own)
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
