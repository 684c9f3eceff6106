package bus_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

const testPassword = "correct horse"

// testHash is testPassword's bcrypt hash, at bcrypt's cheapest cost.
var testHash = func() string {
	h, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	if err != nil {
		panic(err)
	}
	return string(h)
}()

// userConn is a user's TCP (or WebSocket) connection that collects the
// subjects the server refused it.
type userConn struct {
	nc     *nats.Conn
	denied chan string // "publish X" or "subscribe X"
}

func dialAs(t *testing.T, url, user, password string, extra ...nats.Option) (*userConn, error) {
	t.Helper()
	uc := &userConn{denied: make(chan string, 100)}
	nc, err := nats.Connect(url, append([]nats.Option{nats.UserInfo(user, password), nats.CustomInboxPrefix(protocol.InboxPrefix(user)),
		nats.NoReconnect(), nats.PermissionErrOnSubscribe(true),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if verb, subject, ok := protocol.ParsePermissionViolation(err.Error()); ok {
				uc.denied <- verb + " " + subject
			}
		})}, extra...)...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(nc.Close)
	uc.nc = nc
	return uc, nil
}

func mustDialAs(t *testing.T, url, user string) *userConn {
	t.Helper()
	uc, err := dialAs(t, url, user, testPassword)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	return uc
}

// expectDenied waits for the server's refusal of verb on subject.
func (uc *userConn) expectDenied(t *testing.T, verb, subject string) {
	t.Helper()
	want := verb + " " + subject
	deadline := time.After(5 * time.Second)
	for {
		select {
		case got := <-uc.denied:
			if got == want {
				return
			}
		case <-deadline:
			t.Errorf("no permissions violation for %s", want)
			return
		}
	}
}

// The TCP and WebSocket listeners let no one in without a user's
// password; the node's in-process connections need none.
func TestAuthenticationRequired(t *testing.T) {
	b := startBus(t, bus.Options{WebSocket: "127.0.0.1:0", Users: []bus.User{{Name: "agent", PasswordHash: testHash, Role: protocol.RoleAgent}}})
	if !strings.HasPrefix(b.WebSocketURL(), "ws://127.0.0.1:") || strings.HasSuffix(b.WebSocketURL(), ":0") || strings.HasSuffix(b.WebSocketURL(), ":-1") {
		t.Fatalf("WebSocketURL() = %q, want ws://127.0.0.1:PORT", b.WebSocketURL())
	}
	for _, url := range []string{b.ClientURL(), b.WebSocketURL()} {
		for _, tc := range []struct{ name, user, password string }{
			{"no user", "", ""},
			{"wrong password", "agent", "wrong"},
			{"unknown user", "mallory", testPassword},
			{"the hash as password", "agent", testHash},
		} {
			t.Run(url+"/"+tc.name, func(t *testing.T) {
				opts := []nats.Option{nats.NoReconnect(), nats.Timeout(5 * time.Second)}
				if tc.user != "" {
					opts = append(opts, nats.UserInfo(tc.user, tc.password))
				}
				nc, err := nats.Connect(url, opts...)
				if err == nil {
					nc.Close()
					t.Fatal("connected")
				}
				// Over WebSocket the server may close the connection
				// before the client has read its -ERR: refused all the
				// same, as a broken connection.
				brokenOff := strings.HasPrefix(url, "ws") && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF))
				if !errors.Is(err, nats.ErrAuthorization) && !brokenOff {
					t.Fatalf("err = %v, want an authorization violation", err)
				}
			})
		}
		uc := mustDialAs(t, url, "agent")
		if err := uc.nc.FlushTimeout(wait); err != nil {
			t.Fatalf("%s as agent: %v", url, err)
		}
	}
	echo(t, connect(t, b, "node"), "test.inproc")
	request(t, connect(t, b, "client"), "test.inproc", "in-process needs no password")
}

