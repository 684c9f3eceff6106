package client_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A session whose node is gone is listed by every live node (from the
// session registry); the gathered list has it once, as unreachable.
func TestSessionsOfAGoneNodeListedOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	headless := cdpdriver.LaunchOptions{Headless: true}
	one, err := actors.StartNode(ctx, actors.NodeOptions{Name: "one", Prefix: "fbgone", Launch: headless})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { one.Close() })
	admin := bustest.AddUser(t, one.Bus(), protocol.RoleAdmin)
	u, _ := url.Parse(admin.URL)
	u.User = url.UserPassword(admin.User, admin.Password)
	two, err := actors.StartNode(ctx, actors.NodeOptions{Name: "two", Prefix: "fbgone", Launch: headless, Bus: bus.Options{URL: u.String()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { two.Close() })

	js, _ := jetstream.New(bustest.Connect(t, one.Bus(), protocol.RoleAdmin))
	kv, err := js.KeyValue(ctx, one.Subjects().SessionsBucket())
	if err != nil {
		t.Fatal(err)
	}
	gone, _ := json.Marshal(protocol.SessionEntry{Session: "sghost", Domain: "example.test", Node: "ghost"})
	if _, err := kv.Create(ctx, "example.test", gone); err != nil {
		t.Fatal(err)
	}
	agentCreds := bustest.AddUser(t, one.Bus(), protocol.RoleAgent)
	agentCreds.Prefix = "fbgone"
	agent := connect(t, agentCreds.URL, &agentCreds, nil)
	both := []protocol.NodeState{{Node: "one", State: protocol.NodeAnswered}, {Node: "two", State: protocol.NodeAnswered}}
	deadline := time.Now().Add(testscale.D(10 * time.Second)) // until each node's watch sees the other
	for {
		sl, err := agent.Sessions(ctx)
		if err == nil && len(sl.Nodes) == 2 && sl.Nodes[0] == both[0] && sl.Nodes[1] == both[1] {
			if len(sl.Sessions) != 1 || sl.Sessions[0].Session != "sghost" || sl.Sessions[0].State != protocol.NodeUnreachable || sl.Sessions[0].Node != "ghost" {
				t.Fatalf("the sessions of two nodes and a gone one: %+v", sl)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions of two nodes: %+v %v", sl, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
