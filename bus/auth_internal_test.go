package bus

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/protocol"
)

// The node's internal identity opens no listener, even to someone who
// holds its key: over TCP and WebSocket the server refuses it, in-process
// it logs in. (As if its seed had leaked: the test signs with it.)
func TestInternalIdentityInProcessOnly(t *testing.T) {
	b, err := Start(Options{WebSocket: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, url := range []string{b.ClientURL(), b.WebSocketURL()} {
		nc, err := nats.Connect(url, b.internal.option(), nats.NoReconnect(), nats.Timeout(5*time.Second))
		if err == nil {
			nc.Close()
			t.Errorf("%s: the internal nkey logged in", url)
			continue
		}
		// Over WebSocket the server may close before the client reads
		// its -ERR: refused all the same.
		broken := errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)
		if !errors.Is(err, nats.ErrAuthorization) && !broken {
			t.Errorf("%s: %v, want an authorization violation", url, err)
		}
	}
	nc, err := b.Connect("inproc")
	if err != nil {
		t.Fatalf("in-process: %v", err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestUnknownUsersCostAWrongPassword is the user-name probe by timing:
// a login with a wrong password for an existing user and one for a name
// no user has, many of each, interleaved. Each must make one bcrypt
// compare of the same cost (counted in the server, so the test does not
// depend on the machine's load); before, an unknown name made none and
// was refused in ~1.7 ms against ~2.8 ms. The medians as the client saw
// them are logged, not judged.
func TestUnknownUsersCostAWrongPassword(t *testing.T) {
	type compare struct{ cost int }
	var mu sync.Mutex
	var compares []compare
	compareHash = func(hash, password []byte) error {
		cost, _ := bcrypt.Cost(hash)
		mu.Lock()
		compares = append(compares, compare{cost})
		mu.Unlock()
		return bcrypt.CompareHashAndPassword(hash, password)
	}
	defer func() { compareHash = bcrypt.CompareHashAndPassword }()
	hash, err := HashPassword("the right password")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(Options{Users: []User{{Name: "alice", PasswordHash: hash, Role: protocol.RoleAgent}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	userCost, _ := bcrypt.Cost([]byte(hash))

	// login returns the compares one refused login made, and how long
	// the client waited for the refusal.
	login := func(user string) ([]compare, time.Duration) {
		mu.Lock()
		before := len(compares)
		mu.Unlock()
		start := time.Now()
		nc, err := nats.Connect(b.ClientURL(), nats.UserInfo(user, "a wrong password"), nats.NoReconnect(), nats.Timeout(10*time.Second))
		took := time.Since(start)
		if err == nil {
			nc.Close()
			t.Fatalf("%s logged in with a wrong password", user)
		}
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Fatalf("%s: %v, want an authorization violation", user, err)
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(compares[before:]), took
	}
	const tries = 30
	var took [2][]time.Duration
	leaks := 0
	for i := range 2 * tries {
		kind, user := i%2, "alice"
		if kind == 1 {
			user = fmt.Sprintf("nobody-%d", i)
		}
		made, d := login(user)
		took[kind] = append(took[kind], d)
		if len(made) != 1 || made[0].cost != userCost {
			leaks++
			if leaks <= 3 {
				t.Errorf("%s: compares %v, want one of cost %d (as a wrong password for alice makes)", user, made, userCost)
			}
		}
	}
	t.Logf("%d of %d logins told apart by their compares; median refusal: existing user %s, unknown %s",
		leaks, 2*tries, median(took[0]), median(took[1]))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
