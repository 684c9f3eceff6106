package serving

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A Go program runs a node as serve does: it registers in the state
// file, writes its own credentials beside it (0600), answers the admin's
// user requests; Stop removes the state file and keeps the credentials,
// whose passwords the next start takes again.
func TestStartRegistersAndStopKeepsCredentials(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "node.json")
	opts := Options{StatePath: path, Node: actors.NodeOptions{
		Bus:    bus.Options{Host: "127.0.0.1"},
		Launch: cdpdriver.LaunchOptions{Headless: true},
		Prefix: protocol.DefaultPrefix,
		Logger: zerolog.Nop(),
	}}
	start := func() (*Node, protocol.Credentials, protocol.Credentials) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
		defer cancel()
		n, err := Start(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		agent, err := ReadCredentials(filepath.Join(filepath.Dir(path), AgentCredsFile))
		if err != nil {
			n.Stop()
			t.Fatal(err)
		}
		admin, err := ReadCredentials(filepath.Join(filepath.Dir(path), AdminCredsFile))
		if err != nil {
			n.Stop()
			t.Fatal(err)
		}
		return n, agent, admin
	}

	n, agent, admin := start()
	st := n.State()
	if !st.OK || st.PID != os.Getpid() || len(st.Tabs) == 0 || agent.URL != st.Bus || admin.URL != st.Bus {
		t.Errorf("state %+v, agent at %s, admin at %s", st, agent.URL, admin.URL)
	}
	if got, err := ReadState(path); err != nil || got.Bus != st.Bus || got.Node != st.Node {
		t.Errorf("the state file: %+v, %v; want %+v", got, err, st)
	}
	for _, file := range []string{path, filepath.Join(filepath.Dir(path), AgentCredsFile), filepath.Join(filepath.Dir(path), AdminCredsFile)} {
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want 0600", file, fi.Mode(), err)
		}
	}
	nc, err := nats.Connect(admin.URL, nats.UserInfo(admin.User, admin.Password), nats.CustomInboxPrefix(admin.InboxPrefix))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := nc.Request(protocol.Subjects{Prefix: st.Prefix}.AdminUsers(protocol.UsersList), nil, testscale.D(10*time.Second))
	nc.Close()
	var users protocol.UsersReply
	if err == nil {
		err = json.Unmarshal(msg.Data, &users)
	}
	if err != nil || !users.OK || !slices.ContainsFunc(users.Users, func(u protocol.UserInfo) bool { return u.Name == LocalAgentUser }) {
		t.Errorf("users list: %+v, %v", users, err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the state file after Stop: %v", err)
	}

	again, agentAgain, _ := start()
	defer again.Stop()
	if agentAgain.Password != agent.Password {
		t.Errorf("the agent's password changed from one start to the next")
	}
}