// The request subjects of a node, and who may send to each.
var roleRequests = []struct {
	subject string
	agent   bool // the agent may send it
	observe bool // the observer may send it
}{
	{"fb.tabs", true, true},
	{"fb.browser.status", true, true},
	{"fb.browser.default.status", true, true},
	{"fb.browser.default.pages", true, true},
	{"fb.tab.T1.content", true, true},
	{"fb.session.list", true, true},
	{"fb.tab.T1.plan", true, false},
	{"fb.tab.T1.cancel", true, false},
	{"fb.tab.T1.stage", true, false},
	{"fb.browser.default.launch", true, false},
	{"fb.browser.default.close", true, false},
	{"fb.browser.default.newtab", true, false},
	{"fb.browser.default.closetab", true, false},
	{"fb.browser.work.connect", true, false},
	{"fb.session.start", true, false},
	{"fb.session.s1.stop", true, false},
	// One node's, for a cluster (placement hands requests to these).
	{"fb.node.one.browser.default.status", true, true},
	{"fb.node.one.browser.default.pages", true, true},
	{"fb.node.one.browser.default.launch", true, false},
	{"fb.node.one.browser.default.close", true, false},
	{"fb.node.one.browser.default.newtab", true, false},
	{"fb.node.one.browser.default.closetab", true, false},
	{"fb.node.one.browser.work.connect", true, false},
	{"fb.admin.users.add", false, false},
	{"fb.admin.users.list", false, false},
}

