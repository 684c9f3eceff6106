package main

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// joinURL is the URL a second serve joins first's bus with: its listener,
// logged in as first's admin (what --bus-url takes).
func joinURL(t *testing.T, first *node) string {
	t.Helper()
	admin, err := serving.ReadCredentials(first.credsFile(serving.AdminCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(admin.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(admin.User, admin.Password)
	return u.String()
}

// waitForTwoNodesTabs waits until nodes one and two both answer bc's
// tab list, and checks that it has their tabs, each under its node's
// name. It returns the list.
func waitForTwoNodesTabs(t *testing.T, ctx context.Context, bc *busclient.Client, one, two *node, deadline time.Duration) protocol.TabList {
	t.Helper()
	var list protocol.TabList
	var err error
	waitFor(t, "both nodes answer tabs", deadline, func() bool {
		list, err = bc.Tabs(ctx)
		states := nodeStates(list.Nodes)
		return err == nil && states["one"] == protocol.NodeAnswered && states["two"] == protocol.NodeAnswered
	})
	byTab := map[string]string{}
	for _, tab := range list.Tabs {
		byTab[tab.Tab] = tab.Node
	}
	if byTab[one.tab()] != "one" || byTab[two.tab()] != "two" || len(list.Tabs) != 2 {
		t.Fatalf("tabs of two nodes: %+v", list)
	}
	return list
}

// nodeStates are the states of a gathered reply's nodes, by name.
func nodeStates(nodes []protocol.NodeState) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		out[n.Node] = n.State
	}
	return out
}

// Two serve processes on one bus, the second joining the first's with
// its admin credentials: every listing (the Go client's and the CLI's)
// has both nodes' tabs with their names; a third serve with a live name
// refuses to start, naming the other's pid. Then kill -9 the second: a
// plan to its tab fails within 1 s with node_unavailable naming it, within
// 5 s its entry is gone from the registry and from listings, and the
// first node keeps working throughout.
func TestTwoNodesOneBusAndKill9(t *testing.T) {
	t.Parallel() // its own nodes
	one := startNode(t, envNode+"=one")
	join := joinURL(t, one)
	two := startNode(t, envNode+"=two", envBusURL+"="+join)
	if one.state.Node != "one" || two.state.Node != "two" || one.state.Tabs[0].Node != "one" || two.state.Tabs[0].Node != "two" {
		t.Fatalf("the state files: %+v / %+v", one.state, two.state)
	}
	// The second's login to the first's bus stays in its state file
	// (0600): serve prints and logs the URL without the password.
	if joined, _ := url.Parse(join); joined != nil {
		password, _ := joined.User.Password()
		if strings.Contains(two.stdout.String()+two.stderr.String(), password) {
			t.Errorf("serve printed or logged the bus URL's password")
		}
	}
	agent, err := serving.ReadCredentials(one.credsFile(serving.AgentCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	bc, err := busclient.Connect(ctx, busclient.Options{Credentials: &agent})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()

	// Both nodes, named, in every listing.
	list := waitForTwoNodesTabs(t, ctx, bc, one, two, 10*time.Second)
	// A gather waits for the nodes a fixed while (GatherWait): a node a
	// busy machine stalls longer is told unreachable that once, and asked
	// again here.
	var st protocol.StatusReply
	waitFor(t, "the status of both nodes", 30*time.Second, func() bool {
		st, err = bc.Status(ctx)
		return err == nil && len(st.Profiles) == 2 && st.Profiles[0].Node != st.Profiles[1].Node
	})
	for _, args := range [][]string{{"status"}, {"pages"}, {"session", "list"}} {
		waitFor(t, "framebus "+strings.Join(args, " ")+" answered by both nodes", 30*time.Second, func() bool {
			out := framebus(t, one.env, "", args...)
			return out.status == 0 && strings.Contains(out.stdout, `{"node":"one","state":"answered"`) && strings.Contains(out.stdout, `{"node":"two","state":"answered"`)
		})
	}
	out := framebus(t, one.env, "", "pages", "--node", "two")
	if out.status != 0 || !strings.Contains(out.stdout, two.tab()) || strings.Contains(out.stdout, one.tab()) {
		t.Fatalf("framebus pages --node two: %d %s %s", out.status, out.stdout, out.stderr)
	}

	// A live name is refused, naming who has it.
	dup := framebus(t, testEnv(envState+"="+t.TempDir()+"/node.json", envNode+"=two", envBusURL+"="+join), "", "serve")
	if dup.status == 0 || !strings.Contains(dup.stdout+dup.stderr, string(protocol.CodeNodeNameTaken)) || !strings.Contains(dup.stdout+dup.stderr, "pid "+strconv.Itoa(two.state.PID)) {
		t.Fatalf("a second node named two: %d %s %s", dup.status, dup.stdout, dup.stderr)
	}

	// The registry as the node account has it (admin).
	nc, err := nats.Connect(join)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, protocol.DefaultSubjects.NodesBucket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "two"); err != nil {
		t.Fatalf("two's entry: %v", err)
	}

	killed := killNode(t, ctx, bc, two)
	// The CLI, which never listed the tab, finds its node in the history
	// (frames name their node).
	out = framebus(t, one.env, "", "eval", "1+1", "--tab", two.tab())
	if m := out.reply(t); out.status != 1 || m["code"] != string(protocol.CodeNodeUnavailable) || !strings.Contains(m["error"].(string), "node two") {
		t.Fatalf("framebus eval on the killed node's tab: %d %s %s", out.status, out.stdout, out.stderr)
	}
	// Within 5 s: its entry is gone, and listings drop it and its tab.
	waitFor(t, "two's registry entry expires", 5*time.Second, func() bool {
		_, err := kv.Get(ctx, "two")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	t.Logf("two's registry entry gone %s after the kill", time.Since(killed))
	waitFor(t, "listings drop two", 5*time.Second, func() bool {
		list, err = bc.Tabs(ctx)
		_, listed := nodeStates(list.Nodes)["two"]
		return err == nil && !listed
	})
	t.Logf("listings without two %s after the kill", time.Since(killed))
	if slices.ContainsFunc(list.Tabs, func(tab protocol.TabInfo) bool { return tab.Node == "two" }) || nodeStates(list.Nodes)["one"] != protocol.NodeAnswered {
		t.Fatalf("tabs after two died: %+v", list)
	}
	// The first node worked throughout, and its name stays its own.
	if res, err := bc.Plan(ctx, one.tab(), protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}}); err != nil || !res.OK {
		t.Fatalf("a plan on one: %+v %v", res, err)
	}
}

// killNode kills n with kill -9 and checks that a plan to its tab, sent
// through bc, fails within 1 s with node_unavailable naming it. It
// returns when n was killed.
func killNode(t *testing.T, ctx context.Context, bc *busclient.Client, n *node) time.Time {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-n.done
	killed := time.Now()
	pctx, pcancel := context.WithTimeout(ctx, testscale.D(time.Second))
	_, err := bc.Plan(pctx, n.tab(), protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}})
	pcancel()
	t.Logf("a plan to the killed node's tab failed %s after the kill: %v", time.Since(killed), err)
	if protocol.CodeOf(err) != protocol.CodeNodeUnavailable || !strings.Contains(err.Error(), "node "+n.state.Node) {
		t.Fatalf("a plan to the killed node's tab: %v (%s), want node_unavailable naming node %s", err, protocol.CodeOf(err), n.state.Node)
	}
	return killed
}
