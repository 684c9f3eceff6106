package actors

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// twoSessionNodes starts alpha (with the bus) and beta on alpha's bus,
// each with a profile directory of its own, and waits until each knows
// the other.
func twoSessionNodes(t *testing.T, prefix string) (alpha, beta *Node, betaOpts NodeOptions) {
	t.Helper()
	alpha = startTestNode(t, NodeOptions{Name: "alpha", Prefix: prefix, ProfileDir: testdir.Enterable(t), Launch: testDomains})
	betaOpts = secondNodeOptions(t, alpha, "beta")
	betaOpts.Prefix, betaOpts.ProfileDir, betaOpts.Launch = prefix, testdir.Enterable(t), testDomains
	beta = startTestNode(t, betaOpts)
	waitUntil(t, func() bool {
		return slices.Equal(alpha.Peers(), []string{"alpha", "beta"}) && slices.Equal(beta.Peers(), []string{"alpha", "beta"})
	})
	return alpha, beta, betaOpts
}

// bucketOf is a key-value bucket of node's bus (e.g. its
// Subjects().SessionsBucket()), read as a test's own client.
func bucketOf(t *testing.T, node *Node, bucket string) jetstream.KeyValue {
	t.Helper()
	js, err := jetstream.New(testConnOf(t, node))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// registered is the registry's entry of domain; ok false when there is none.
func registered(t *testing.T, kv jetstream.KeyValue, domain string) (e protocol.SessionEntry, ok bool) {
	t.Helper()
	got, err := kv.Get(t.Context(), domain)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return e, false
	}
	if err != nil || json.Unmarshal(got.Value(), &e) != nil {
		t.Fatalf("registry entry %s: %v", domain, err)
	}
	return e, true
}

// startOn sends a session start to subject and returns the reply.
func startOn(t *testing.T, nc *nats.Conn, subject, domain string) protocol.SessionReply {
	t.Helper()
	data, _ := json.Marshal(protocol.SessionStartRequest{Domain: domain})
	// A node at another member of a cluster is known there once its
	// subscription crossed the route: until then, no responders (and
	// nothing ran).
	deadline := time.Now().Add(testscale.D(20 * time.Second))
	msg, err := nc.Request(subject, data, time.Minute)
	for errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		msg, err = nc.Request(subject, data, time.Minute)
	}
	if err != nil {
		t.Fatalf("session start %s on %s: %v", domain, subject, err)
	}
	var r protocol.SessionReply
	if err := json.Unmarshal(msg.Data, &r); err != nil || !r.OK {
		t.Fatalf("session start %s on %s: %s", domain, subject, msg.Data)
	}
	return r
}

// runs reports whether node runs the session id.
func runs(node *Node, id string) bool {
	return slices.ContainsFunc(node.Sessions(), func(s protocol.SessionInfo) bool { return s.Session == id })
}

// die ends a node as kill -9 would, as far as the bus can tell: its
// registry entry is no longer renewed (nor deleted), its browsers are
// killed and its connection drops with every subscription.
func die(n *Node) {
	n.registry.stop()
	<-n.registry.done
	n.Kill()
	n.nc.Close()
}

// Of many starts of one domain at once, through the shared subject and
// pinned to either node, one creates the registry entry: every reply is
// that one session, on one node, and only that node has the domain's
// profile. Stop deletes the entry; the next start is a new session.
func TestOneSessionPerDomainOnTheBus(t *testing.T) {
	t.Parallel() // its own bus, nodes and profile directories
	alpha, beta, _ := twoSessionNodes(t, "fbsessone")
	subj := alpha.Subjects()
	clients := []*nats.Conn{bustest.Connect(t, alpha.Bus(), protocol.RoleAgent), bustest.Connect(t, alpha.Bus(), protocol.RoleAgent)}
	subjects := []string{subj.SessionStart(), subj.SessionStart(), subj.NodeSessionStart("alpha"), subj.NodeSessionStart("beta")}

	const domain = "example.test"
	replies := make([]protocol.SessionReply, 8)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Go(func() { replies[i] = startOn(t, clients[i%2], subjects[i%4], domain) })
	}
	wg.Wait()
	first := replies[0]
	for i, r := range replies {
		if r.Session != first.Session || r.Node != first.Node || r.Domain != domain {
			t.Fatalf("start %d (on %s): session %s on %s, start 0: %s on %s", i, subjects[i%4], r.Session, r.Node, first.Session, first.Node)
		}
	}
	owner, other := alpha, beta
	if first.Node == "beta" {
		owner, other = beta, alpha
	}
	if p := owner.Profile(domain); p == nil || !p.Status().Running || p.Status().Session != first.Session {
		t.Fatalf("the owner %s's profile of %s: %+v", owner.Name(), domain, p)
	}
	if p := other.Profile(domain); p != nil {
		t.Fatalf("node %s made a profile of %s too: %+v", other.Name(), domain, p.Status())
	}
	kv := bucketOf(t, alpha, alpha.Subjects().SessionsBucket())
	if e, ok := registered(t, kv, domain); !ok || e.Session != first.Session || e.Node != first.Node {
		t.Fatalf("registry entry: %+v %v, want session %s on %s", e, ok, first.Session, first.Node)
	}

	var stopped protocol.SessionReply
	c := &busClient{t: t, nc: clients[0]}
	if raw := c.ask(subj.SessionStop(first.Session), nil, &stopped); !stopped.OK {
		t.Fatalf("session stop: %s", raw)
	}
	if e, ok := registered(t, kv, domain); ok {
		t.Fatalf("the entry after stop: %+v", e)
	}
	if again := startOn(t, clients[1], subj.SessionStart(), domain); again.Session == first.Session {
		t.Fatalf("a start after stop has the stopped session's id %s", again.Session)
	}
}