// Each role sends what it may and nothing else: a refused request fails
// at once with the server's permissions violation, and the node never
// sees it. Nobody but the node publishes frames or events, answers a
// request subject, or reads another's inbox.
func TestRolePermissions(t *testing.T) {
	b := startBus(t, bus.Options{Prefix: "fb", Users: []bus.User{
		{Name: "agent", PasswordHash: testHash, Role: protocol.RoleAgent},
		{Name: "watcher", PasswordHash: testHash, Role: protocol.RoleObserver},
	}})
	node := connect(t, b, "node")
	var mu sync.Mutex
	got := map[string]int{} // "user subject" -> messages the node received
	record := func(m *nats.Msg) {
		from := "?"
		if user, ok := strings.CutPrefix(m.Reply, "_INBOX_"); ok {
			from, _, _ = strings.Cut(user, ".")
		} else if s, ok := strings.CutPrefix(string(m.Data), "from "); ok {
			from = s
		}
		if string(m.Data) != "last" {
			mu.Lock()
			got[from+" "+m.Subject]++
			mu.Unlock()
		}
		if m.Reply != "" {
			m.Respond([]byte("ok"))
		}
	}
	for _, s := range []string{"fb.>", "$SYS.>"} {
		if _, err := node.Subscribe(s, record); err != nil {
			t.Fatal(err)
		}
	}
	if err := node.Flush(); err != nil {
		t.Fatal(err)
	}
	count := func(user, subject string) int {
		mu.Lock()
		defer mu.Unlock()
		return got[user+" "+subject]
	}

	agent := mustDialAs(t, b.ClientURL(), "agent")
	observer := mustDialAs(t, b.ClientURL(), "watcher")
	for _, user := range []struct {
		name  string
		uc    *userConn
		agent bool
	}{{"agent", agent, true}, {"watcher", observer, false}} {
		for _, rq := range roleRequests {
			if rq.observe || (user.agent && rq.agent) {
				msg, err := user.uc.nc.Request(rq.subject, []byte("from "+user.name), wait)
				if err != nil || string(msg.Data) != "ok" {
					t.Errorf("%s may send %s, but: %v", user.name, rq.subject, err)
				}
				continue
			}
			// A refused request would wait for its timeout in nats.go;
			// the server's error is what tells.
			inbox := user.uc.nc.NewRespInbox()
			if err := user.uc.nc.PublishRequest(rq.subject, inbox, []byte("from "+user.name)); err != nil {
				t.Fatal(err)
			}
			user.uc.expectDenied(t, "publish", rq.subject)
		}
		// Forged frames and events, a server request, and a reply in a
		// tab's name to someone else's inbox.
		for _, s := range []string{"fb.tab.T1.frame", "fb.tab.T1.event.dialog", "$SYS.REQ.SERVER.PING", "_INBOX_agent.x"} {
			if err := user.uc.nc.Publish(s, []byte("from "+user.name)); err != nil {
				t.Fatal(err)
			}
			if s != "_INBOX_agent.x" || user.name != "agent" {
				user.uc.expectDenied(t, "publish", s)
			}
		}
	}
	// What got through: exactly what was allowed. The node's handler
	// takes each user's messages in order, so after a last answer it has
	// seen all.
	for _, uc := range []*userConn{agent, observer} {
		if _, err := uc.nc.Request("fb.tabs", []byte("last"), wait); err != nil {
			t.Fatal(err)
		}
	}
	for _, rq := range roleRequests {
		if n := count("watcher", rq.subject); n != map[bool]int{true: 1}[rq.observe] {
			t.Errorf("the node got %d observer requests on %s", n, rq.subject)
		}
		if n := count("agent", rq.subject); n != map[bool]int{true: 1}[rq.agent] {
			t.Errorf("the node got %d agent requests on %s", n, rq.subject)
		}
	}
	for _, user := range []string{"agent", "watcher"} {
		for _, s := range []string{"fb.tab.T1.frame", "fb.tab.T1.event.dialog", "$SYS.REQ.SERVER.PING"} {
			if n := count(user, s); n != 0 {
				t.Errorf("%s published %d messages on %s", user, n, s)
			}
		}
	}

	// Subscriptions: frames and events yes; request subjects, other
	// inboxes and everything no.
	for _, uc := range []*userConn{agent, observer} {
		for _, s := range []string{"fb.tab.*.frame", "fb.tab.T1.event.>"} {
			if _, err := uc.nc.SubscribeSync(s); err != nil {
				t.Errorf("subscribe %s: %v", s, err)
			}
		}
	}
	var spies []*nats.Subscription
	for _, s := range []string{"fb.tab.T1.plan", "fb.tab.*.plan", "fb.>", ">", "_INBOX.>", "_INBOX_agent.>", "fb.session.start"} {
		sub, err := observer.nc.SubscribeSync(s)
		if err != nil {
			t.Fatal(err)
		}
		observer.expectDenied(t, "subscribe", s)
		spies = append(spies, sub)
	}
	if _, err := agent.nc.Request("fb.tab.T1.plan", []byte("from agent"), wait); err != nil {
		t.Fatalf("agent plan: %v", err)
	}
	for _, sub := range spies {
		if msg, err := sub.NextMsg(10 * time.Millisecond); err == nil {
			t.Errorf("the observer's subscription %s received %s", sub.Subject, msg.Subject)
		}
	}
}

