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
		for file, creds := range map[string]protocol.Credentials{AgentCredsFile: lu.agent, AdminCredsFile: lu.admin} {
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
	if first.kept[first.agent.User] || first.kept[first.admin.User] {
		t.Fatalf("kept with no files: %v", first.kept)
	}
	// Clients on this machine check the bus's account against busUid.
	for _, c := range []protocol.Credentials{first.agent, first.admin} {
		if c.BusUID == nil || *c.BusUID != os.Geteuid() {
			t.Errorf("%s's credentials name bus account %v, want %d", c.User, c.BusUID, os.Geteuid())
		}
	}
	write(first)

	again, users, err := makeLocalUsers(dir, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if again.agent.Password != first.agent.Password || again.admin.Password != first.admin.Password || again.lastURL != "nats://127.0.0.1:4999" || len(again.replaced) != 0 {
		t.Fatalf("a second start: %+v; want the first start's passwords and URL", again)
	}
	for _, u := range users {
		password := map[string]string{again.agent.User: again.agent.Password, again.admin.User: again.admin.Password}[u.Name]
		if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
			t.Errorf("user %s: the bus's hash is not the kept password's", u.Name)
		}
	}

	rotated, _, err := makeLocalUsers(dir, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.agent.Password == first.agent.Password || rotated.admin.Password == first.admin.Password {
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
	if open.agent.Password == first.agent.Password || open.admin.Password != first.admin.Password {
		t.Fatal("a credentials file open to others was kept, or the other one was not")
	}
	// Another name (a cluster node's users end with its name).
	renamed, _, err := makeLocalUsers(dir, clusterUserSuffix("two"), false)
	if err != nil {
		t.Fatal(err)
	}
	if renamed.admin.Password == first.admin.Password || renamed.admin.User != "admin-two" {
		t.Fatalf("a file of user admin kept for %s", renamed.admin.User)
	}
	// The users of the files it replaces leave a cluster (leaveReplaced).
	if !slices.Equal(renamed.replaced, []string{"agent", "admin"}) {
		t.Errorf("a start under another name replaces %v, want the users agent and admin", renamed.replaced)
	}
}

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
