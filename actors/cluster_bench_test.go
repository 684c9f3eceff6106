package actors

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/benchkit"
	"github.com/framebus/framebus/internal/testscale"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
)

// benchClusterSecret is what the benchmark cluster's routes log in with.
const benchClusterSecret = "bench-cluster-route-secret"

// benchCluster starts a cluster of three servers on loopback: nodes one
// and two, each on its embedded server, and a third server with no node
// (framebus bus). The history is kept on all three. It returns the nodes
// and an agent's connection over TCP to each of the three servers.
func benchCluster(b *testing.B) (nodes []*Node, agents []*nats.Conn) {
	b.Helper()
	listen, routes := bustest.ClusterRoutes(b, 3)
	member := func(i int) bus.Options {
		return bus.Options{Name: fmt.Sprintf("bench%d", i+1),
			Cluster: &bus.ClusterOptions{Listen: listen[i], Routes: routes, Secret: benchClusterSecret}}
	}
	third := member(2)
	third.JetStream = &bus.JetStreamOptions{}
	bus3, err := bus.Start(third)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bus3.Close() })
	nodes = make([]*Node, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { // together: the history waits for the cluster's quorum
			ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
			defer cancel()
			nodes[i], errs[i] = StartNode(ctx, NodeOptions{Name: fmt.Sprintf("node%d", i+1), Bus: member(i),
				Launch: cdpdriver.LaunchOptions{Headless: true}, History: HistoryOptions{Replicas: 3}})
		})
	}
	wg.Wait()
	for i, n := range nodes {
		if errs[i] != nil {
			b.Fatal(errs[i])
		}
		b.Cleanup(func() { n.Close() })
	}
	creds := bustest.AddUser(b, nodes[0].Bus(), protocol.RoleAgent) // the cluster shares it
	for _, url := range []string{nodes[0].Bus().ClientURL(), nodes[1].Bus().ClientURL(), bus3.ClientURL()} {
		var nc *nats.Conn
		waitUntil(b, func() bool { // until this server has learnt the user
			nc, err = nats.Connect(url, bustest.Options(creds)...)
			return err == nil
		})
		b.Cleanup(nc.Close)
		agents = append(agents, nc)
	}
	return nodes, agents
}

// planTarget is a tab and the sequence its next plan is based on.
type planTarget struct {
	id  string
	seq int64
}

// openPlanTargets gives a node n tabs (its first among them).
func openPlanTargets(b *testing.B, node *Node, n int) []*planTarget {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	for len(node.Tabs()) < n {
		if _, err := node.OpenTab(ctx, "about:blank"); err != nil {
			b.Fatal(err)
		}
	}
	var tabs []*planTarget
	for _, info := range node.Tabs()[:n] {
		tabs = append(tabs, &planTarget{id: info.Tab, seq: info.Sequence})
	}
	return tabs
}

// BenchmarkClusterEval: an `eval 1+1` plan round trip to a tab of node
// one, from an agent on node one's own server and from one on the third
// server of the cluster (one route further), interleaved in one run.
func BenchmarkClusterEval(b *testing.B) {
	nodes, agents := benchCluster(b)
	tab := openPlanTargets(b, nodes[0], 1)[0]
	own, other := agents[0], agents[2]
	round := func(nc *nats.Conn) time.Duration {
		start := time.Now()
		var err error
		if tab.seq, err = evalPlan(nc, tab.id, tab.seq); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for range 200 {
		round(own)
		round(other)
	}
	var ownT, otherT []time.Duration
	b.ResetTimer()
	for range b.N {
		ownT = append(ownT, round(own))
		otherT = append(otherT, round(other))
	}
	b.StopTimer()
	o, t := benchkit.P50(ownT), benchkit.P50(otherT)
	b.ReportMetric(float64(o.Microseconds()), "own-server-p50-µs")
	b.ReportMetric(float64(t.Microseconds()), "other-server-p50-µs")
	b.ReportMetric(float64(t)/float64(o), "other/own")
}

// BenchmarkClusterThroughput: every tab has an agent sending it `eval 1+1`
// plans back to back, the agents spread over the three servers of the
// cluster; total plans per second and the p99 round trip, for the same
// 16 tabs as 2 nodes × 8 and as 1 node × 16 (node one's), phases
// alternating in one run (benchtime is the phases' count).
func BenchmarkClusterThroughput(b *testing.B) {
	nodes, agents := benchCluster(b)
	oneTabs := openPlanTargets(b, nodes[0], 16)
	twoTabs := openPlanTargets(b, nodes[1], 8)
	// A new tab's subject reaches the other servers a moment after the
	// tab answers on its own: every agent reaches every tab first.
	for _, tab := range slices.Concat(oneTabs, twoTabs) {
		for _, nc := range agents {
			waitUntil(b, func() bool {
				seq, err := evalPlan(nc, tab.id, tab.seq)
				tab.seq = max(tab.seq, seq)
				return err == nil
			})
		}
	}
	layouts := []struct {
		name string
		tabs []*planTarget
	}{
		{"2x8", slices.Concat(oneTabs[:8], twoTabs)},
		{"1x16", oneTabs},
	}
	const phase = 2 * time.Second
	run := func(tabs []*planTarget, d time.Duration) (plans int, lat []time.Duration) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		end := time.Now().Add(d)
		for i, tab := range tabs {
			nc := agents[i%len(agents)]
			wg.Go(func() {
				var mine []time.Duration
				for time.Now().Before(end) {
					start := time.Now()
					var err error
					if tab.seq, err = evalPlan(nc, tab.id, tab.seq); err != nil {
						b.Errorf("tab %s (agent %d): %v", tab.id, i%len(agents), err)
						return
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		return len(lat), lat
	}
	for _, l := range layouts { // warm up
		run(l.tabs, phase/4)
	}
	total := make([]int, len(layouts))
	lats := make([][]time.Duration, len(layouts))
	b.ResetTimer()
	for range b.N {
		for i, l := range layouts {
			n, lat := run(l.tabs, phase)
			total[i] += n
			lats[i] = append(lats[i], lat...)
		}
	}
	b.StopTimer()
	secs := phase.Seconds() * float64(b.N)
	for i, l := range layouts {
		b.ReportMetric(float64(total[i])/secs, l.name+"-plans/s")
		b.ReportMetric(float64(benchkit.Percentile(lats[i], 99).Microseconds()), l.name+"-p99-µs")
	}
	b.ReportMetric(float64(total[0])/float64(total[1]), "2x8/1x16-plans")
	b.ReportMetric(float64(benchkit.Percentile(lats[0], 99))/float64(benchkit.Percentile(lats[1], 99)), "2x8/1x16-p99")
}
