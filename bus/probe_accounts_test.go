package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
)

// accountOf is the account the server put user's open connection in.
func accountOf(t *testing.T, b *bus.Bus, user string) string {
	t.Helper()
	cz, err := b.Server().Connz(&server.ConnzOptions{Username: true, User: user})
	if err != nil {
		t.Fatal(err)
	}
	if len(cz.Conns) != 1 {
		t.Fatalf("%d open connections of %s, want 1", len(cz.Conns), user)
	}
	return cz.Conns[0].Account
}

// serviceImports counts the service imports of an account the server has.
func serviceImports(t *testing.T, b *bus.Bus, account string) int {
	t.Helper()
	acc, err := b.Server().LookupAccount(account)
	if err != nil {
		t.Fatalf("account %s: %v", account, err)
	}
	return acc.NumServiceImports()
}

// The attacker chooses a user name (an admin runs `creds add NAME` for
// it) that looks like an account: the node's own, another user's, the
// server's, the reply namespace. Each such user is still alone in an
// account of its own, with its role's imports: its tab list request
// reaches the node across accounts (the server's _R_. reply), and what it
// aims at a tab's frames reaches no one. Names that are not one subject
// token are refused.
func TestProbeNamesThatLookLikeAccounts(t *testing.T) {
	n := startAccountsNode(t)
	for _, name := range []string{"$SYS", "$G", "U_x.y", "*", ">", "", "a b", "FRAMEBUS.x"} {
		if err := n.b.AddUser(bus.User{Name: name, PasswordHash: testHash, Role: protocol.RoleObserver}); !errors.Is(err, bus.ErrInvalidOptions) {
			t.Errorf("user %q: %v, want refused", name, err)
		}
	}
	peer := mustDialAs(t, n.b.ClientURL(), "peer")
	peerSees := subscribeSync(t, peer.nc, n.subj.TabFrames("T1"))
	// As many service imports as another observer's account added to the
	// running server (the role's, and those the server gives every
	// account it registers then; one made before the server started has
	// one system import more).
	if err := n.b.AddUser(bus.User{Name: "baseline", PasswordHash: testHash, Role: protocol.RoleObserver}); err != nil {
		t.Fatal(err)
	}
	wantServices := serviceImports(t, n.b, bus.UserAccount("baseline", protocol.RoleObserver))
	names := []string{bus.NodeAccount, bus.UserAccount("obs", protocol.RoleObserver), "U_", "_R_", "_INBOX", "SYS", "G", "U_U_obs"}
	inNode, crossed, aimed := 0, 0, 0
	for _, name := range names {
		if err := n.b.AddUser(bus.User{Name: name, PasswordHash: testHash, Role: protocol.RoleObserver}); err != nil {
			t.Fatalf("user %q: %v", name, err)
		}
		uc := mustDialAs(t, n.b.ClientURL(), name)
		if acc := accountOf(t, n.b, name); acc != bus.UserAccount(name, protocol.RoleObserver) {
			t.Errorf("user %q is in account %q, want %q", name, acc, bus.UserAccount(name, protocol.RoleObserver))
			if acc == bus.NodeAccount {
				inNode++
			}
		}
		if got := serviceImports(t, n.b, bus.UserAccount(name, protocol.RoleObserver)); got != wantServices {
			t.Errorf("account of %q: %d service imports, want an observer's %d", name, got, wantServices)
		}
		if _, err := uc.nc.Request(n.subj.Tabs(), nil, wait); err != nil {
			t.Fatalf("%q: tabs: %v", name, err)
		}
		n.mu.Lock()
		asked := n.tabsAsked[len(n.tabsAsked)-1]
		n.mu.Unlock()
		if strings.HasPrefix(asked, "_R_.") {
			crossed++
		} else {
			t.Errorf("%q: the node got the tab list request with reply %q, not across accounts", name, asked)
		}
		// Its answers aimed at a tab's frames stay with it.
		for _, ask := range []string{n.subj.Tabs(), "$SRV.PING"} {
			if err := uc.nc.PublishRequest(ask, n.subj.TabFrames("T1"), nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := uc.nc.Request("$SRV.PING", nil, wait); err != nil { // after the aimed ones
			t.Fatal(err)
		}
		if _, err := uc.nc.Request(n.subj.Tabs(), nil, wait); err != nil {
			t.Fatal(err)
		}
	}
	last := n.frame(t)
	for {
		m, err := peerSees.NextMsg(wait)
		if err != nil {
			t.Fatalf("another user's watch: the node's frame %d: %v", last, err)
		}
		if _, seq, err := n.subj.NodeFrameHeader(m.Subject, m.Header.Get); err != nil {
			aimed++
		} else if seq == last {
			break
		}
	}
	t.Logf("%d users named like accounts: %d in the node's account, %d asked across accounts, %d aimed answers on another user's watch", len(names), inNode, crossed, aimed)
	if aimed != 0 {
		t.Errorf("%d answers aimed at T1's frames reached another user", aimed)
	}
}

// A user removed and added again with another role (an agent demoted to
// observer, an admin too, then promoted back) has that role's account and
// permissions only: nothing of the old role stays, in the account's
// imports or in what it may publish. Each version of it sends a plan; the
// node gets exactly those of the agent versions.
func TestProbeReAddedUserGetsItsNewRoleOnly(t *testing.T) {
	b := startBus(t, bus.Options{Prefix: "fb", JetStream: &bus.JetStreamOptions{}})
	subj := b.Subjects()
	node := connect(t, b, "node")
	var mu sync.Mutex
	plans := map[string]int{} // the plans the node got, by sender
	if _, err := node.Subscribe(subj.TabPlan("T1"), func(m *nats.Msg) {
		mu.Lock()
		plans[string(m.Data)]++
		mu.Unlock()
		if protocol.Answerable(m.Reply) {
			_ = m.Respond([]byte(`{"ok":true}`))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := node.Flush(); err != nil {
		t.Fatal(err)
	}
	// A user of each role that stays, whose account's service imports
	// the turncoat's should number (the role's, and those the server
	// gives every account).
	for _, role := range []string{protocol.RoleAgent, protocol.RoleObserver} {
		if err := b.AddUser(bus.User{Name: "steady-" + role, PasswordHash: testHash, Role: role}); err != nil {
			t.Fatal(err)
		}
	}
	wantServices := func(role string) int { return serviceImports(t, b, bus.UserAccount("steady-"+role, role)) }
	var previous *userConn
	for i, role := range []string{protocol.RoleAgent, protocol.RoleObserver, protocol.RoleAdmin, protocol.RoleObserver, protocol.RoleAgent} {
		if i > 0 {
			if err := b.RemoveUser("turncoat"); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(wait)
			for !previous.nc.IsClosed() {
				if time.Now().After(deadline) {
					t.Fatalf("the %s version's connection is still open after its removal", role)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		if err := b.AddUser(bus.User{Name: "turncoat", PasswordHash: testHash, Role: role}); err != nil {
			t.Fatal(err)
		}
		uc := mustDialAs(t, b.ClientURL(), "turncoat")
		previous = uc
		account, services := bus.NodeAccount, -1
		if role != protocol.RoleAdmin {
			account, services = bus.UserAccount("turncoat", role), wantServices(role)
		}
		if got := accountOf(t, b, "turncoat"); got != account {
			t.Errorf("version %d (%s) is in account %s, want %s", i, role, got, account)
		}
		if services >= 0 {
			if got := serviceImports(t, b, account); got != services {
				t.Errorf("version %d (%s): its account imports %d services, want %d", i, role, got, services)
			}
		}
		from := fmt.Sprintf("version %d, %s", i, role)
		if role == protocol.RoleObserver {
			if err := uc.nc.PublishRequest(subj.TabPlan("T1"), uc.nc.NewRespInbox(), []byte(from)); err != nil {
				t.Fatal(err)
			}
			uc.expectDenied(t, "publish", subj.TabPlan("T1"))
			continue
		}
		if _, err := uc.nc.Request(subj.TabPlan("T1"), []byte(from), wait); err != nil {
			t.Fatalf("%s: plan: %v", from, err)
		}
	}
	if _, err := previous.nc.Request(subj.TabPlan("T1"), []byte("last"), wait); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	observers := plans["version 1, observer"] + plans["version 3, observer"]
	t.Logf("plans the node got: %v; from the observer versions: %d", plans, observers)
	if observers != 0 || plans["version 0, agent"] != 1 || plans["version 2, admin"] != 1 || plans["version 4, agent"] != 1 {
		t.Errorf("the node got plans %v; want one from each agent and admin version, none from an observer", plans)
	}
}

// Admins add and remove users at once from many connections (creds add
// and remove race): each change is applied whole or not at all. After
// the storm, the users the bus lists are exactly those that log in, each
// with its role's account; the removed ones do not; a name added twice
// at the same moment is added once.
func TestProbeConcurrentUserChanges(t *testing.T) {
	b := startBus(t, bus.Options{Prefix: "fb"})
	const workers, rounds = 6, 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	twice := map[string]int{} // successful adds of a name both tried
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				role := []string{protocol.RoleAgent, protocol.RoleObserver}[(w+r)%2]
				name := fmt.Sprintf("w%d-r%d", w, r)
				if err := b.AddUser(bus.User{Name: name, PasswordHash: testHash, Role: role}); err != nil {
					t.Errorf("add %s: %v", name, err)
				}
				if r%2 == 1 { // every other one goes again
					if err := b.RemoveUser(name); err != nil {
						t.Errorf("remove %s: %v", name, err)
					}
				}
				both := fmt.Sprintf("both-%d", r)
				if err := b.AddUser(bus.User{Name: both, PasswordHash: testHash, Role: role}); err == nil {
					mu.Lock()
					twice[both]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	listed := map[string]string{}
	for _, u := range b.Users() {
		listed[u.Name] = u.Role
	}
	wrong := 0
	for w := range workers {
		for r := range rounds {
			name := fmt.Sprintf("w%d-r%d", w, r)
			role, ok := listed[name]
			uc, err := dialAs(t, b.ClientURL(), name, testPassword)
			switch {
			case ok != (r%2 == 0):
				wrong++
				t.Errorf("%s listed: %v", name, ok)
			case ok && err != nil:
				wrong++
				t.Errorf("%s is listed but cannot log in: %v", name, err)
			case !ok && err == nil:
				wrong++
				t.Errorf("%s was removed but logs in", name)
			case ok:
				if acc := accountOf(t, b, name); acc != bus.UserAccount(name, role) {
					wrong++
					t.Errorf("%s (%s) is in account %s", name, role, acc)
				}
				uc.nc.Close()
			}
		}
	}
	for r := range rounds {
		both := fmt.Sprintf("both-%d", r)
		if twice[both] != 1 {
			wrong++
			t.Errorf("%s was added %d times", both, twice[both])
		}
	}
	t.Logf("%d workers × %d rounds of add, remove and add-the-same-name: %d users listed, %d wrong", workers, rounds, len(listed), wrong)
}

// Agents' and observers' accounts have no JetStream of their own: a user
// who aims answers at its own account's $JS.API (it may not publish there
// itself) makes no stream there, where it would take the server's
// JetStream memory from the node's history. Also for a user added to the
// running server.
func TestProbeUserAccountsHaveNoJetStream(t *testing.T) {
	n := startAccountsNode(t)
	if err := n.b.AddUser(bus.User{Name: "late", PasswordHash: testHash, Role: protocol.RoleAgent}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	// A stored message shaped as a stream configuration (a page's
	// content is what the node stores), for a direct get to answer with.
	config := `{"name":"TAKEN","subjects":["fb.>"],"storage":"memory","max_bytes":-1}`
	if _, err := n.obj.PutString(ctx, "shaped", config); err != nil {
		t.Fatal(err)
	}
	before, err := n.b.Server().Jsz(nil)
	if err != nil {
		t.Fatal(err)
	}
	api := n.subj.JSAPIPrefix() + "."
	withJetStream, aimed := 0, 0
	for _, user := range []string{"obs", "agent", "late"} {
		uc := mustDialAs(t, n.b.ClientURL(), user)
		role := map[string]string{"obs": protocol.RoleObserver}[user]
		if role == "" {
			role = protocol.RoleAgent
		}
		acc, err := n.b.Server().LookupAccount(bus.UserAccount(user, role))
		if err != nil {
			t.Fatal(err)
		}
		if acc.JetStreamEnabled() {
			withJetStream++
			t.Errorf("the account of %s has JetStream", user)
		}
		for _, aim := range []string{"$JS.API.STREAM.CREATE.TAKEN", "$JS.API.STREAM.CREATE.X"} {
			for _, ask := range []struct{ subject, data string }{
				{n.subj.Tabs(), ""},
				{api + "DIRECT.GET.OBJ_" + n.subj.ContentBucket(), `{"seq":1}`},
				{api + "DIRECT.GET.OBJ_" + n.subj.ContentBucket(), `{"seq":1,"batch":10}`},
			} {
				if err := uc.nc.PublishRequest(ask.subject, aim, []byte(ask.data)); err != nil {
					t.Fatal(err)
				}
				aimed++
			}
		}
		if _, err := uc.nc.Request(api+"DIRECT.GET.OBJ_"+n.subj.ContentBucket(), []byte(`{"seq":1}`), wait); err != nil {
			t.Fatal(err)
		}
	}
	after, err := n.b.Server().Jsz(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d aimed answers at the users' own stream creation: %d accounts with JetStream, streams on the server %d before, %d after", aimed, withJetStream, before.Streams, after.Streams)
	if after.Streams != before.Streams {
		t.Errorf("the server has %d streams after the aimed answers, %d before", after.Streams, before.Streams)
	}
}

// The servers' own namespaces, tried by an agent and an observer: the
// reply namespace of requests across accounts (_R_.), JetStream's events,
// acks, flow control and API, the KV and object store subjects, the
// system account's requests (every account imports some: $SYS.REQ.ACCOUNT
// ...), micro discovery as a subscriber, the history API prefix as a
// subscriber. Each publish and subscription is refused by the server at
// once, and nothing of them reaches the node's account.
func TestProbeServerNamespaces(t *testing.T) {
	n := startAccountsNode(t)
	frames, objStream := n.subj.FrameStream(), "OBJ_"+n.subj.ContentBucket()
	var mu sync.Mutex
	reached := map[string]int{}
	if _, err := n.nc.Subscribe(">", func(m *nats.Msg) {
		if user, ok := strings.CutPrefix(string(m.Data), "probe "); ok {
			mu.Lock()
			reached[user+" "+m.Subject]++
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := n.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	publishes := []string{
		"_R_.abc.def", "_R_.>", "_INBOX.x", "$JS.EVENT.ADVISORY.API", "$JS.EVENT.METRIC.CONSUMER.ACK.x.y",
		"$JS.ACK." + frames + ".c.1.1.1.1.1", "$JS.FC." + frames + ".x.y", "$JS.API.INFO", "$JS.API.STREAM.INFO." + frames,
		"$KV.B.k", "$O." + n.subj.ContentBucket() + ".C.x", "$O." + n.subj.ContentBucket() + ".M.x",
		"$SYS.REQ.ACCOUNT.PING.CONNZ", "$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.ACCOUNT." + bus.NodeAccount + ".CONNZ",
		"$SYS.REQ.USER.INFO", n.subj.JSAPIPrefix() + ".STREAM.NAMES", n.subj.JSAPIPrefix() + ".CONSUMER.LIST." + frames,
		n.subj.JSAPIPrefix() + ".STREAM.INFO.X", n.subj.JSAPIPrefix() + ".DIRECT.GET.X", n.subj.JSAPIPrefix() + ".DIRECT.GET." + objStream + "X",
	}
	subscribes := []string{
		"_R_.>", "$JS.EVENT.>", "$JS.API.>", "$JS.ACK.>", "$SRV.>", "$SRV.PING", "$SYS.>", "$KV.>", "$O.>",
		n.subj.JSAPIPrefix() + ".>", n.subj.Tabs(), "_INBOX_" + "agentx.>",
	}
	refused := 0
	for _, user := range []string{"obs", "agent"} {
		uc := mustDialAs(t, n.b.ClientURL(), user)
		for _, s := range publishes {
			if err := uc.nc.PublishRequest(s, uc.nc.NewRespInbox(), []byte("probe "+user)); err != nil {
				t.Fatal(err)
			}
			if uc.refused("publish", s) {
				refused++
			} else {
				t.Errorf("%s: no permissions violation for publish %s", user, s)
			}
		}
		for _, s := range subscribes {
			if _, err := uc.nc.SubscribeSync(s); err != nil {
				t.Fatal(err)
			}
			if uc.refused("subscribe", s) {
				refused++
			} else {
				t.Errorf("%s: no permissions violation for subscribe %s", user, s)
			}
		}
		if _, err := uc.nc.Request(n.subj.Tabs(), []byte("last"), wait); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d publishes and subscriptions in the servers' namespaces, %d of them refused at once; reached the node's account: %v", 2*(len(publishes)+len(subscribes)), refused, reached)
	if len(reached) != 0 {
		t.Errorf("reached the node's account: %v", reached)
	}
}

// refused waits a little for the server's refusal of verb on subject.
func (uc *userConn) refused(verb, subject string) bool {
	deadline := time.After(2 * time.Second)
	for {
		select {
		case got := <-uc.denied:
			if got == verb+" "+subject {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// A credentials file with no jsApiPrefix (written before accounts, or by
// hand), or one naming another prefix, points the client at JetStream
// APIs the user's account does not have; a prefix of a request subject
// would even send the history calls there. Every history call (the
// current frame, stored frames, a watch) fails at once with
// permission_denied naming the subject, never with a timeout, and the
// node gets nothing on its plan subject.
func TestProbeCredentialsWithAnotherJSAPIPrefix(t *testing.T) {
	n := startAccountsNode(t)
	n.frame(t)
	var mu sync.Mutex
	plans := 0
	if _, err := n.nc.Subscribe(n.subj.Prefix+".tab.>", func(m *nats.Msg) {
		if strings.HasSuffix(m.Subject, ".plan") || strings.Contains(m.Subject, ".plan.") {
			mu.Lock()
			plans++
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := n.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	denied, other := 0, map[string]int{}
	for _, role := range []string{protocol.RoleObserver, protocol.RoleAgent} {
		for _, prefix := range []string{"", "$JS.API", "other.js.API", n.subj.TabPlan("T1")} {
			creds := bustest.AddUser(t, n.b, role)
			creds.Prefix, creds.JSAPIPrefix = n.subj.Prefix, prefix
			ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
			c, err := client.Connect(ctx, client.Options{Credentials: &creds, NoReconnect: true})
			if err != nil {
				t.Fatal(err)
			}
			calls := map[string]error{}
			_, calls["current"] = c.Current(ctx, "T1")
			calls["frames"] = c.Frames(ctx, "T1", 1, 0, func(client.Frame) error { return nil })
			if w, err := c.Watch(ctx, "T1", 1); err != nil {
				calls["watch"] = err
			} else {
				for range w.Frames() {
				}
				calls["watch"] = w.Err()
			}
			for call, err := range calls {
				if code := protocol.CodeOf(err); code == protocol.CodePermissionDenied {
					denied++
				} else {
					other[string(code)]++
					t.Errorf("%s with jsApiPrefix %q: %s: %v, want permission_denied", role, prefix, call, err)
				}
			}
			c.Close()
			cancel()
		}
	}
	if _, err := n.nc.Request(n.subj.Tabs(), nil, wait); err != nil { // after the users' messages
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("history calls with a missing or other JetStream API prefix: %d permission_denied, others %v; the node's plan subjects got %d", denied, other, plans)
	if plans != 0 {
		t.Errorf("the node's plan subjects got %d messages", plans)
	}
}
