// Package bustest connects tests to an embedded bus over TCP the way
// another process does: as a user with a role, logged in.
package bustest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// AddUser adds a fresh user of role to b and returns its credentials.
// The hash is bcrypt's cheapest, which the server accepts as well.
func AddUser(t testing.TB, b *bus.Bus, role string) protocol.Credentials {
	t.Helper()
	var r [8]byte
	_, _ = rand.Read(r[:])
	name := role + "-" + hex.EncodeToString(r[:4])
	password := hex.EncodeToString(r[:])
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// A cluster's registry answers once its JetStream has a leader; on a
	// busy machine that is later than AddUser's own bound, which then
	// says unavailable and changed nothing: asked again, within the
	// test's scaled deadline.
	deadline := time.Now().Add(testscale.D(time.Minute))
	for {
		err := b.AddUser(bus.User{Name: name, PasswordHash: string(hash), Role: role})
		if err == nil {
			break
		}
		if protocol.CodeOf(err) != protocol.CodeUnavailable || time.Now().After(deadline) {
			t.Fatalf("add %s user: %v", role, err)
		}
	}
	return protocol.Credentials{
		URL: b.ClientURL(), WebSocket: b.WebSocketURL(), User: name, Password: password,
		Role: role, InboxPrefix: protocol.InboxPrefix(name), JSAPIPrefix: b.Subjects().JSAPIPrefixFor(role),
	}
}

// Options are the nats options that log in with creds.
func Options(creds protocol.Credentials) []nats.Option {
	return []nats.Option{nats.UserInfo(creds.User, creds.Password), nats.CustomInboxPrefix(creds.InboxPrefix)}
}

// Connect adds a user of role to b and connects to b's TCP listener as
// that user; the connection closes when the test ends.
func Connect(t testing.TB, b *bus.Bus, role string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	creds := AddUser(t, b, role)
	nc, err := nats.Connect(creds.URL, append(Options(creds), opts...)...)
	if err != nil {
		t.Fatalf("connect as %s: %v", creds.User, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// ClusterRoutes picks n free loopback ports for a cluster's route
// listeners: each member's Listen, and every member's route URL (each
// member lists them all, JetStream's cluster wants them configured).
//
// The ports are below the kernel's ephemeral range: a port from that
// range, free when picked, could be handed to another listener on :0 or
// to a connection before the member binds it (a CI run saw "address
// already in use"); none is handed out below it. Each is handed out once
// on the machine while the process runs: the test binaries of several
// packages run at once, and a member restarted on its port leaves it free
// for a while (see reservePort).
func ClusterRoutes(t testing.TB, n int) (listen, routes []string) {
	t.Helper()
	for range n {
		addr := routePort(t)
		listen, routes = append(listen, addr), append(routes, "nats-route://"+addr)
	}
	return listen, routes
}

var (
	routePortsMu sync.Mutex
	routePorts   = map[int]bool{}
)

// routePort is a free 127.0.0.1:PORT below the ephemeral ports.
func routePort(t testing.TB) string {
	t.Helper()
	low := ephemeralLow()
	routePortsMu.Lock()
	defer routePortsMu.Unlock()
	for range 1000 {
		port := low - 1 - mathrand.IntN(min(low-1024, 12000))
		if routePorts[port] || !reservePort(port) {
			continue
		}
		routePorts[port] = true // reserved, for this process's life
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken by something else
		}
		l.Close()
		return l.Addr().String()
	}
	t.Fatal("no free port below the ephemeral ones")
	return ""
}

// reservePort reserves port for this process among the processes on the
// machine that pick ports here: an exclusive lock on a file named after
// it, held (its file left open) until the process ends. False when
// another process holds it.
func reservePort(port int) bool {
	dir := filepath.Join(os.TempDir(), "framebus-test-ports")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return true // no reservations here: the listen check alone
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return true // another user's reservations: the listen check alone
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	reserved = append(reserved, f) // kept open: the lock lasts
	return true
}

// reserved holds the files whose locks reserve this process's ports.
var reserved []*os.File

// ephemeralLow is the first port of the kernel's ephemeral range
// (Linux's default when it cannot be read).
func ephemeralLow() int {
	low := 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 2048 {
				low = v
			}
		}
	}
	return low
}
