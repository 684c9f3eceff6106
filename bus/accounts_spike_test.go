package bus_test

// A spike for issue 20's open hole (docs/security.md, "the server publishes
// where a user says"): the node and its streams in one account, users in
// another that imports what they may use, so that every answer to a user
// lands in the users' account. Plain nats-server and nats.go here, no bus
// wiring yet: what holds and what does not is in docs/security.md ("The
// way out: accounts").

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/protocol"
)

const (
	spikeNodeAccount  = "FRAMEBUS"
	spikeUsersAccount = "USERS"
	spikeAPIPrefix    = "framebus.js.API" // the users' name for the node account's $JS.API
)

// spikeServer starts a server with the two accounts: the node account with
// JetStream, exporting the request subjects as services and frames and
// events as streams; the users' account importing them, the read-only
// JetStream API of the two streams under spikeAPIPrefix. Users: "node"
// (node account, everything) and "obs" (users' account, observer).
func spikeServer(t *testing.T, withConsumers, oneAccount bool) *server.Server {
	t.Helper()
	subj := protocol.DefaultSubjects
	p := subj.Prefix

	// JetStream for one account only comes from the configuration parser
	// (Account.jsLimits is private), and a reload without it would turn
	// JetStream off for the account: so the accounts are parsed, then
	// given their exports and imports.
	opts := &server.Options{}
	if err := opts.ProcessConfigString(`accounts { ` + spikeNodeAccount + ` { jetstream: enabled }, ` + spikeUsersAccount + ` {}, PEER {} }`); err != nil {
		t.Fatal(err)
	}
	var nodeAcc, usersAcc, peerAcc *server.Account
	for _, a := range opts.Accounts {
		switch a.Name {
		case spikeNodeAccount:
			nodeAcc = a
		case spikeUsersAccount:
			usersAcc = a
		case "PEER": // another user's account of its own, importing the same
			peerAcc = a
		}
	}
	users := []*server.Account{usersAcc, peerAcc}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	service := func(subject string, resp server.ServiceRespType) {
		must(nodeAcc.AddServiceExportWithResponse(subject, resp, users))
		must(usersAcc.AddServiceImport(nodeAcc, subject, subject))
		must(peerAcc.AddServiceImport(nodeAcc, subject, subject))
	}
	// Requests: every node answers the tab list, every service instance
	// $SRV.PING/INFO/STATS; one answer each for the rest.
	service(p+".tabs", server.Streamed)
	service("$SRV.>", server.Streamed)
	service(p+".tab.*.plan", server.Singleton)
	service(p+".tab.*.content", server.Singleton)
	// Frames and events reach the users' account as streams.
	for _, s := range []string{subj.AllFrames(), p + ".tab.*.event.>"} {
		must(nodeAcc.AddStreamExport(s, users))
		must(usersAcc.AddStreamImport(nodeAcc, s, ""))
		must(peerAcc.AddStreamImport(nodeAcc, s, ""))
	}
	// The read-only JetStream API of the two streams, under the users'
	// API prefix.
	jsAPI := func(api string, resp server.ServiceRespType) {
		must(nodeAcc.AddServiceExportWithResponse("$JS.API."+api, resp, users))
		must(usersAcc.AddServiceImport(nodeAcc, spikeAPIPrefix+"."+api, "$JS.API."+api))
		must(peerAcc.AddServiceImport(nodeAcc, spikeAPIPrefix+"."+api, "$JS.API."+api))
	}
	jsAPI("INFO", server.Singleton)
	for _, stream := range []string{subj.FrameStream(), "OBJ_" + subj.ContentBucket()} {
		jsAPI("STREAM.INFO."+stream, server.Singleton)
		jsAPI("DIRECT.GET."+stream, server.Streamed) // a batch get answers with many messages
		jsAPI("DIRECT.GET."+stream+".>", server.Singleton)
		if withConsumers {
			jsAPI("CONSUMER.CREATE."+stream, server.Singleton)
			jsAPI("CONSUMER.CREATE."+stream+".>", server.Singleton)
			jsAPI("CONSUMER.INFO."+stream+".>", server.Singleton)
			jsAPI("CONSUMER.DELETE."+stream+".>", server.Singleton)
			jsAPI("CONSUMER.MSG.NEXT."+stream+".>", server.Streamed)
		}
	}

	perms, err := subj.RolePermissions(protocol.RoleObserver, "obs")
	if err != nil {
		t.Fatal(err)
	}
	obsAcc, apiPrefix := usersAcc, spikeAPIPrefix+"."
	if oneAccount { // as main has it: for the attack test to show what it counts
		obsAcc, apiPrefix = nodeAcc, "$JS.API."
	}
	var publish []string
	for _, s := range perms.Publish.Allow {
		if strings.HasPrefix(s, "$JS.FC.") && !oneAccount {
			continue // push consumers' flow control: no push consumers across accounts
		}
		if strings.HasPrefix(s, "$JS.API.CONSUMER.") && !withConsumers {
			continue
		}
		publish = append(publish, strings.Replace(s, "$JS.API.", apiPrefix, 1))
	}
	opts.Users = []*server.User{
		{Username: "node", Password: "node-pw", Account: nodeAcc},
		{Username: "obs", Password: "obs-pw", Account: obsAcc, Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: publish},
			Subscribe: &server.SubjectPermission{Allow: perms.Subscribe.Allow},
		}},
		{Username: "peer", Password: "peer-pw", Account: peerAcc, Permissions: &server.Permissions{
			Subscribe: &server.SubjectPermission{Allow: []string{subj.AllFrames()}},
		}},
	}
	opts.Host, opts.Port = "127.0.0.1", -1
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	opts.NoSigs, opts.NoLog = true, true

	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(wait) {
		t.Fatal("server not ready")
	}
	return srv
}

