package actors

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
)

// An observer may create consumers, and a consumer's deliver subject is
// anything (the server checks no permission there); it may also name any
// reply subject in a direct get. Either way it can make the server send
// stored messages to a tab's plan subject. Stored content shaped like a
// plan (a page's text in the content bucket could be) must not run.
func TestJetStreamDeliveriesAreNotPlans(t *testing.T) {
	node := startTestNode(t, NodeOptions{Bus: bus.Options{JetStream: &bus.JetStreamOptions{}}})
	subj := node.Subjects()
	tab := node.Tabs()[0].Tab

	// Stored: a plan, in a subject of the frame stream.
	admin := bustest.Connect(t, node.Bus(), protocol.RoleAdmin)
	if err := admin.Publish(subj.TabFrames("STORED"), []byte(`{"action":{"type":"eval","expression":"window.__delivered = 'ran'"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	observer := bustest.Connect(t, node.Bus(), protocol.RoleObserver)
	req := fmt.Sprintf(`{"stream_name":%q,"config":{"deliver_subject":%q,"filter_subject":%q,"ack_policy":"none"}}`,
		subj.FrameStream(), subj.TabPlan(tab), subj.TabFrames("STORED"))
	msg, err := observer.Request("$JS.API.CONSUMER.CREATE."+subj.FrameStream(), []byte(req), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Error *struct{ Description string } `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &created); err != nil || created.Error != nil {
		t.Fatalf("the observer's consumer: %s", msg.Data)
	}

	// And the same stored message as a direct get's answer, with the plan
	// subject named as the reply: JetStream publishes it there, with no
	// reply subject of its own.
	if err := observer.PublishRequest("$JS.API.DIRECT.GET."+subj.FrameStream(), subj.TabPlan(tab),
		[]byte(fmt.Sprintf(`{"last_by_subj":%q}`, subj.TabFrames("STORED")))); err != nil {
		t.Fatal(err)
	}

	// Both reached the tab's plan endpoint (its handler is done when the
	// count goes up)...
	waitUntil(t, func() bool {
		for _, e := range node.Tab(tab).svc.Stats().Endpoints {
			if e.Name == "plan" && e.NumRequests >= 2 {
				return true
			}
		}
		return false
	})
	// ...and did not run: the agent's eval, queued after it, sees nothing.
	agent := bustest.Connect(t, node.Bus(), protocol.RoleAgent)
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
// the purge API it would empty the history: the frame stream denies
// purges and deletes, whoever asks.
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
		msg, err := agent.Request("$JS.API.STREAM.INFO."+stream, nil, 10*time.Second)
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
	for _, api := range []string{"$JS.API.STREAM.PURGE." + stream, "$JS.API.STREAM.MSG.DELETE." + stream} {
		if err := observer.PublishRequest("$JS.API.DIRECT.GET."+stream, api, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := observer.Flush(); err != nil {
		t.Fatal(err)
	}
	// The answers are JetStream's to send; a stream info after them is
	// answered after them.
	if after := stored(); after != before {
		t.Fatalf("the history held %d frames, %d after a reader aimed answers at the purge API", before, after)
	}
}