// A node's sessions outlive it: a node that stops leaves their entries
// (listed as unreachable) and starts them again, same ids, when it starts
// again with its name and profile directory, after a kill too. A node that dies (its
// registry entry expires) loses its session to the next start of the
// domain: same id, on the node asked, which says whose it was; a stop of
// its other session is answered by a live node, which forgets it.
func TestSessionsOutliveTheirNode(t *testing.T) {
	t.Parallel() // its own bus, nodes and profile directories
	alpha, beta, betaOpts := twoSessionNodes(t, "fbsessback")
	subj := alpha.Subjects()
	nc := bustest.Connect(t, alpha.Bus(), protocol.RoleAgent)
	kv := bucketOf(t, alpha, alpha.Subjects().SessionsBucket())
	const domain = "mail.example.test"

	started := startOn(t, nc, subj.NodeSessionStart("beta"), domain)
	if started.Node != "beta" {
		t.Fatalf("a start pinned to beta ran on %s", started.Node)
	}
	if err := beta.Close(); err != nil {
		t.Fatal(err)
	}
	if e, ok := registered(t, kv, domain); !ok || e.Node != "beta" || e.Session != started.Session {
		t.Fatalf("beta's entry after it stopped: %+v %v", e, ok)
	}
	waitUntil(t, func() bool { return !slices.Contains(alpha.Peers(), "beta") })
	var list protocol.SessionList
	(&busClient{t: t, nc: nc}).ask(subj.SessionList(), nil, &list) // alpha alone answers
	if len(list.Sessions) != 1 || list.Sessions[0].Session != started.Session || list.Sessions[0].State != protocol.NodeUnreachable || list.Sessions[0].Node != "beta" {
		t.Fatalf("session list while beta is stopped: %+v", list)
	}

	again := startTestNode(t, betaOpts)
	waitUntil(t, func() bool { return runs(again, started.Session) })
	if back := startOn(t, nc, subj.SessionStart(), domain); back.Session != started.Session || back.Node != "beta" || back.TakenFrom != "" {
		t.Fatalf("the session after beta came back: %+v", back)
	}

	docs := startOn(t, nc, subj.NodeSessionStart("beta"), "docs.example.test")
	// Back after a kill too (its browsers killed, profiles left locked).
	die(again)
	waitUntil(t, func() bool { return !slices.Contains(alpha.Peers(), "beta") })
	third := startTestNode(t, betaOpts)
	waitUntil(t, func() bool { return runs(third, started.Session) && runs(third, docs.Session) })

	die(third)
	waitUntil(t, func() bool { return !slices.Contains(alpha.Peers(), "beta") })
	// A dead node's session can be stopped: a live node forgets it.
	c := &busClient{t: t, nc: nc}
	var stopped protocol.SessionReply
	if raw := c.ask(subj.SessionStop(docs.Session), nil, &stopped); !stopped.OK || stopped.Node != "beta" {
		t.Fatalf("stop of a dead node's session: %s", raw)
	}
	if e, ok := registered(t, kv, "docs.example.test"); ok {
		t.Fatalf("the entry of a dead node's session after its stop: %+v", e)
	}
	var none protocol.PlanResult
	if raw := c.ask(subj.SessionStop(docs.Session), nil, &none); none.Code != protocol.CodeSessionNotFound {
		t.Fatalf("stop of a session no longer registered: %s", raw)
	}
	moved := startOn(t, nc, subj.SessionStart(), domain)
	if moved.Session != started.Session || moved.Node != "alpha" || moved.TakenFrom != "beta" || !moved.Profile.Running {
		t.Fatalf("the session of a dead node, started again: %+v", moved)
	}
	if e, _ := registered(t, kv, domain); e.Node != "alpha" || e.Session != started.Session {
		t.Fatalf("the entry after the takeover: %+v", e)
	}
}

// A bus whose session registry cannot be on file (here: a bucket made in
// memory before) still takes the node, with the registry in memory.
func TestSessionRegistryInMemory(t *testing.T) {
	t.Parallel() // its own buses and nodes
	first := startTestNode(t, NodeOptions{Name: "alpha", Prefix: "fbsessmem"})
	js, err := jetstream.New(testConnOf(t, first))
	if err != nil {
		t.Fatal(err)
	}
	bucket := first.Subjects().SessionsBucket()
	if err := js.DeleteKeyValue(t.Context(), bucket); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: bucket, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	opts := secondNodeOptions(t, first, "beta")
	opts.Prefix = "fbsessmem"
	second := startTestNode(t, opts)
	st, err := second.sessions.kv.Status(t.Context())
	if err != nil || st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Storage != jetstream.MemoryStorage {
		t.Fatalf("the session registry of the second node: %+v %v", st, err)
	}
}
