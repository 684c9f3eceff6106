package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// What a client that follows its node (framebus mcp) logs in with and
// dials, as dial finds the bus: through the state file it follows the
// node's address and reads its credentials file again; a bus URL that
// logs in keeps its own login (nats refuses a URL's user beside a login
// handler); a bus named on the command line is dialled as named.
func TestFollowNodeOptions(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "node.json")
	if err := serving.WriteCredentials(filepath.Join(dir, serving.AgentCredsFile), protocol.Credentials{User: "agent", Password: "pw1", URL: "nats://127.0.0.1:4999"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		bus        string // in the state file
		flags      clientFlags
		dials, log bool // a state dialer, a login handler
	}{
		{"the state file's node", "nats://127.0.0.1:4999", clientFlags{}, true, true},
		{"a node on an external bus that logs in", "nats://u:secret@127.0.0.1:4999", clientFlags{}, true, false},
		{"a bus named", "nats://127.0.0.1:4999", clientFlags{bus: "nats://127.0.0.1:5000"}, false, true},
		{"a bus named with its login", "nats://127.0.0.1:4999", clientFlags{bus: "nats://u:p@127.0.0.1:5000"}, false, false},
	} {
		if err := serving.WriteState(state, serving.State{OK: true, Bus: c.bus, PID: os.Getpid()}); err != nil {
			t.Fatal(err)
		}
		cl := &cli{getenv: func(k string) string {
			if k == envState {
				return state
			}
			return ""
		}}
		o := nats.GetDefaultOptions()
		o.User, o.Password = "agent", "pw1" // as busclient sets them from the file
		for _, opt := range cl.followNode(c.flags) {
			if err := opt(&o); err != nil {
				t.Fatal(err)
			}
		}
		_, dials := o.CustomDialer.(*stateDialer)
		if dials != c.dials || (o.UserInfo != nil) != c.log || !o.IgnoreAuthErrorAbort {
			t.Errorf("%s: state dialer %v, login handler %v, refusals not final %v; want %v, %v, true",
				c.name, dials, o.UserInfo != nil, o.IgnoreAuthErrorAbort, c.dials, c.log)
		}
		if o.UserInfo != nil && o.User != "" {
			t.Errorf("%s: a user %q beside the login handler", c.name, o.User)
		}
		if o.UserInfo != nil {
			// The file rewritten (a rotated password) is what the next
			// connect sends.
			if err := serving.WriteCredentials(filepath.Join(dir, serving.AgentCredsFile), protocol.Credentials{User: "agent", Password: "pw2", URL: "nats://127.0.0.1:4999"}); err != nil {
				t.Fatal(err)
			}
			if user, pw := o.UserInfo(); user != "agent" || pw != "pw2" {
				t.Errorf("%s: the login after the file changed: %s %s", c.name, user, pw)
			}
			serving.WriteCredentials(filepath.Join(dir, serving.AgentCredsFile), protocol.Credentials{User: "agent", Password: "pw1", URL: "nats://127.0.0.1:4999"})
		}
	}
}
