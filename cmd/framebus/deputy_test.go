package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// deputyChunk is the object store's chunk of a frame's large content on
// a node's bus (actors.objectChunk): the attacker's page lines its
// requests up with it.
const deputyChunk = 128 << 10

// deputyPageSize makes a page's content larger than the node's bus
// carries in one message (16 MiB), so it goes to the object store.
const deputyPageSize = 17 << 20

// The confused deputy, from the attacker's side: a web page the agent
// visits controls the bytes of its content, which the node stores in
// 128 KiB chunks in the object store; an observer or agent may have
// JetStream send any stored message to any reply subject it names (a
// direct get). The page lines a plan up with one chunk, a request that
// makes an admin with another and a frame of the tab with a third; the
// observer aims them at the tab's plan subject, the node's users.add and
// the tab's frames, the agent its plan chunk at the plan subject it may
// use, and both try a consumer delivering the plan. Nothing ran, nobody
// was added, no other user saw the frame and the history has none: each
// user's answers stay in its own account (bus.UserAccount), and the node
// takes no server's answer as a request (protocol.Answerable).
func TestObserverCannotAimStoredContent(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	// A 17 MiB page's content takes its time to read under -race on a
	// busy machine: more than the default 10 s a frame waits for it.
	settle := testscale.D(time.Minute)
	if err := os.WriteFile(config, []byte("frames:\n  maxContent: 0\n  settleTimeout: "+settle.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var page atomic.Value
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, page.Load())
	}))
	defer site.Close()
	n := startNode(t, envConfig+"="+config)
	tab := n.tab()
	observer, _ := deputyObserver(t, n, "watcher")
	js := deputyAdmin(t, n) // the test's own reads of the stored content

	// A first load tells where the page's text starts in the stored
	// content (the snapshot's "- text: " before it).
	const marker = "DEPUTY-MARKER"
	page.Store("<!doctype html><title>calm</title><body><pre>" + marker + strings.Repeat("a", deputyPageSize) + "</pre>")
	content := loadStoredContent(t, n, js, site.URL+"/1", tab)
	offset := strings.Index(content, marker)
	if offset < 0 {
		t.Fatalf("the stored content has no %s: %.200q", marker, content)
	}

	// The attack page: chunk 2 is a plan, chunk 3 a user request making
	// mallory an admin, chunk 4 a frame of this tab.
	const password = "mallory-password"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	plan := padJSON(t, `{"agent":"`, `","action":{"type":"eval","expression":"window.__deputy=(window.__deputy||0)+1"}}`)
	user := padJSON(t, `{"name":"`, `","name":"mallory","role":"admin","passwordHash":"`+string(hash)+`"}`)
	frame := padJSON(t, `{"version":1,"tab":"`+tab+`","sequence":999999,"url":"https://forged.example/","title":"`, `"}`)
	page.Store("<!doctype html><title>attack</title><body><pre>" + strings.Repeat("a", 2*deputyChunk-offset) +
		plan + user + frame + strings.Repeat("a", deputyPageSize) + "</pre>")
	content = loadStoredContent(t, n, js, site.URL+"/2", tab)
	if content[2*deputyChunk:5*deputyChunk] != plan+user+frame {
		t.Fatal("the attack page's requests are not at chunks 2, 3 and 4 of the stored content")
	}
	// The chunks' stream sequences.
	bucket := protocol.DefaultSubjects.ContentBucket()
	objects, err := js.ObjectStore(context.Background(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	seq := lastFrame(t, js, tab)
	info, err := objects.GetInfo(context.Background(), protocol.ContentObject(tab, seq.Sequence))
	if err != nil {
		t.Fatal(err)
	}
	contentStream := "OBJ_" + bucket
	stream, err := js.Stream(context.Background(), contentStream)
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.GetMsg(context.Background(), 0, jetstream.WithGetMsgSubject("$O."+bucket+".C."+info.NUID))
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(i int, want string) uint64 {
		s := first.Sequence + uint64(i)
		m, err := stream.GetMsg(context.Background(), s)
		if err != nil || string(m.Data) != want {
			t.Fatalf("chunk %d (stream sequence %d) is not the page's request: %v", i, s, err)
		}
		return s
	}
	planSeq, userSeq, frameSeq := chunk(2, plan), chunk(3, user), chunk(4, frame)

	through := 0
	planSubject := protocol.DefaultSubjects.TabPlan(tab)
	usersAdd := protocol.DefaultSubjects.AdminUsers(protocol.UsersAdd)
	agentCreds := n.localCredentials(t)
	agent, err := nats.Connect(agentCreds.URL, nats.UserInfo(agentCreds.User, agentCreds.Password), nats.CustomInboxPrefix(agentCreds.InboxPrefix),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	aim := func(nc *nats.Conn, subject, reply string, data string) {
		t.Helper()
		if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	directGet := protocol.DefaultSubjects.JSAPIPrefix() + ".DIRECT.GET." + contentStream
	aim(observer, directGet, usersAdd, fmt.Sprintf(`{"seq":%d}`, userSeq))
	aim(observer, directGet, planSubject, fmt.Sprintf(`{"seq":%d}`, planSeq))
	aim(agent, directGet, planSubject, fmt.Sprintf(`{"seq":%d}`, planSeq))
	// A forged frame, for live observers and the history: another
	// observer watches the tab.
	frameSubject := protocol.DefaultSubjects.TabFrames(tab)
	other, _ := deputyObserver(t, n, "bystander")
	live, err := other.SubscribeSync(frameSubject)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Flush(); err != nil {
		t.Fatal(err)
	}
	aim(observer, directGet, frameSubject, fmt.Sprintf(`{"seq":%d}`, frameSeq))
	// No consumer: a push consumer would deliver in the node's account.
	spy := fmt.Sprintf(`{"stream_name":%q,"config":{"deliver_subject":%q,"filter_subject":%q,"opt_start_seq":%d,"deliver_policy":"by_start_sequence","ack_policy":"none"}}`,
		contentStream, planSubject, "$O."+bucket+".C."+info.NUID, planSeq)
	for _, nc := range []*nats.Conn{observer, agent} {
		for _, api := range []string{protocol.DefaultSubjects.JSAPIPrefix(), "$JS.API"} {
			if m, err := nc.Request(api+".CONSUMER.CREATE."+contentStream, []byte(spy), 2*time.Second); err == nil {
				through++
				t.Errorf("a user made a consumer through %s: %s", api, m.Data)
			}
		}
	}
	// JetStream answers a stream's requests in order: once the users'
	// own direct gets are answered, the aimed ones went out before them.
	for _, nc := range []*nats.Conn{observer, agent} {
		if _, err := nc.Request(directGet, []byte(fmt.Sprintf(`{"seq":%d}`, planSeq)), 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	// What got through: the tab's plan subscription and the users
	// subscription take messages in order, so an agent's eval and an
	// admin's user request sent now come after the aimed ones.
	check := mustOK(t, n.env, "eval", "window.__deputy||0", "--tab", tab)
	if ran := check["value"]; ran != float64(0) {
		through++
		t.Errorf("the page's plan ran %v times in the agent's tab", ran)
	}
	last := int64(check["sequence"].(float64))
	mustOK(t, n.env, "creds", "add", "sentinel", "--role", "observer", "--out", filepath.Join(t.TempDir(), "sentinel.json"))
	users := mustOK(t, n.env, "creds", "list")
	if strings.Contains(fmt.Sprint(users), "mallory") {
		through++
		t.Errorf("the page's user request made mallory: %v", users)
	}
	if nc, err := nats.Connect(n.state.Bus, nats.UserInfo("mallory", password), nats.NoReconnect()); err == nil {
		through++
		nc.Close()
		t.Error("mallory logged in")
	}
	// The forged frame reaches no other user's live subscription and not
	// the history (it stays in the observer's account); were it to, it is
	// no frame by protocol.NodeFrameSeq's rule, which framebus's readers
	// apply.
	forged := 0
	for {
		m, err := live.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("the live observer got no frame %d: %v", last, err)
		}
		seq, ok := protocol.NodeFrameSeq(tab, m.Header.Get(jetstream.MsgIDHeader))
		if strings.Contains(string(m.Data), "forged.example") {
			forged++
			if ok {
				through++
				t.Errorf("the forged frame has a frame's message id: %v", m.Header)
			}
		}
		if ok && seq == last {
			break
		}
	}
	if forged != 0 {
		through++
		t.Errorf("another observer got %d forged frames", forged)
	}
	waitFor(t, "the history to keep frame "+fmt.Sprint(last), 30*time.Second, func() bool { return lastFrame(t, js, tab).Sequence == last })
	r := framebus(t, n.env, "", "frames", "--tab", tab)
	if r.status != 0 {
		t.Fatalf("framebus frames: exit %d, %s", r.status, r.stderr)
	}
	want := int64(1)
	for _, line := range readLines(r.stdout) {
		var f protocol.Frame
		if err := json.Unmarshal([]byte(line), &f); err != nil || f.Sequence != want || f.URL == "https://forged.example/" {
			through++
			t.Errorf("framebus frames: frame %d is %.200s (%v)", want, line, err)
		}
		want++
	}
	if want != last+1 {
		through++
		t.Errorf("framebus frames listed frames 1 to %d; want 1 to %d", want-1, last)
	}
	if through != 0 {
		t.Errorf("%d of the page's requests got through", through)
	}
}

// deputyObserver is a new observer's connection to n, raw NATS and
// JetStream (through its API prefix).
func deputyObserver(t *testing.T, n *node, name string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	file := filepath.Join(t.TempDir(), name+".json")
	mustOK(t, n.env, "creds", "add", name, "--role", "observer", "--out", file)
	nc, err := nats.Connect(n.state.Bus, nats.UserInfo(name, readPassword(t, file)), nats.CustomInboxPrefix(protocol.InboxPrefix(name)),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.NewWithAPIPrefix(nc, protocol.DefaultSubjects.JSAPIPrefix())
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// deputyAdmin is JetStream as n's admin has it (in the node's account,
// consumers and all), for a test's own reads.
func deputyAdmin(t *testing.T, n *node) jetstream.JetStream {
	t.Helper()
	admin, err := serving.ReadCredentials(n.credsFile(serving.AdminCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(admin.URL, nats.UserInfo(admin.User, admin.Password), nats.CustomInboxPrefix(admin.InboxPrefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// padJSON is head, a string of filler and tail: one chunk exactly.
func padJSON(t *testing.T, head, tail string) string {
	t.Helper()
	s := head + strings.Repeat("a", deputyChunk-len(head)-len(tail)) + tail
	if !json.Valid([]byte(s)) {
		t.Fatalf("not JSON: %.100s...%s", s, tail)
	}
	return s
}

// lastFrame is the tab's current frame, as the history keeps it.
func lastFrame(t *testing.T, js jetstream.JetStream, tab string) protocol.Frame {
	t.Helper()
	stream, err := js.Stream(context.Background(), protocol.DefaultSubjects.FrameStream())
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.GetLastMsgForSubject(context.Background(), protocol.DefaultSubjects.TabFrames(tab))
	if err != nil {
		t.Fatal(err)
	}
	f, err := protocol.DecodeFrame(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// loadStoredContent has the agent navigate the tab to url and returns the
// content of its frame, read back from the object store. A page this
// large can take longer to load than the node waits for (10 s) on a
// loaded machine, and its frame then carries what was there before the
// load: the agent loads it again, up to three times.
func loadStoredContent(t *testing.T, n *node, js jetstream.JetStream, url, tab string) string {
	t.Helper()
	var f protocol.Frame
	var seq int64
	for try := 1; ; try++ {
		// --wait: the frame's content is captured once the 17 MiB page
		// has loaded, within the navigation's own minute, not the 10 s a
		// frame waits for a load it did not ask for (under a full -race
		// run the load took longer).
		seq = int64(mustOK(t, n.env, "navigate", url, "--tab", tab, "--wait", "--timeout", testscale.D(time.Minute).String())["sequence"].(float64))
		waitFor(t, "the frame in the history", 2*time.Minute, func() bool {
			f = lastFrame(t, js, tab)
			return f.Sequence >= seq
		})
		if f.Sequence != seq || f.FullPageRef != nil || !strings.Contains(f.Note, "did not finish loading") || try == 3 {
			break
		}
		t.Logf("load %d of %s: %s; again", try, url, f.Note)
	}
	if f.Sequence != seq || f.FullPageRef == nil || f.FullPageRef.Object == "" {
		t.Fatalf("frame %d: want %d with its content in the object store, got %+v (note %q)", f.Sequence, seq, f.FullPageRef, f.Note)
	}
	objects, err := js.ObjectStore(context.Background(), f.FullPageRef.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	data, err := objects.GetBytes(context.Background(), f.FullPageRef.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
