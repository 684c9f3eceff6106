package protocol

import (
	"errors"
	"testing"
)

func TestRolePermissionsRefusesUnknown(t *testing.T) {
	for _, tc := range []struct{ role, user string }{{"root", "bob"}, {"", "bob"}, {RoleAgent, "a.b"}, {RoleAgent, ""}, {RoleObserver, "x>"}} {
		if _, err := DefaultSubjects.RolePermissions(tc.role, tc.user); !errors.Is(err, &Error{Code: CodeBadRequest}) {
			t.Errorf("RolePermissions(%q, %q): %v, want bad_request", tc.role, tc.user, err)
		}
	}
	p, err := DefaultSubjects.RolePermissions(RoleObserver, "bob")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Subscribe.Allow {
		if s == ">" || s == "_INBOX.>" {
			t.Errorf("an observer may subscribe to %s", s)
		}
	}
}

func TestNodeFrame(t *testing.T) {
	node := map[string]string{"Nats-Msg-Id": "T1.7"}
	for _, tc := range []struct {
		name    string
		subject string
		header  map[string]string
		frame   Frame
		ok      bool
	}{
		{"the node's", "framebus.tab.T1.frame", node, Frame{Tab: "T1", Sequence: 7}, true},
		{"no message id", "framebus.tab.T1.frame", nil, Frame{Tab: "T1", Sequence: 7}, false},
		{"another sequence's id", "framebus.tab.T1.frame", node, Frame{Tab: "T1", Sequence: 8}, false},
		{"another tab's frame", "framebus.tab.T2.frame", map[string]string{"Nats-Msg-Id": "T2.7"}, Frame{Tab: "T1", Sequence: 7}, false},
		{"a JetStream answer", "framebus.tab.T1.frame", map[string]string{"Nats-Msg-Id": "T1.7", "Nats-Stream": "FRAMEBUS_FRAMES"}, Frame{Tab: "T1", Sequence: 7}, false},
		{"a message id that is no sequence", "framebus.tab.T1.frame", map[string]string{"Nats-Msg-Id": "T1.x"}, Frame{Tab: "T1", Sequence: 7}, false},
		{"a frame of another tab under a right id", "framebus.tab.T1.frame", node, Frame{Tab: "T2", Sequence: 7}, false},
		{"not a frame subject", "framebus.tab.T1.plan", node, Frame{Tab: "T1", Sequence: 7}, false},
		{"another prefix", "other.tab.T1.frame", node, Frame{Tab: "T1", Sequence: 7}, false},
	} {
		err := DefaultSubjects.NodeFrame(tc.subject, func(k string) string { return tc.header[k] }, tc.frame)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// A node answers clients' inboxes only: not a server's answer (no reply
// subject, JetStream's), nor a subject a request names to have the node
// publish there.
func TestAnswerable(t *testing.T) {
	for reply, want := range map[string]bool{
		"_INBOX.abc.def":              true,
		"_INBOX_agent.abc":            true,
		"":                            false,
		"$JS.ACK.FRAMEBUS_FRAMES.x.1": false,
		"framebus.tab.T.frame":        false,
		"framebus.tab.T.plan":         false,
		"framebus.admin.users.add":    false,
		"_INBOXfoo":                   false,
	} {
		if got := Answerable(reply); got != want {
			t.Errorf("Answerable(%q) = %v, want %v", reply, got, want)
		}
	}
}
