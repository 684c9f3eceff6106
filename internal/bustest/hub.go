package bustest

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Hub is a plain nats-server, in this process, that framebus nodes join
// as leaf nodes: an existing NATS deployment as a test sees it.
type Hub struct {
	Server *server.Server
	// ClientURL is where the hub's own clients connect; LeafURL is its
	// leaf node listener (no login in either).
	ClientURL, LeafURL string
}

// HubDomain is the JetStream domain of StartHub's hub.
const HubDomain = "hub"

// Hub logins: the leaf connection and a client of the account the
// nodes are bound to (HubAccount), and a user of another account.
const (
	HubAccount      = "FB"
	HubLeafUser     = "leaf"
	HubLeafPassword = "leaf-password-for-tests"
	HubUser         = "hubclient"
	HubPassword     = "hub-client-password"
	OtherUser       = "other"
	OtherPassword   = "other-password"
)

// StartHub starts a hub on loopback with JetStream (domain HubDomain), a
// leaf node listener, the account HubAccount (JetStream on; users
// HubLeafUser and HubUser) and an account OTHER (user OtherUser); it
// shuts down when the test ends.
func StartHub(t testing.TB) *Hub {
	t.Helper()
	leaf := FreeAddr(t)
	conf := fmt.Sprintf(`
server_name: hub
jetstream { store_dir: %q, domain: %s }
leafnodes { listen: %q }
accounts {
  %s: { jetstream: enabled, users: [{user: %s, password: %s}, {user: %s, password: %s}] }
  OTHER: { users: [{user: %s, password: %s}] }
}
`, t.TempDir(), HubDomain, leaf, HubAccount, HubLeafUser, HubLeafPassword, HubUser, HubPassword, OtherUser, OtherPassword)
	opts := &server.Options{}
	if err := opts.ProcessConfigString(conf); err != nil {
		t.Fatalf("hub configuration: %v", err)
	}
	opts.Host, opts.Port, opts.NoSigs, opts.MaxPayload = "127.0.0.1", -1, true, 16<<20
	opts.MaxPending = 64 << 20
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("hub: %v", err)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("hub: not ready for connections within 10s")
	}
	return &Hub{Server: srv, ClientURL: srv.ClientURL(), LeafURL: "nats://" + leaf}
}

// FreeAddr is a loopback host:port nothing listens on, reserved for the
// test process (see ClusterRoutes): no other listener on :0 or test
// binary is handed it meanwhile, so a test can listen there later, or
// count on a refused connection.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return routePort(t)
}