// JetStream: users read the frame history and the content bucket; only
// admin (and the node) change streams.
func TestRoleJetStream(t *testing.T) {
	b := startBus(t, bus.Options{Prefix: "fb", JetStream: &bus.JetStreamOptions{}, Users: []bus.User{
		{Name: "agent", PasswordHash: testHash, Role: protocol.RoleAgent},
		{Name: "watcher", PasswordHash: testHash, Role: protocol.RoleObserver},
	}})
	subj := protocol.Subjects{Prefix: "fb"}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	node, err := jetstream.New(connect(t, b, "node"))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := node.CreateStream(ctx, jetstream.StreamConfig{Name: subj.FrameStream(), Subjects: []string{subj.AllFrames()}, AllowDirect: true, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	for seq := 1; seq <= 3; seq++ {
		if _, err := node.Publish(ctx, subj.TabFrames("T1"), fmt.Appendf(nil, `{"sequence":%d}`, seq)); err != nil {
			t.Fatal(err)
		}
	}
	bucket, err := node.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: subj.ContentBucket(), Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	content := strings.Repeat("page ", 100_000) // several chunks
	if _, err := bucket.PutString(ctx, protocol.ContentObject("T1", 2), content); err != nil {
		t.Fatal(err)
	}

	for _, user := range []string{"agent", "watcher"} {
		uc := mustDialAs(t, b.ClientURL(), user)
		js, err := jetstream.NewWithAPIPrefix(uc.nc, subj.JSAPIPrefix())
		if err != nil {
			t.Fatal(err)
		}
		// Reading, through the API prefix: the current frame, the history
		// in order and big content, by direct gets (no consumers).
		s, err := js.Stream(ctx, subj.FrameStream())
		if err != nil {
			t.Fatalf("%s: stream info: %v", user, err)
		}
		last, err := s.GetLastMsgForSubject(ctx, subj.TabFrames("T1"))
		if err != nil || string(last.Data) != `{"sequence":3}` {
			t.Fatalf("%s: current frame: %v %v", user, last, err)
		}
		got := batchGet(t, uc.nc, subj.JSAPIPrefix()+".DIRECT.GET."+subj.FrameStream(), `{"seq":1,"batch":10}`)
		if len(got) != 3 || string(got[2].Data) != `{"sequence":3}` {
			t.Errorf("%s: replayed %d frames, want 3", user, len(got))
		}
		var stored strings.Builder
		for _, m := range batchGet(t, uc.nc, subj.JSAPIPrefix()+".DIRECT.GET.OBJ_"+subj.ContentBucket(), `{"seq":1,"batch":100,"next_by_subj":"$O.`+subj.ContentBucket()+`.C.>"}`) {
			stored.Write(m.Data)
		}
		if stored.String() != content {
			t.Errorf("%s: content: %d bytes, want %d", user, stored.Len(), len(content))
		}
		os, err := js.ObjectStore(ctx, subj.ContentBucket())
		if err != nil {
			t.Fatalf("%s: content bucket: %v", user, err)
		}

		// Changing: refused, and nothing changed. (The jetstream package
		// waits for its context on a refused request; bus/client fails it
		// at once on the server's error.)
		for _, try := range []struct {
			subject string
			do      func(short context.Context) error
		}{
			{subj.JSAPIPrefix() + ".STREAM.DELETE." + subj.FrameStream(), func(short context.Context) error { return js.DeleteStream(short, subj.FrameStream()) }},
			{subj.JSAPIPrefix() + ".STREAM.PURGE." + subj.FrameStream(), func(short context.Context) error { return s.Purge(short) }},
			{subj.JSAPIPrefix() + ".STREAM.CREATE.EVIL", func(short context.Context) error {
				_, err := js.CreateStream(short, jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"fb.tab.*.plan"}})
				return err
			}},
			{subj.JSAPIPrefix() + ".STREAM.MSG.DELETE." + subj.FrameStream(), func(short context.Context) error { return s.DeleteMsg(short, 1) }},
			{"$O." + subj.ContentBucket() + ".M.VDEvMg==", func(short context.Context) error { return os.Delete(short, protocol.ContentObject("T1", 2)) }},
			{subj.JSAPIPrefix() + ".CONSUMER.CREATE." + subj.FrameStream(), func(short context.Context) error {
				_, err := uc.nc.Request(subj.JSAPIPrefix()+".CONSUMER.CREATE."+subj.FrameStream(), []byte(`{"stream_name":"FB_FRAMES","config":{"ack_policy":"none"}}`), time.Second)
				return err
			}},
			{"$JS.API.STREAM.DELETE." + subj.FrameStream(), func(short context.Context) error {
				_, err := uc.nc.Request("$JS.API.STREAM.DELETE."+subj.FrameStream(), nil, time.Second)
				return err
			}},
		} {
			short, cancelShort := context.WithTimeout(ctx, testscale.D(time.Second))
			if err := try.do(short); err == nil {
				t.Errorf("%s: %s succeeded", user, try.subject)
			}
			cancelShort()
			uc.expectDenied(t, "publish", try.subject)
		}
	}
	info, err := stream.Info(ctx)
	if err != nil || info.State.Msgs != 3 {
		t.Fatalf("frame stream after the attempts: %+v, %v", info, err)
	}
	if got, err := bucket.GetString(ctx, protocol.ContentObject("T1", 2)); err != nil || got != content {
		t.Fatalf("content after the attempts: %d bytes, %v", len(got), err)
	}
}

