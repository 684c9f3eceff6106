package bus_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/protocol"
)

// accountsNode is a bus with the node's history streams, a tab list and a
// micro service as a node has them, and three users, each in an account
// of its own: the observers "obs" and "peer", and the agent "agent".
type accountsNode struct {
	b      *bus.Bus
	subj   protocol.Subjects
	nc     *nats.Conn
	stream jetstream.Stream
	obj    jetstream.ObjectStore
	seq    int64

	mu        sync.Mutex
	tabsAsked []string // the reply subjects of the tab list requests the node got
}

func startAccountsNode(t *testing.T) *accountsNode {
	t.Helper()
	n := &accountsNode{subj: protocol.Subjects{Prefix: "fb"}}
	n.b = startBus(t, bus.Options{Prefix: "fb", JetStream: &bus.JetStreamOptions{}, Users: []bus.User{
		{Name: "obs", PasswordHash: testHash, Role: protocol.RoleObserver},
		{Name: "peer", PasswordHash: testHash, Role: protocol.RoleObserver},
		{Name: "agent", PasswordHash: testHash, Role: protocol.RoleAgent},
	}})
	n.nc = connect(t, n.b, "node")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	js, err := jetstream.New(n.nc)
	if err != nil {
		t.Fatal(err)
	}
	if n.stream, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name: n.subj.FrameStream(), Subjects: []string{n.subj.AllFrames()}, Storage: jetstream.MemoryStorage,
		MaxMsgsPerSubject: 1000, AllowDirect: true, Duplicates: time.Minute, DenyPurge: true, DenyDelete: true,
	}); err != nil {
		t.Fatal(err)
	}
	if n.obj, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: n.subj.ContentBucket(), Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.nc.Subscribe(n.subj.Tabs(), func(m *nats.Msg) {
		n.mu.Lock()
		n.tabsAsked = append(n.tabsAsked, m.Reply)
		n.mu.Unlock()
		if protocol.Answerable(m.Reply) {
			m.Respond([]byte(`{"ok":true,"tabs":[]}`))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := micro.AddService(n.nc, micro.Config{Name: "framebus", Version: "0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if err := n.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return n
}

// frame publishes T1's next frame, as the node does.
func (n *accountsNode) frame(t *testing.T) int64 {
	t.Helper()
	n.seq++
	m := nats.NewMsg(n.subj.TabFrames("T1"))
	m.Header.Set(jetstream.MsgIDHeader, protocol.FrameMsgID("T1", n.seq))
	m.Data, _ = json.Marshal(protocol.Frame{Tab: "T1", Sequence: n.seq, URL: "http://127.0.0.1/x"})
	// Published as the node's frameStore stores it: acknowledged, so the
	// stream has it before the test reads it back (a core publish is
	// stored a moment after its flush: "current frame" read frame 1 after
	// frame 2 was published, once in a clean-clone run).
	js, err := jetstream.New(n.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	return n.seq
}

// Agents and observers, each in an account of its own, read all they
// should through their imports: live frames, the tab list and micro
// discovery, and the history through the JetStream API prefix (stream
// info, the current frame, a batch of stored frames, a content object).
func TestUsersReadAcrossAccounts(t *testing.T) {
	n := startAccountsNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	content := strings.Repeat("page ", 100_000) // several chunks
	if _, err := n.obj.PutString(ctx, protocol.ContentObject("T1", 2), content); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"obs", "agent"} {
		uc := mustDialAs(t, n.b.ClientURL(), user)
		live := subscribeSync(t, uc.nc, n.subj.TabFrames("T1"))
		want := n.frame(t)
		m, err := live.NextMsg(wait)
		if err != nil {
			t.Fatalf("%s: live frame: %v", user, err)
		}
		if _, seq, err := n.subj.NodeFrameHeader(m.Subject, m.Header.Get); err != nil || seq != want {
			t.Fatalf("%s: live frame %d: %d, %v", user, want, seq, err)
		}

		if m, err := uc.nc.Request(n.subj.Tabs(), nil, wait); err != nil || !strings.Contains(string(m.Data), `"ok":true`) {
			t.Fatalf("%s: tabs: %v", user, err)
		}
		n.mu.Lock()
		asked := n.tabsAsked[len(n.tabsAsked)-1]
		n.mu.Unlock()
		if !strings.HasPrefix(asked, "_R_.") {
			t.Errorf("%s: the node got the tab list request with reply %q, want the server's _R_. mapping", user, asked)
		}
		if m, err := uc.nc.Request("$SRV.PING.framebus", nil, wait); err != nil || !strings.Contains(string(m.Data), `"name":"framebus"`) {
			t.Fatalf("%s: $SRV.PING: %v", user, err)
		}

		js, err := jetstream.NewWithAPIPrefix(uc.nc, n.subj.JSAPIPrefix())
		if err != nil {
			t.Fatal(err)
		}
		stream, err := js.Stream(ctx, n.subj.FrameStream())
		if err != nil {
			t.Fatalf("%s: stream info: %v", user, err)
		}
		last, err := stream.GetLastMsgForSubject(ctx, n.subj.TabFrames("T1"))
		if err != nil || last.Header.Get(jetstream.MsgIDHeader) != protocol.FrameMsgID("T1", want) {
			t.Fatalf("%s: current frame: %v, %v", user, last, err)
		}
		if got := batchGet(t, uc.nc, n.subj.JSAPIPrefix()+".DIRECT.GET."+n.subj.FrameStream(),
			fmt.Sprintf(`{"seq":1,"batch":100,"next_by_subj":%q}`, n.subj.TabFrames("T1"))); len(got) != int(want) {
			t.Fatalf("%s: a batch get of T1's frames gave %d, want %d", user, len(got), want)
		}
		meta := "$O." + n.subj.ContentBucket() + ".M." + base64.URLEncoding.EncodeToString([]byte(protocol.ContentObject("T1", 2)))
		mm, err := uc.nc.Request(n.subj.JSAPIPrefix()+".DIRECT.GET.OBJ_"+n.subj.ContentBucket()+"."+meta, nil, wait)
		if err != nil || !strings.Contains(string(mm.Data), `"size":500000`) {
			t.Fatalf("%s: the content object's meta: %v", user, err)
		}
	}
}

// batchGet sends a batch direct get and returns the stored messages it
// answers with, up to the server's end-of-batch status.
func batchGet(t *testing.T, nc *nats.Conn, subject, req string) []*nats.Msg {
	t.Helper()
	sub, err := nc.SubscribeSync(nc.NewRespInbox())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subject, sub.Subject, []byte(req)); err != nil {
		t.Fatal(err)
	}
	var got []*nats.Msg
	for {
		m, err := sub.NextMsg(wait)
		if err != nil {
			t.Fatalf("batch get on %s: %v after %d", subject, err, len(got))
		}
		if m.Header.Get("Status") != "" { // 204 EOB, or 404 when there is nothing
			return got
		}
		got = append(got, m)
	}
}

// The attack the accounts close: a user names, as the reply of requests
// it may make, subjects of the node's account (a tab's frames, a plan,
// the JetStream API's stream deletion), and the servers (micro, the node,
// JetStream) answer there. With users in accounts of their own, every
// answer goes back to the asker's account: nothing reaches the node's
// account or another user's, nothing is stored, no stream is deleted.
func TestAimedAnswersStayWithTheAsker(t *testing.T) {
	n := startAccountsNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	obs := mustDialAs(t, n.b.ClientURL(), "obs")
	agent := mustDialAs(t, n.b.ClientURL(), "agent")
	peer := mustDialAs(t, n.b.ClientURL(), "peer")
	subj := n.subj
	api := subj.JSAPIPrefix() + "."
	frames, objStream := subj.FrameStream(), "OBJ_"+subj.ContentBucket()

	// What reaches the node's account: everything under the prefix that
	// is not a client's request, and what reaches another user.
	// (One channel: the messages of the three in the order they came.)
	nodeSees := make(chan *nats.Msg, 100_000)
	for _, s := range []string{"fb.>", "$JS.API.>", "$SRV.>"} {
		if _, err := n.nc.ChanSubscribe(s, nodeSees); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	peerSees := subscribeSync(t, peer.nc, subj.TabFrames("T1"))
	n.frame(t)
	if _, err := n.obj.PutBytes(ctx, protocol.ContentObject("T1", 1), []byte(strings.Repeat("page bytes ", 30000))); err != nil {
		t.Fatal(err)
	}
	aims := []string{
		subj.TabFrames("T1"), subj.TabEvents("T1", "console"), subj.TabPlan("T1"), subj.Tabs(),
		"$JS.API.STREAM.DELETE." + frames, "$JS.API.STREAM.DELETE." + objStream,
		"$JS.API.STREAM.PURGE." + frames, api + "STREAM.INFO." + frames,
	}
	asks := []struct{ subject, data string }{
		{"$SRV.PING", ""}, {"$SRV.INFO", ""}, {"$SRV.STATS", ""}, {"$SRV.PING.framebus", ""},
		{subj.Tabs(), ""},
		{api + "DIRECT.GET." + frames, `{"seq":1}`},
		{api + "DIRECT.GET." + frames, `{"seq":1,"batch":5}`},
		{api + "DIRECT.GET." + frames, `not json`},      // a bodiless 408 status
		{api + "DIRECT.GET." + frames, `{"seq":99999}`}, // a bodiless 404 status
		{api + "DIRECT.GET." + frames + "." + subj.TabFrames("T1"), ""},
		{api + "DIRECT.GET." + objStream, `{"seq":1}`},
		{api + "DIRECT.GET." + objStream, `{"seq":1,"batch":5}`},
		{api + "STREAM.INFO." + frames, ""},
		{api + "STREAM.MSG.GET." + frames, `{"seq":1}`},
		{api + "INFO", ""},
	}
	for _, attacker := range []*userConn{obs, agent} {
		for _, aim := range aims {
			for _, a := range asks {
				if err := attacker.nc.PublishRequest(a.subject, aim, []byte(a.data)); err != nil {
					t.Fatal(err)
				}
			}
		}
		// No consumer API at all: a push consumer would deliver in the
		// stream's account, wherever its maker says.
		for _, s := range []string{frames, objStream} {
			req := fmt.Sprintf(`{"stream_name":%q,"config":{"deliver_subject":%q,"ack_policy":"none"}}`, s, subj.TabFrames("T1"))
			for _, to := range []string{api + "CONSUMER.CREATE." + s, "$JS.API.CONSUMER.CREATE." + s} {
				if err := attacker.nc.PublishRequest(to, attacker.nc.NewRespInbox(), []byte(req)); err != nil {
					t.Fatal(err)
				}
				attacker.expectDenied(t, "publish", to)
			}
		}
		// Everything aimed has been answered once real requests of each
		// kind after it have been (each kind is answered in order).
		for _, a := range asks {
			if a.data == `not json` || a.data == `{"seq":99999}` {
				continue
			}
			if _, err := attacker.nc.Request(a.subject, []byte(a.data), wait); err != nil {
				t.Fatalf("%s: %v", a.subject, err)
			}
		}
	}
	last := n.frame(t)

	// The node's account got the users' requests (each with a reply the
	// server made, _R_.), the node's frames, and answers that were aimed
	// at a request subject the attacker imports: a service import takes
	// them on, but they come without a reply, and a node answers no such
	// thing (protocol.Answerable). Nothing else: no frame or event, no
	// deletion.
	onTabSubjects, replyless := 0, map[string]int{}
	for {
		var m *nats.Msg
		select {
		case m = <-nodeSees:
		case <-time.After(wait):
			t.Fatalf("the node's frame %d did not come", last)
		}
		if _, seq, err := subj.NodeFrameHeader(m.Subject, m.Header.Get); err == nil {
			if seq == last {
				break
			}
			continue
		}
		switch {
		case strings.HasPrefix(m.Subject, "fb.tab.T1.frame"), strings.HasPrefix(m.Subject, "fb.tab.T1.event."):
			onTabSubjects++
			t.Errorf("reached the node's account: %s reply %q header %v: %.80s", m.Subject, m.Reply, m.Header, m.Data)
		case protocol.Answerable(m.Reply):
			// a user's request (_R_.), or the node's own (_INBOX.)
		default:
			replyless[m.Subject]++
		}
	}
	peerGot := 0
	for {
		m, err := peerSees.NextMsg(wait)
		if err != nil {
			t.Fatalf("another user's watch: the node's frame %d: %v", last, err)
		}
		if _, seq, err := subj.NodeFrameHeader(m.Subject, m.Header.Get); err != nil {
			peerGot++
		} else if seq == last {
			break
		}
	}
	info, err := n.stream.Info(ctx, jetstream.WithSubjectFilter(subj.TabFrames("T1")))
	if err != nil {
		t.Fatalf("the frame stream after the attacks: %v", err)
	}
	stored := int(info.State.Subjects[subj.TabFrames("T1")]) - int(n.seq)
	if _, err := n.obj.GetInfo(ctx, protocol.ContentObject("T1", 1)); err != nil {
		t.Errorf("the content bucket after the attacks: %v", err)
	}
	t.Logf("%d aimed requests: %d reached the node's account on a tab's subjects or with a reply, %d another user's watch, %d stored in the frame stream; taken on by the attacker's service imports, without a reply: %v",
		2*len(aims)*len(asks), onTabSubjects, peerGot, stored, replyless)
	if peerGot != 0 || stored != 0 {
		t.Errorf("another user saw %d, the stream stored %d; want 0 and 0", peerGot, stored)
	}
}

// Adding and removing users disturbs nobody else: an agent's requests
// all find their responder while users come and go. (With users in the
// server's configuration, each change was a reload that rebuilt every
// account's imports: 764 of 2554 requests found no responder during 30.)
func TestUserChangesDisturbNoOne(t *testing.T) {
	n := startAccountsNode(t)
	agent := mustDialAs(t, n.b.ClientURL(), "agent")
	var ok, failed atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := agent.nc.Request(n.subj.Tabs(), nil, wait); err != nil {
				failed.Add(1)
			} else {
				ok.Add(1)
			}
		}
	}()
	changes := 0
	for ; changes < 60 || ok.Load()+failed.Load() < 1000; changes++ {
		name := fmt.Sprint("u", changes%5)
		if changes%10 < 5 {
			if err := n.b.AddUser(bus.User{Name: name, PasswordHash: testHash, Role: protocol.RoleObserver}); err != nil {
				t.Fatal(err)
			}
		} else if err := n.b.RemoveUser(name); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	t.Logf("%d user changes: %d requests answered, %d failed", changes, ok.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d of %d requests failed while users changed", failed.Load(), ok.Load()+failed.Load())
	}
}
