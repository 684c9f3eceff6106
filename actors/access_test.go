package actors

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
)

// Whoever may create consumers (an admin: agents and observers have no
// consumer API) may point a consumer's deliver subject anywhere, the
// server checks no permission there; and an agent may name its own plan
// subject as the reply of a direct get through its history API, whose
// answer its account's service import then takes on to the node. Either
// way the server sends stored messages to a tab's plan subject. Stored
// content shaped like a plan (a page's text in the content bucket could
// be) must not run.
func TestJetStreamDeliveriesAreNotPlans(t *testing.T) {
	node := startTestNode(t, NodeOptions{Bus: bus.Options{JetStream: &bus.JetStreamOptions{}}})
	subj := node.Subjects()
	tab := node.Tabs()[0].Tab

	// Stored: a plan, in a subject of the frame stream.
	admin := bustest.Connect(t, node.Bus(), protocol.RoleAdmin)
	if err := admin.Publish(subj.HistoryFrames("STORED"), []byte(`{"action":{"type":"eval","expression":"window.__delivered = 'ran'"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	req := fmt.Sprintf(`{"stream_name":%q,"config":{"deliver_subject":%q,"filter_subject":%q,"ack_policy":"none"}}`,
		subj.FrameStream(), subj.TabPlan(tab), subj.TabFrames("STORED"))
	msg, err := admin.Request("$JS.API.CONSUMER.CREATE."+subj.FrameStream(), []byte(req), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Error *struct{ Description string } `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &created); err != nil || created.Error != nil {
		t.Fatalf("the admin's consumer: %s", msg.Data)
	}

	// And the same stored message as a direct get's answer, with the plan
	// subject named as the reply: JetStream publishes it there, in the
	// agent's account, with no reply subject of its own. (Measured: the
	// account's wildcard plan import does not take it on to the node; if it
	// did, it would arrive as the delivery does.) A direct get after it is
	// answered after it.
	agent := bustest.Connect(t, node.Bus(), protocol.RoleAgent)
	get := subj.JSAPIPrefix() + ".DIRECT.GET." + subj.FrameStream()
	last := []byte(fmt.Sprintf(`{"last_by_subj":%q}`, subj.TabFrames("STORED")))
	if err := agent.PublishRequest(get, subj.TabPlan(tab), last); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Request(get, last, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// The delivery reached the tab's plan endpoint (its handler is done
	// when the count goes up)...
	waitUntil(t, func() bool {
		for _, e := range node.Tab(tab).svc.Stats().Endpoints {
			if e.Name == "plan" && e.NumRequests >= 1 {
				return true
			}
		}
		return false
	})
	// ...and did not run: the agent's eval, queued after it, sees nothing.
	res, err := request(agent, tab, one(protocol.Action{Type: "eval", Expression: "String(window.__delivered)"}))
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || len(res.Results) != 1 || string(res.Results[0].Value) != `"undefined"` {
		t.Fatalf("after the delivery: %+v", res)
	}
}

// A request may name any reply subject, and the node answers there: an
// observer's tab list request naming a tab's frame subject would have the
// node publish the list as that tab's frame, to every watcher and into
// the history. The node answers inboxes only.
func TestNodeAnswersOnlyInboxes(t *testing.T) {
	node := startTestNode(t, NodeOptions{Bus: bus.Options{JetStream: &bus.JetStreamOptions{}}})
	subj := node.Subjects()
	tab := node.Tabs()[0].Tab
	observer := bustest.Connect(t, node.Bus(), protocol.RoleObserver)
	watcher := bustest.Connect(t, node.Bus(), protocol.RoleObserver)
	frames, err := watcher.SubscribeSync(subj.TabFrames(tab))
	if err != nil {
		t.Fatal(err)
	}
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, aimed := range []string{subj.Tabs(), subj.BrowserStatus(), subj.SessionList(), subj.Profile(protocol.DefaultProfile, protocol.OpStatus)} {
		if err := observer.PublishRequest(aimed, subj.TabFrames(tab), nil); err != nil {
			t.Fatal(err)
		}
	}
	// A real request after them: once it is answered, they were handled.
	if _, err := observer.Request(subj.Tabs(), nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	got := 0
	for {
		if _, err := frames.NextMsg(500 * time.Millisecond); err != nil {
			break
		}
		got++
	}
	if got != 0 {
		t.Fatalf("%d answers of the node reached the tab's frame subject", got)
	}
}

// JetStream answers a malformed direct get with a status message and no
// body; a reader may aim it, as a reply subject, at the JetStream API. At
// the purge API it would empty the history. From an observer's account
// the answer never reaches the node's API; from the node's own account (an
// admin's mistake) the frame stream denies purges and deletes, whoever
// asks.
func TestHistoryCannotBePurgedByAimedAnswers(t *testing.T) {
	node := startTestNode(t, NodeOptions{Bus: bus.Options{JetStream: &bus.JetStreamOptions{}}})
	subj := node.Subjects()
	tab := node.Tabs()[0].Tab
	agent := bustest.Connect(t, node.Bus(), protocol.RoleAgent)
	if res, err := request(agent, tab, evals(3)); err != nil || !res.OK {
		t.Fatalf("evals: %+v %v", res, err)
	}
	stream := subj.FrameStream()
	stored := func() uint64 {
		t.Helper()
		msg, err := agent.Request(subj.JSAPIPrefix()+".STREAM.INFO."+stream, nil, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			State struct {
				Msgs uint64 `json:"messages"`
			} `json:"state"`
		}
		if err := json.Unmarshal(msg.Data, &info); err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	waitUntil(t, func() bool { return stored() >= 4 })
	before := stored()
	observer := bustest.Connect(t, node.Bus(), protocol.RoleObserver)
	admin := bustest.Connect(t, node.Bus(), protocol.RoleAdmin)
	for _, api := range []string{"$JS.API.STREAM.PURGE." + stream, "$JS.API.STREAM.MSG.DELETE." + stream} {
		if err := observer.PublishRequest(subj.JSAPIPrefix()+".DIRECT.GET."+stream, api, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := admin.PublishRequest("$JS.API.DIRECT.GET."+stream, api, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, nc := range []*nats.Conn{observer, admin} {
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// The answers are JetStream's to send; a stream info after them is
	// answered after them.
	if after := stored(); after != before {
		t.Fatalf("the history held %d frames, %d after a reader aimed answers at the purge API", before, after)
	}
}