// Users added to a running bus log in at once; a removed one is cut off.
// The server reloads its options for that, JetStream's file store too.
func TestAddRemoveUser(t *testing.T) {
	for name, js := range map[string]*bus.JetStreamOptions{"no JetStream": nil, "JetStream in memory": {}, "JetStream on file": {StoreDir: t.TempDir()}} {
		t.Run(name, func(t *testing.T) { testAddRemoveUser(t, js) })
	}
}

func testAddRemoveUser(t *testing.T, js *bus.JetStreamOptions) {
	b := startBus(t, bus.Options{Prefix: "fb", WebSocket: "127.0.0.1:0", JetStream: js})
	node := connect(t, b, "node")
	if js != nil {
		if _, err := node.Request("$JS.API.STREAM.CREATE.KEPT", []byte(`{"name":"KEPT","subjects":["kept"],"storage":"memory"}`), wait); err != nil {
			t.Fatal(err)
		}
		defer func() { // the stream outlives the reloads
			msg, err := node.Request("$JS.API.STREAM.INFO.KEPT", nil, wait)
			if err != nil {
				t.Errorf("the stream after the reloads: %v", err)
			} else if !strings.Contains(string(msg.Data), `"name":"KEPT"`) {
				t.Errorf("the stream after the reloads: %s", msg.Data)
			}
		}()
	}
	if _, err := dialAs(t, b.ClientURL(), "late", testPassword); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("before AddUser: %v, want an authorization violation", err)
	}
	if err := b.AddUser(bus.User{Name: "late", PasswordHash: testHash, Role: protocol.RoleObserver}); err != nil {
		t.Fatal(err)
	}
	tcp := mustDialAs(t, b.ClientURL(), "late")
	ws := mustDialAs(t, b.WebSocketURL(), "late")
	if err := b.AddUser(bus.User{Name: "late", PasswordHash: testHash, Role: protocol.RoleAdmin}); err == nil {
		t.Fatal("adding a user twice succeeded")
	}
	if got := b.Users(); len(got) != 1 || got[0].Role != protocol.RoleObserver {
		t.Fatalf("Users() = %+v", got)
	}
	// Its account imports the node's: frames come, the history API answers.
	frames := subscribeSync(t, tcp.nc, "fb.tab.T1.frame")
	if err := node.Publish("fb.tab.T1.frame", []byte("frame")); err != nil {
		t.Fatal(err)
	}
	if _, err := frames.NextMsg(wait); err != nil {
		t.Fatalf("the added user's frames: %v", err)
	}
	if js != nil {
		if m, err := tcp.nc.Request("fb.js.API.INFO", nil, wait); err != nil || !strings.Contains(string(m.Data), "account_info_response") {
			t.Fatalf("the added user's history API: %v", err)
		}
	}
	// Its permissions are the observer's.
	if err := tcp.nc.Publish("fb.tab.T1.plan", nil); err != nil {
		t.Fatal(err)
	}
	tcp.expectDenied(t, "publish", "fb.tab.T1.plan")

	if err := b.RemoveUser("late"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for !tcp.nc.IsClosed() || !ws.nc.IsClosed() {
		if time.Now().After(deadline) {
			t.Fatal("the removed user's connections are still open")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := dialAs(t, b.ClientURL(), "late", testPassword); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("after RemoveUser: %v, want an authorization violation", err)
	}
	if err := b.RemoveUser("late"); err == nil {
		t.Fatal("removing a missing user succeeded")
	}
	// Back again, as an agent now (an account of its own for that role): it logs in
	// and reads as before.
	if err := b.AddUser(bus.User{Name: "late", PasswordHash: testHash, Role: protocol.RoleAgent}); err != nil {
		t.Fatal(err)
	}
	again := mustDialAs(t, b.ClientURL(), "late")
	if js != nil {
		if _, err := again.nc.Request("fb.js.API.INFO", nil, wait); err != nil {
			t.Fatalf("the user added again: %v", err)
		}
	}
}

// Whoever may create consumers may make the server deliver stored
// messages to any subject, a plan subject included: no permission guards
// a push consumer's deliver subject. Agents and observers may not (no
// consumer API in their accounts: TestRoleJetStream); an admin may, and
// the node tells such a message (protocol.Answerable) from a client's
// request, and drops it. An agent's request, from its own account,
// arrives with the reply the server made for it (_R_.), and is one.
func TestJetStreamDeliveryIsRecognisable(t *testing.T) {
	b := startBus(t, bus.Options{Prefix: "fb", JetStream: &bus.JetStreamOptions{}, Users: []bus.User{
		{Name: "agent", PasswordHash: testHash, Role: protocol.RoleAgent},
		{Name: "watcher", PasswordHash: testHash, Role: protocol.RoleObserver},
	}})
	node := connect(t, b, "node")
	if _, err := node.Request("$JS.API.STREAM.CREATE.FB_FRAMES", []byte(`{"name":"FB_FRAMES","subjects":["fb.tab.*.frame"],"storage":"memory"}`), wait); err != nil {
		t.Fatal(err)
	}
	stored := `{"action":{"type":"navigate","url":"https://attacker.example/"}}`
	if err := node.Publish("fb.tab.T1.frame", []byte(stored)); err != nil {
		t.Fatal(err)
	}
	plans := subscribeSync(t, node, "fb.tab.T1.plan")
	if _, err := node.Request("$JS.API.CONSUMER.CREATE.FB_FRAMES",
		[]byte(`{"stream_name":"FB_FRAMES","config":{"deliver_subject":"fb.tab.T1.plan","ack_policy":"none"}}`), wait); err != nil {
		t.Fatal(err)
	}
	delivered, err := plans.NextMsg(wait)
	if err != nil {
		t.Fatalf("no delivery: %v", err)
	}
	if string(delivered.Data) != stored || protocol.Answerable(delivered.Reply) {
		t.Fatalf("delivered %s with reply %q: not recognised as JetStream's", delivered.Data, delivered.Reply)
	}
	agent := mustDialAs(t, b.ClientURL(), "agent")
	if err := agent.nc.PublishRequest("fb.tab.T1.plan", agent.nc.NewRespInbox(), []byte(stored)); err != nil {
		t.Fatal(err)
	}
	request, err := plans.NextMsg(wait)
	if err != nil {
		t.Fatal(err)
	}
	if !protocol.Answerable(request.Reply) || !strings.HasPrefix(request.Reply, "_R_.") {
		t.Fatalf("the agent's request (reply %q) taken for a JetStream delivery", request.Reply)
	}
}

// Whoever is in the node's account (an admin) can make the server itself
// publish on a frame subject: a direct get's answer with the frame subject
// named as its reply, a consumer's deliveries. (Agents and observers
// cannot: TestAimedAnswersStayWithTheAsker.) Live subscribers get such
// messages and the frame stream stores them; protocol.NodeFrame tells
// them from the node's frames.
func TestForgedFramesAreRecognisable(t *testing.T) {
	b := startBus(t, bus.Options{Prefix: "fb", JetStream: &bus.JetStreamOptions{}, Users: []bus.User{
		{Name: "watcher", PasswordHash: testHash, Role: protocol.RoleObserver},
	}})
	subj := protocol.Subjects{Prefix: "fb"}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	node := connect(t, b, "node")
	live := subscribeSync(t, connect(t, b, "live"), subj.AllFrames())
	// A watcher of T1's own subject: a push consumer delivers only where
	// some subscription names the subject itself.
	subscribeSync(t, connect(t, b, "watcher-of-T1"), subj.TabFrames("T1"))
	js, err := jetstream.New(node)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: subj.FrameStream(), Subjects: []string{subj.AllFrames()}, AllowDirect: true, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: subj.ContentBucket(), Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	// Content a page shaped like a frame of T1.
	obj, err := bucket.PutString(ctx, protocol.ContentObject("T1", 1), `{"version":1,"tab":"T1","sequence":2,"url":"https://forged.example/"}`)
	if err != nil {
		t.Fatal(err)
	}
	// The node's frame, as actors publishes it.
	real := &nats.Msg{Subject: subj.TabFrames("T1"), Data: []byte(`{"version":1,"tab":"T1","sequence":1,"url":"https://example.com/"}`), Header: nats.Header{}}
	real.Header.Set(jetstream.MsgIDHeader, protocol.FrameMsgID("T1", 1))
	if err := node.PublishMsg(real); err != nil {
		t.Fatal(err)
	}
	if _, err := live.NextMsg(wait); err != nil {
		t.Fatal(err)
	}

	forger := connect(t, b, "admin")
	chunks := "$O." + subj.ContentBucket() + ".C." + obj.NUID
	forge := []func() error{
		func() error { // a direct get answered onto T1's frames
			return forger.PublishRequest("$JS.API.DIRECT.GET.OBJ_"+subj.ContentBucket(), subj.TabFrames("T1"), fmt.Appendf(nil, `{"last_by_subj":%q}`, chunks))
		},
		func() error { // T1's real frame answered onto T2's frames
			return forger.PublishRequest("$JS.API.DIRECT.GET."+subj.FrameStream(), subj.TabFrames("T2"), fmt.Appendf(nil, `{"last_by_subj":%q}`, subj.TabFrames("T1")))
		},
		func() error { // a consumer delivering the chunk onto T1's frames
			m, err := forger.Request("$JS.API.CONSUMER.CREATE.OBJ_"+subj.ContentBucket(),
				fmt.Appendf(nil, `{"stream_name":"OBJ_%s","config":{"deliver_subject":%q,"filter_subject":%q,"ack_policy":"none"}}`, subj.ContentBucket(), subj.TabFrames("T1"), chunks), wait)
			if err == nil && strings.Contains(string(m.Data), `"error"`) {
				err = errors.New(string(m.Data))
			}
			return err
		},
	}
	for _, f := range forge {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	accepted := func(m *nats.Msg) bool {
		f, err := protocol.DecodeFrame(m.Data)
		return err == nil && subj.NodeFrame(m.Subject, m.Header.Get, f) == nil
	}
	for i := range forge {
		m, err := live.NextMsg(wait)
		if err != nil {
			t.Fatalf("forgery %d did not arrive: %v", i, err)
		}
		if accepted(m) {
			t.Errorf("a forged frame on %s passed: %s %v", m.Subject, m.Data, m.Header)
		}
	}
	// The stream stored the forgeries too; a replay tells them apart.
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1+len(forge), jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	stored, passed := 0, 0
	for m := range batch.Messages() {
		stored++
		if accepted(&nats.Msg{Subject: m.Subject(), Data: m.Data(), Header: m.Headers()}) {
			passed++
		}
	}
	// (The second forgery may answer with T1's real frame, whose message
	// id the stream then takes for a duplicate.)
	if stored < len(forge) || passed != 1 {
		t.Errorf("stored %d messages, %d of them taken for the node's; want at least %d, and 1", stored, passed, len(forge))
	}
}
