package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// secondNodeOptions are the options of a node that shares first's bus:
// it connects to first's listener as an admin user, as `serve --bus-url`
// with admin credentials does.
func secondNodeOptions(t *testing.T, first *Node, name string) NodeOptions {
	t.Helper()
	creds := bustest.AddUser(t, first.Bus(), protocol.RoleAdmin)
	u, err := url.Parse(creds.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(creds.User, creds.Password)
	return NodeOptions{Name: name, Bus: bus.Options{URL: u.String()}}
}

// gather sends a request every node answers and collects the answers
// until want of them came (or 20s passed).
func gather(t *testing.T, nc *nats.Conn, subject string, want int) [][]byte {
	t.Helper()
	inbox := nc.NewInbox()
	replies := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(inbox, replies)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	deadline := time.After(20 * time.Second)
	for len(out) < want {
		select {
		case m := <-replies:
			out = append(out, m.Data)
		case <-deadline:
			t.Fatalf("%d answers on %s within 20s, want %d", len(out), subject, want)
		}
	}
	return out
}

// Two nodes on one bus: each has its name on every tab it lists, its
// status, its frames and its micro instances, and each answer names
// both as the live nodes; each node's profile is reached on its own
// lifecycle subject.
func TestNodeNamesOnTwoNodes(t *testing.T) {
	first := startTestNode(t, NodeOptions{Name: "alpha"})
	second := startTestNode(t, secondNodeOptions(t, first, "beta"))
	nc, err := first.Bus().Connect("identity-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subj := first.Subjects()

	// The registry is shared: each sees both (the watch may take a beat).
	waitUntil(t, func() bool {
		return slices.Equal(first.Peers(), []string{"alpha", "beta"}) && slices.Equal(second.Peers(), []string{"alpha", "beta"})
	})
	byNode := map[string]protocol.TabList{}
	for _, data := range gather(t, nc, subj.Tabs(), 2) {
		var list protocol.TabList
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		byNode[list.Node] = list
	}
	for _, name := range []string{"alpha", "beta"} {
		list := byNode[name]
		if !slices.Equal(list.Peers, []string{"alpha", "beta"}) || len(list.Tabs) == 0 {
			t.Fatalf("node %s's tab list: %+v", name, list)
		}
		for _, tab := range list.Tabs {
			if tab.Node != name {
				t.Fatalf("node %s lists a tab of node %q: %+v", name, tab.Node, tab)
			}
		}
	}
	for _, data := range gather(t, nc, subj.BrowserStatus(), 2) {
		var st protocol.StatusReply
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		if st.Node != "alpha" && st.Node != "beta" || st.Profiles[0].Node != st.Node || len(st.Peers) != 2 {
			t.Fatalf("status: %+v", st)
		}
	}
	for _, data := range gather(t, nc, subj.SessionList(), 2) {
		var sl protocol.SessionList
		if err := json.Unmarshal(data, &sl); err != nil {
			t.Fatal(err)
		}
		if sl.Node != "alpha" && sl.Node != "beta" || len(sl.Peers) != 2 {
			t.Fatalf("session list: %+v", sl)
		}
	}

	// A tab opened on beta's own subject is beta's, and its frames say so.
	msg, err := nc.Request(subj.NodeProfile("beta", protocol.DefaultProfile, protocol.OpNewTab), []byte(`{}`), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var opened protocol.TabReply
	if err := json.Unmarshal(msg.Data, &opened); err != nil || !opened.OK || opened.Tab.Node != "beta" || second.Tab(opened.Tab.Tab) == nil {
		t.Fatalf("newtab on beta: %s %v", msg.Data, err)
	}
	frames := watchFrames(t, nc, subj.TabFrames(opened.Tab.Tab))
	res, err := request(nc, opened.Tab.Tab, evals(1))
	if err != nil || !res.OK {
		t.Fatalf("plan: %+v %v", res, err)
	}
	if f := frames.until(res.Sequence); f.Node != "beta" {
		t.Fatalf("beta's frame: %+v", f)
	}

	infos := discover(t, nc, func(infos []micro.Info) bool {
		return instance(infos, "tab", opened.Tab.Tab) != nil && instance(infos, "node", "alpha") != nil
	})
	if tab := instance(infos, "tab", opened.Tab.Tab); tab.Metadata["node"] != "beta" {
		t.Fatalf("the tab's instance: %+v", tab.Metadata)
	}
}

// A node starting with the name of a live node refuses, naming the
// other's host and pid; of two starting at once with one name, one runs.
// A node that stops deletes its entry: its name is free at once. The
// registry is there without a frame history too (its embedded bus has
// JetStream for it).
func TestNodeNameTaken(t *testing.T) {
	first := startTestNode(t, NodeOptions{Name: "gamma", History: HistoryOptions{Disabled: true}})
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	opts := secondNodeOptions(t, first, "gamma")
	opts.Launch.Headless = true
	dup, err := StartNode(ctx, opts)
	if err == nil {
		dup.Close()
		t.Fatal("a second node named gamma started")
	}
	host, _ := os.Hostname()
	if protocol.CodeOf(err) != protocol.CodeNodeNameTaken || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(err.Error(), host) {
		t.Fatalf("a second gamma: %v (%s)", err, protocol.CodeOf(err))
	}

	// Two at once, with a name no one has.
	var wg sync.WaitGroup
	started := make(chan *Node, 2)
	errs := make(chan error, 2)
	for range 2 {
		opts := secondNodeOptions(t, first, "delta")
		opts.Launch.Headless = true
		wg.Go(func() {
			n, err := StartNode(ctx, opts)
			if err != nil {
				errs <- err
				return
			}
			started <- n
		})
	}
	wg.Wait()
	close(started)
	close(errs)
	var winners []*Node
	for n := range started {
		winners = append(winners, n)
		t.Cleanup(func() { n.Close() })
	}
	if len(winners) != 1 {
		t.Fatalf("%d nodes named delta started at once", len(winners))
	}
	if err := <-errs; protocol.CodeOf(err) != protocol.CodeNodeNameTaken {
		t.Fatalf("the loser: %v", err)
	}

	// delta stops: its entry is deleted (not left to expire).
	js, err := jetstream.New(testConnOf(t, first))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, first.Subjects().NodesBucket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "delta"); err != nil {
		t.Fatalf("delta's entry while it runs: %v", err)
	}
	winners[0].Close()
	if e, err := kv.Get(ctx, "delta"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("delta's entry after it stopped: %v %v", e, err)
	}
	if slices.Contains(first.Peers(), "delta") {
		waitUntil(t, func() bool { return !slices.Contains(first.Peers(), "delta") })
	}
}

// A name that is no subject token is a bad request.
func TestNodeNameInvalid(t *testing.T) {
	for _, name := range []string{"a.b", "a b", "a*", ">", strings.Repeat("x", protocol.MaxNodeName+1)} {
		_, err := StartNode(context.Background(), NodeOptions{Name: name})
		if protocol.CodeOf(err) != protocol.CodeBadRequest {
			t.Errorf("node name %q: %v", name, err)
		}
	}
	if name := DefaultNodeName(); !protocol.ValidNodeName(name) {
		t.Errorf("default node name %q is not valid", name)
	}
}

// testConnOf is a connection to node's bus, closed when the test ends.
func testConnOf(t *testing.T, node *Node) *nats.Conn {
	t.Helper()
	nc, err := node.Bus().Connect("identity-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// A node restarted right after it died on this machine (kill -9) finds
// its old entry still in the registry, held by a process that no longer
// runs here: it waits for the entry to expire and starts, rather than
// refusing its own name.
func TestNodeRestartAfterDeath(t *testing.T) {
	first := startTestNode(t, NodeOptions{Name: "epsilon"})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	kv := bucketOf(t, first, first.Subjects().NodesBucket())
	entry, _ := json.Marshal(protocol.NodeEntry{Node: "phoenix", Host: host, PID: dead.Process.Pid})
	if _, err := kv.Create(t.Context(), "phoenix", entry); err != nil {
		t.Fatal(err)
	}
	opts := secondNodeOptions(t, first, "phoenix")
	again := startTestNode(t, opts)
	if again.Name() != "phoenix" {
		t.Fatalf("restarted as %q", again.Name())
	}
	got, err := kv.Get(t.Context(), "phoenix")
	var now protocol.NodeEntry
	if err != nil || json.Unmarshal(got.Value(), &now) != nil || now.PID != os.Getpid() {
		t.Fatalf("phoenix's entry after the restart: %s %v", got.Value(), err)
	}
}
