package serving

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/protocol"
)

// The node's own credentials are those its last start wrote, unless
// rotated, or unless a file is not fit to keep: open to others, or naming
// another user (whose users it replaces). The hashes the bus gets match
// the passwords kept.
func TestLocalUsersKeptUntilRotated(t *testing.T) {
	dir := t.TempDir()
	write := func(lu *localUsers) {
		t.Helper()
		for _, f := range lu.files {
			creds, file := f.creds, f.name
			creds.URL = "nats://127.0.0.1:4999"
			if err := WriteCredentials(filepath.Join(dir, file), creds); err != nil {
				t.Fatal(err)
			}
		}
	}
	first, _, err := makeLocalUsers(dir, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.files) != 3 || first.kept[first.agent().User] || first.kept[first.operator().User] || first.kept[first.admin().User] {
		t.Fatalf("kept with no files: %v", first.kept)
	}
	// Clients on this machine check the bus's account against busUid.
	for _, c := range []protocol.Credentials{first.agent(), first.operator(), first.admin()} {
		if c.BusUID == nil || *c.BusUID != os.Geteuid() {
			t.Errorf("%s's credentials name bus account %v, want %d", c.User, c.BusUID, os.Geteuid())
		}
	}
	write(first)

	again, users, err := makeLocalUsers(dir, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if again.agent().Password != first.agent().Password || again.operator().Password != first.operator().Password || again.admin().Password != first.admin().Password || again.lastURL != "nats://127.0.0.1:4999" || len(again.replaced) != 0 {
		t.Fatalf("a second start: %+v; want the first start's passwords and URL", again)
	}
	for _, u := range users {
		password := again.passwords()[u.Name]
		if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
			t.Errorf("user %s: the bus's hash is not the kept password's", u.Name)
		}
	}

	rotated, _, err := makeLocalUsers(dir, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.agent().Password == first.agent().Password || rotated.operator().Password == first.operator().Password || rotated.admin().Password == first.admin().Password {
		t.Fatal("--rotate-credentials kept a password")
	}

	// A file others could read: its password may be known.
	if err := os.Chmod(filepath.Join(dir, AgentCredsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	open, _, err := makeLocalUsers(dir, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if open.agent().Password == first.agent().Password || open.admin().Password != first.admin().Password || open.operator().Password != first.operator().Password {
		t.Fatal("a credentials file open to others was kept, or the other one was not")
	}
	// Another name (a cluster node's users end with its name).
	renamed, _, err := makeLocalUsers(dir, clusterUserSuffix("two"), false)
	if err != nil {
		t.Fatal(err)
	}
	if renamed.admin().Password == first.admin().Password || renamed.admin().User != "admin-two" {
		t.Fatalf("a file of user admin kept for %s", renamed.admin().User)
	}
	// The users of the files it replaces leave a cluster (leaveReplaced).
	if !slices.Equal(renamed.replaced, []string{"agent", "operator", "admin"}) {
		t.Errorf("a start under another name replaces %v, want the users agent, operator and admin", renamed.replaced)
	}
}

func (lu *localUsers) agent() protocol.Credentials    { return lu.credsOf(AgentCredsFile) }
func (lu *localUsers) operator() protocol.Credentials { return lu.credsOf(OperatorCredsFile) }
func (lu *localUsers) admin() protocol.Credentials    { return lu.credsOf(AdminCredsFile) }

// A free port of the last start is taken again; one in use, or on
// another host, is not.
func TestReusePort(t *testing.T) {
	lu := &localUsers{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	last := "nats://127.0.0.1:" + strconv.Itoa(port)
	if got := lu.reusePort("127.0.0.1", 0, last); got != 0 {
		t.Errorf("a port in use: %d; want 0 (a new one)", got)
	}
	l.Close()
	if got := lu.reusePort("127.0.0.1", 0, last); got != port {
		t.Errorf("the last port, free: %d; want %d", got, port)
	}
	if got := lu.reusePort("localhost", 0, last); got != 0 {
		t.Errorf("another host: %d; want 0", got)
	}
	if got := lu.reusePort("127.0.0.1", 4222, last); got != 4222 {
		t.Errorf("a port given: %d; want it", got)
	}
	lu.lastWebSocket = "ws://127.0.0.1:" + strconv.Itoa(port)
	if got := lu.reuseWebSocket("127.0.0.1:0"); got != "127.0.0.1:"+strconv.Itoa(port) {
		t.Errorf("websocket: %s", got)
	}
}
