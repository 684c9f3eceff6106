package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A node that is the third member of a cluster of three runs a session;
// stopped and started again under its name, again and again, it runs
// the session again each time. Its memory history keeps its JetStream in
// a new temporary directory at each start, so its replica of the session
// registry starts empty and catches up; read as a watch's initial
// values, the registry came from that replica now and then with nothing
// in it, and the node started no session.
func TestSessionsComeBackThroughAClusterMemberRestart(t *testing.T) {
	t.Parallel() // its own cluster, node and browsers
	const secret = "session-restart-secret"
	listen, routes := bustest.ClusterRoutes(t, 3)
	var members []*bus.Bus
	for i := range 2 {
		b, err := bus.Start(bus.Options{Name: fmt.Sprintf("s%d", i+1), Prefix: "fbsessclu", JetStream: &bus.JetStreamOptions{},
			Cluster: &bus.ClusterOptions{Listen: listen[i], Routes: routes, Secret: secret}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		members = append(members, b)
	}
	opts := NodeOptions{
		Name: "beta", Prefix: "fbsessclu", ProfileDir: testdir.Enterable(t), Launch: testDomains,
		History: HistoryOptions{Replicas: 3},
		Bus:     bus.Options{Cluster: &bus.ClusterOptions{Listen: listen[2], Routes: routes, Secret: secret}},
	}
	beta := startTestNode(t, opts)
	nc := bustest.Connect(t, members[0], protocol.RoleAgent)
	started := startOn(t, nc, beta.Subjects().NodeSessionStart("beta"), "back.example.test")
	const restarts = 6
	for i := range restarts {
		if err := beta.Close(); err != nil {
			t.Fatal(err)
		}
		beta = restartTestNode(t, opts)
		deadline := time.Now().Add(testscale.D(30 * time.Second))
		for !runs(beta, started.Session) {
			if time.Now().After(deadline) {
				t.Fatalf("restart %d of %d: the session is not running again after 30s", i+1, restarts)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// restartTestNode starts a node again under its name in this process. Its
// name's entry, deleted as it stopped, may still read as live through its
// new server's replica while that catches up (KV Create reads the key
// again after a deletion), and this process still runs: it asks again.
func restartTestNode(t *testing.T, opts NodeOptions) *Node {
	t.Helper()
	opts.Launch.Headless = true
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		node, err := StartNode(ctx, opts)
		cancel()
		if err == nil {
			t.Cleanup(func() { node.Close() })
			return node
		}
		if protocol.CodeOf(err) != protocol.CodeNodeNameTaken || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
