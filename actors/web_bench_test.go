package actors

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/benchkit"
	"github.com/framebus/framebus/internal/testscale"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/actors/whitelist"
	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
)

// webBench is a node with a whitelist (the loopback page's address), a
// bare responder answering 100 KB on its server (the bus's floor), and
// three ways to fetch a 100 KB page: an agent's Go client over TCP
// (bus/client Fetch: the body outside the JSON), the same agent's plain
// JSON request (as any NATS client sends it), and net/http directly with
// as many connections kept alive as the node's fetcher keeps.
func webBench(b *testing.B) (fetch, fetchInProc, fetchJSON, direct, busFloor func()) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, benchkit.Page100KB)
	}))
	b.Cleanup(page.Close)
	wl, err := whitelist.New([]string{"127.0.0.1"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	node, err := StartNode(ctx, NodeOptions{Prefix: "fbwebbench", Whitelist: wl, Launch: cdpdriver.LaunchOptions{Headless: true}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { node.Close() })
	creds := bustest.AddUser(b, node.Bus(), protocol.RoleAgent)
	agent, err := busclient.Connect(ctx, busclient.Options{Credentials: &creds, Prefix: node.Subjects().Prefix})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(agent.Close)
	// The same agent in the node's process (an in-process connection).
	inproc, err := busclient.Connect(ctx, busclient.Options{Credentials: &creds, Prefix: node.Subjects().Prefix,
		NATSOptions: []nats.Option{nats.InProcessServer(node.Bus().Server())}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(inproc.Close)
	req := protocol.FetchRequest{URL: page.URL + "/page"}
	data, _ := json.Marshal(req)
	subject := node.Subjects().HTTPFetch()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	fetch = func() {
		reply, err := agent.Fetch(context.Background(), req)
		if err != nil || len(reply.Body) != len(benchkit.Page100KB) {
			b.Fatalf("fetch over the bus: %v (%d bytes)", err, len(reply.Body))
		}
	}
	fetchInProc = func() {
		reply, err := inproc.Fetch(context.Background(), req)
		if err != nil || len(reply.Body) != len(benchkit.Page100KB) {
			b.Fatalf("fetch over the bus in process: %v (%d bytes)", err, len(reply.Body))
		}
	}
	fetchJSON = func() {
		msg, err := agent.Conn().Request(subject, data, 30*time.Second)
		var reply protocol.FetchReply
		if err == nil {
			err = json.Unmarshal(msg.Data, &reply)
		}
		if err != nil || len(reply.Body) != len(benchkit.Page100KB) {
			b.Fatalf("fetch over the bus, JSON: %v (%d bytes)", err, len(reply.Body))
		}
	}
	direct = func() {
		resp, err := client.Get(page.URL + "/page")
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(body) != len(benchkit.Page100KB) {
			b.Fatalf("direct: %v (%d bytes)", err, len(body))
		}
	}
	// The floor of the bus's part: a bare responder on the node's server
	// (an in-process connection, as the node's) answering 100 KB at once
	// to the same agent connection, over TCP.
	nc, err := node.Bus().Connect("bench-floor")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	floorSubject := node.Subjects().TabPlan("FLOOR")
	sub, err := nc.Subscribe(floorSubject, func(m *nats.Msg) { m.Respond([]byte(benchkit.Page100KB)) })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sub.Unsubscribe() })
	busFloor = func() {
		msg, err := agent.Conn().Request(floorSubject, nil, 30*time.Second)
		if err != nil || len(msg.Data) != len(benchkit.Page100KB) {
			b.Fatalf("the bare responder: %v", err)
		}
	}
	return fetch, fetchInProc, fetchJSON, direct, busFloor
}

// BenchmarkFetchOverTheBus measures, interleaved in one run, a fetch of a
// 100 KB loopback page through the bus (an agent's request over TCP to
// the http resource: whitelist, egress dialer, decoding, the JSON reply)
// against the same GET with net/http directly, and reports each one's p50
// and the ratio.
func BenchmarkFetchOverTheBus(b *testing.B) {
	fetch, fetchInProc, fetchJSON, direct, busFloor := webBench(b)
	for range 50 {
		fetch()
		fetchInProc()
		fetchJSON()
		direct()
		busFloor()
	}
	var busT, inT, jsonT, directT, floorT []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		direct()
		t1 := time.Now()
		fetch()
		t2 := time.Now()
		fetchJSON()
		t3 := time.Now()
		busFloor()
		t4 := time.Now()
		fetchInProc()
		t5 := time.Now()
		directT, busT, jsonT, floorT = append(directT, t1.Sub(t0)), append(busT, t2.Sub(t1)), append(jsonT, t3.Sub(t2)), append(floorT, t4.Sub(t3))
		inT = append(inT, t5.Sub(t4))
	}
	b.StopTimer()
	d := float64(benchkit.P50(directT))
	b.ReportMetric(d/1e3, "direct-p50-µs")
	b.ReportMetric(float64(benchkit.P50(busT))/1e3, "bus-p50-µs")
	b.ReportMetric(float64(benchkit.P50(jsonT))/1e3, "bus-json-p50-µs")
	b.ReportMetric(float64(benchkit.P50(floorT))/1e3, "bare-100KB-reply-p50-µs")
	b.ReportMetric(float64(benchkit.P50(busT))/d, "bus/direct-p50")
	b.ReportMetric(float64(benchkit.P50(inT))/d, "bus-inproc/direct-p50")
	b.ReportMetric(float64(benchkit.P50(jsonT))/d, "bus-json/direct-p50")
	b.ReportMetric((d+float64(benchkit.P50(floorT)))/d, "floor(direct+bare)/direct")
}

// BenchmarkFetchOverTheBus64 runs rounds of 64 concurrent fetches of the
// page, a round through the bus and one with net/http directly in turn,
// and reports each one's throughput and the ratio; and, in turn with
// them, rounds of 64 bare 100 KB replies: a fetch over the bus costs at
// least a direct GET and a bare reply, so their rates bound its
// throughput (floor).
func BenchmarkFetchOverTheBus64(b *testing.B) {
	fetch, _, _, direct, busFloor := webBench(b)
	round := func(one func()) time.Duration { return benchkit.Round(64, one) }
	round(fetch)
	round(direct)
	round(busFloor)
	var busT, directT, floorT time.Duration
	b.ResetTimer()
	for range b.N {
		directT += round(direct)
		busT += round(fetch)
		floorT += round(busFloor)
	}
	b.StopTimer()
	n := float64(64 * b.N)
	b.ReportMetric(n/directT.Seconds(), "direct-fetches/s")
	b.ReportMetric(n/busT.Seconds(), "bus-fetches/s")
	b.ReportMetric(n/floorT.Seconds(), "bare-100KB-replies/s")
	b.ReportMetric(directT.Seconds()/busT.Seconds(), "bus/direct-throughput")
	b.ReportMetric(directT.Seconds()/(directT.Seconds()+floorT.Seconds()), "floor(direct+bare)/direct-throughput")
}