type spikeNode struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	obj    jetstream.ObjectStore
	seq    int64
}

func startSpikeNode(t *testing.T, srv *server.Server) *spikeNode {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("node", "node-pw"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	subj := protocol.DefaultSubjects
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: subj.FrameStream(), Subjects: []string{subj.AllFrames()}, Storage: jetstream.MemoryStorage,
		MaxMsgsPerSubject: 1000, AllowDirect: true, Duplicates: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: subj.ContentBucket(), Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	// The tab list and a micro service, as the node has them.
	if _, err := nc.Subscribe(subj.Prefix+".tabs", func(m *nats.Msg) {
		if protocol.Answerable(m.Reply) || strings.HasPrefix(m.Reply, "_R_.") {
			m.Respond([]byte(`{"ok":true,"tabs":[]}`))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := micro.AddService(nc, micro.Config{Name: "framebus", Version: "0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &spikeNode{nc: nc, js: js, stream: stream, obj: obj}
}

// frame publishes the tab's next frame as the node does.
func (n *spikeNode) frame(t *testing.T, tab string) int64 {
	t.Helper()
	n.seq++
	m := nats.NewMsg(protocol.DefaultSubjects.TabFrames(tab))
	m.Header.Set("Nats-Msg-Id", protocol.FrameMsgID(tab, n.seq))
	m.Data, _ = json.Marshal(protocol.Frame{Tab: tab, Sequence: n.seq, URL: "http://127.0.0.1/x"})
	if err := n.nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	if err := n.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return n.seq
}

func spikeObserver(t *testing.T, srv *server.Server) *userConn {
	t.Helper()
	uc, err := dialAs(t, srv.ClientURL(), "obs", "obs-pw")
	if err != nil {
		t.Fatal(err)
	}
	return uc
}

// TestAccountsSpikeObserverReads: an observer in the users' account reads
// live frames, asks the node, replays the history with an ordered consumer
// through the API prefix and direct-gets the current frame.
func TestAccountsSpikeObserverReads(t *testing.T) {
	srv := spikeServer(t, true, false)
	node := startSpikeNode(t, srv)
	obs := spikeObserver(t, srv)
	subj := protocol.DefaultSubjects
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	live, err := obs.nc.SubscribeSync(subj.TabFrames("T1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		node.frame(t, "T1")
	}
	for want := int64(1); want <= 5; want++ {
		m, err := live.NextMsg(wait)
		if err != nil {
			t.Fatalf("live frame %d: %v", want, err)
		}
		if _, seq, err := subj.NodeFrameHeader(m.Subject, m.Header.Get); err != nil || seq != want {
			t.Fatalf("live frame %d: seq %d, %v", want, seq, err)
		}
	}

	// Requests: the tab list, and micro discovery (streamed answers).
	if m, err := obs.nc.Request(subj.Prefix+".tabs", nil, wait); err != nil || !strings.Contains(string(m.Data), `"ok":true`) {
		t.Fatalf("tabs: %v %v", m, err)
	}
	if m, err := obs.nc.Request("$SRV.PING.framebus", nil, wait); err != nil || !strings.Contains(string(m.Data), `"name":"framebus"`) {
		t.Fatalf("$SRV.PING: %v %v", m, err)
	}

	// The history through the API prefix.
	js, err := jetstream.NewWithAPIPrefix(obs.nc, spikeAPIPrefix)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, subj.FrameStream())
	if err != nil {
		t.Fatalf("stream info through the prefix: %v", err)
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subj.TabFrames("T1")}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: 1,
	})
	if err != nil {
		t.Fatalf("ordered consumer: %v", err)
	}
	batch, err := cons.Fetch(5, jetstream.FetchMaxWait(wait))
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	var got []int64
	for m := range batch.Messages() {
		_, seq, err := subj.NodeFrameHeader(m.Subject(), m.Headers().Get)
		if err != nil {
			t.Fatalf("replayed message: subject %s: %v", m.Subject(), err)
		}
		got = append(got, seq)
	}
	if batch.Error() != nil || len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Fatalf("replayed %v, %v; want 1..5", got, batch.Error())
	}

	// The current frame by a direct get (last message for the subject).
	last, err := stream.GetLastMsgForSubject(ctx, subj.TabFrames("T1"))
	if err != nil {
		t.Fatalf("direct get: %v", err)
	}
	if last.Header.Get("Nats-Msg-Id") != protocol.FrameMsgID("T1", 5) {
		t.Fatalf("current frame: %v", last.Header)
	}
	// A batch direct get: the history without a consumer.
	var seqs []string
	msgs, err := obs.nc.RequestMsg(&nats.Msg{Subject: spikeAPIPrefix + ".DIRECT.GET." + subj.FrameStream(),
		Data: []byte(`{"seq":1,"batch":3,"next_by_subj":"` + subj.TabFrames("T1") + `"}`)}, wait)
	if err != nil {
		t.Fatalf("batch direct get: %v", err)
	}
	seqs = append(seqs, msgs.Header.Get("Nats-Msg-Id"))
	if seqs[0] != protocol.FrameMsgID("T1", 1) {
		t.Fatalf("batch direct get's first: %v", msgs.Header)
	}
}

// TestAccountsSpikeAimedAnswers: an observer names a tab's frame subject as
// the reply of every request it may make, and as the deliver subject of
// push consumers. With one account (as main has it) the server publishes
// there, where the node account's subscribers get it and the frame stream
// stores it; with the users in their own account, nothing of it reaches the
// node account.
func TestAccountsSpikeAimedAnswers(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		oneAccount, withConsumers bool
	}{
		{"users' account", false, false},
		{"users' account with consumers", false, true},
		{"one account", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := aimAtFrames(t, tc.oneAccount, tc.withConsumers)
			t.Logf("%s: in the node account %d aimed answers and %d push deliveries seen, %d stored in the frame stream; %d seen by a live watch in the attacker's account, %d in another user's; push consumers: %s",
				tc.name, r.answers, r.deliveries, r.stored, r.usersSeen, r.peerSeen, r.consumers)
			switch {
			case tc.oneAccount:
				if r.answers == 0 || r.stored == 0 || r.deliveries == 0 {
					t.Errorf("one account: %+v; the attacks should get through (or this test counts nothing)", r)
				}
			case tc.withConsumers:
				// What the users' account does not close: a push consumer
				// lives in the stream's account and delivers there.
				if r.answers != 0 || r.stored != 0 {
					t.Errorf("users' account: %+v; want no answer seen and none stored", r)
				}
			default:
				if r.answers != 0 || r.stored != 0 || r.deliveries != 0 || r.peerSeen != 0 {
					t.Errorf("users' account: %+v; want nothing seen and nothing stored", r)
				}
			}
		})
	}
}

type aimed struct {
	answers, deliveries, stored int
	usersSeen                   int // what a user's live watch of the tab got that the node did not publish
	peerSeen                    int // the same, for a user in an account of its own
	consumers                   string
}

// aimAtFrames runs the attacks and counts what reached the node account:
// messages on the tab's subjects other than its frames, and messages the
// frame stream stored beyond the node's frames. consumers says what became
// of the push consumers asked for.
func aimAtFrames(t *testing.T, oneAccount, withConsumers bool) (r aimed) {
	srv := spikeServer(t, withConsumers, oneAccount)
	node := startSpikeNode(t, srv)
	obs := spikeObserver(t, srv)
	subj := protocol.DefaultSubjects
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	api := spikeAPIPrefix + "."
	if oneAccount {
		api = "$JS.API."
	}
	aim := subj.TabFrames("T1")
	objStream := "OBJ_" + subj.ContentBucket()

	// The node account's view: everything on the tab's subjects.
	// (An admin's live watch of the tab, and of its console.)
	watch, err := node.nc.SubscribeSync(aim)
	if err != nil {
		t.Fatal(err)
	}
	watchEvents, err := node.nc.SubscribeSync(subj.TabEvents("T1", "console"))
	if err != nil {
		t.Fatal(err)
	}
	usersLive, err := obs.nc.SubscribeSync(aim)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := nats.Connect(srv.ClientURL(), nats.UserInfo("peer", "peer-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	peerLive, err := peer.SubscribeSync(aim)
	if err != nil {
		t.Fatal(err)
	}
	if err := peer.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := obs.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	node.frame(t, "T1")
	// Content a page shaped, as large frame content is stored.
	if _, err := node.obj.PutBytes(ctx, protocol.ContentObject("T1", 1), []byte(strings.Repeat("page bytes ", 30000))); err != nil {
		t.Fatal(err)
	}

	for _, s := range []string{"$SRV.PING", "$SRV.INFO", "$SRV.STATS", "$SRV.PING.framebus"} {
		for range 25 {
			if err := obs.nc.PublishRequest(s, aim, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	aimed := []struct{ subject, data string }{
		{subj.Prefix + ".tabs", ""},
		{api + "DIRECT.GET." + subj.FrameStream(), `{"seq":1}`},
		{api + "DIRECT.GET." + subj.FrameStream(), `{"seq":1,"batch":5}`},
		{api + "DIRECT.GET." + subj.FrameStream() + "." + aim, ""},
		{api + "DIRECT.GET." + objStream, `{"seq":1}`},
		{api + "DIRECT.GET." + objStream, `{"seq":1,"batch":5}`},
		{api + "STREAM.INFO." + subj.FrameStream(), ""},
		{api + "INFO", ""},
	}
	for _, a := range aimed {
		if err := obs.nc.PublishRequest(a.subject, aim, []byte(a.data)); err != nil {
			t.Fatal(err)
		}
	}
	// Push consumers: the content stream delivering onto the frame subject,
	// the frame stream onto an event subject (its own subjects it refuses).
	var made []string
	for _, c := range []struct{ stream, deliver string }{{objStream, aim}, {subj.FrameStream(), subj.TabEvents("T1", "console")}} {
		req := `{"stream_name":"` + c.stream + `","config":{"deliver_subject":"` + c.deliver + `","deliver_policy":"all","ack_policy":"none"}}`
		if !withConsumers {
			// Not imported, and not in the observer's permissions.
			if err := obs.nc.PublishRequest(api+"CONSUMER.CREATE."+c.stream, aim, []byte(req)); err != nil {
				t.Fatal(err)
			}
			obs.expectDenied(t, "publish", api+"CONSUMER.CREATE."+c.stream)
			r.consumers += c.stream + " refused (permissions violation); "
			continue
		}
		m, err := obs.nc.Request(api+"CONSUMER.CREATE."+c.stream, []byte(req), wait)
		if err != nil {
			t.Fatalf("consumer create on %s: %v", c.stream, err)
		}
		var resp struct {
			Name  string `json:"name"`
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		_ = json.Unmarshal(m.Data, &resp)
		if resp.Error != nil {
			r.consumers += c.stream + " refused (" + resp.Error.Description + "); "
			continue
		}
		r.consumers += c.stream + " created; "
		made = append(made, c.stream+"/"+resp.Name)
	}

	// Everything aimed has been answered once real requests of each kind
	// after it have been.
	for _, s := range []string{"$SRV.PING", "$SRV.INFO", "$SRV.STATS", "$SRV.PING.framebus"} {
		if _, err := obs.nc.Request(s, nil, wait); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, a := range aimed[1:] {
		if _, err := obs.nc.Request(a.subject, []byte(a.data), wait); err != nil {
			t.Fatalf("%s: %v", a.subject, err)
		}
	}
	// A push consumer delivers only while the account has a subscription
	// on exactly its deliver subject (Sublist.registerNotification ignores
	// wildcards); the node account's watchers below are such. An active one
	// has delivered all when it has nothing pending.
	for _, sc := range made {
		stream, name, _ := strings.Cut(sc, "/")
		for {
			pc, err := node.js.PushConsumer(ctx, stream, name)
			if err != nil {
				t.Fatalf("consumer %s: %v", sc, err)
			}
			ci, err := pc.Info(ctx)
			if err != nil {
				t.Fatalf("consumer %s: %v", sc, err)
			}
			if !ci.PushBound {
				r.consumers += sc + " inactive; "
				break
			}
			if ci.NumPending == 0 {
				r.consumers += fmt.Sprintf("%s delivered %d; ", sc, ci.Delivered.Stream)
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("consumer %s did not deliver: %+v", sc, ci)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	last := node.frame(t, "T1")
	for _, m := range untilNodeFrame(t, watch, last) {
		r.count(m)
	}
	r.usersSeen = len(untilNodeFrame(t, usersLive, last))
	r.peerSeen = len(untilNodeFrame(t, peerLive, last))
	for {
		m, err := watchEvents.NextMsg(0)
		if err != nil {
			break
		}
		r.count(m)
	}
	info, err := node.stream.Info(ctx, jetstream.WithSubjectFilter(aim))
	if err != nil {
		t.Fatal(err)
	}
	r.stored = int(info.State.Subjects[aim]) - int(node.seq)
	return r
}

// count counts a message the node account got that the node did not
// publish: a push consumer's delivery has JetStream's ack subject as its
// reply (with AckNone too), an answer none.
func (r *aimed) count(m *nats.Msg) {
	if strings.HasPrefix(m.Reply, "$JS.ACK.") {
		r.deliveries++
	} else {
		r.answers++
	}
}

// untilNodeFrame reads sub up to the node's frame last and returns the
// messages on the way that the node did not publish.
func untilNodeFrame(t *testing.T, sub *nats.Subscription, last int64) (others []*nats.Msg) {
	t.Helper()
	for {
		m, err := sub.NextMsg(wait)
		if err != nil {
			t.Fatalf("the node's frame %d on %s: %v", last, sub.Subject, err)
		}
		if _, seq, err := protocol.DefaultSubjects.NodeFrameHeader(m.Subject, m.Header.Get); err != nil {
			others = append(others, m)
		} else if seq == last {
			return others
		}
	}
}
