package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/benchkit"
	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testscale"

	chromedptarget "github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/dom"
	"github.com/mafredri/cdp/protocol/emulation"
	"github.com/mafredri/cdp/protocol/input"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/rpcc"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
)

// BenchmarkEvalRoundTrip measures, in one run and interleaved so machine
// noise hits all paths alike, a one-action `eval 1+1` plan sent by a
// client over the bus (in-process and over TCP) against the same
// Runtime.evaluate sent on a raw mafredri/cdp connection to the same tab:
// the same command the driver sends (cdpdriver.EvalArgs: awaitPromise,
// deep serialization, the timeout), so the difference is what the bus,
// the actor and the driver add.
//
// The TCP path is measured twice: from a client in this process, which
// shares the node's Ps, and from a client process of its own (this test
// binary run as one, see runBenchClient), which is how agents and
// observers reach a node over TCP; that process times its own raw
// Runtime.evaluate alongside, so its ratio compares like with like.
//
// The bus's own floor is measured alongside: a bare responder on the
// node's connection that decodes the plan, sends the same evaluation
// through the driver and replies, with no frames, guard or settling (what
// any service answering plans over NATS must at least do), reached
// in-process and over TCP.
//
// Its node is assembled here (the tests' bus, without JetStream and so
// without history; plain NATS clients; every path on one tab): it shows
// the parts. The node users run, `framebus serve` reached through
// bus/client with its credentials file, is cmd/framebus's
// BenchmarkServeEval.
//
// It reports each path's p50 and the bus/raw ratios. Run it with
// -cpu 1,2: framebus serve runs with GOMAXPROCS = half the CPUs (one on a
// 2-core machine, see cmd/framebus/procs.go), and the two rows show why.
func BenchmarkEvalRoundTrip(b *testing.B) {
	ctx := context.Background()
	tab, raw, inproc := benchSetup(b, "/")
	rawWS := benchRawWebSocket(b, tab)
	tcp := bustest.Connect(b, testBus, protocol.RoleAgent)
	var err error

	bare := startBareResponder(b, tab.page)
	seq := tab.Info().Sequence
	plan := func(nc *nats.Conn) {
		if seq, err = evalPlan(nc, tab.ID(), seq); err != nil {
			b.Fatal(err)
		}
	}
	floor := func(nc *nats.Conn) {
		if _, err := bareEval(nc, bare); err != nil {
			b.Fatal(err)
		}
	}
	rawEval := func() {
		if err := evalRaw(ctx, raw); err != nil {
			b.Fatal(err)
		}
	}
	wsEval := func() {
		if err := evalRaw(ctx, rawWS); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 200; i++ { // warm both sides up
		rawEval()
		wsEval()
		plan(inproc)
		plan(tcp)
		floor(inproc)
		floor(tcp)
	}
	// Each iteration in an order of its own: no path always follows
	// another and pays for what that one left running.
	rows := []func(){wsEval, rawEval, func() { plan(inproc) }, func() { plan(tcp) }, func() { floor(inproc) }, func() { floor(tcp) }}
	times := make([][]time.Duration, len(rows))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, r := range rand.Perm(len(rows)) {
			t0 := time.Now()
			rows[r]()
			times[r] = append(times[r], time.Since(t0))
		}
	}
	wsT, rawT, inT, tcpT, floorInT, floorTCPT := times[0], times[1], times[2], times[3], times[4], times[5]
	b.StopTimer()
	r, in, tc := benchkit.P50(rawT), benchkit.P50(inT), benchkit.P50(tcpT)
	b.ReportMetric(float64(r.Microseconds()), "raw-p50-µs")
	b.ReportMetric(float64(benchkit.P50(wsT).Microseconds()), "raw-ws-p50-µs")
	b.ReportMetric(float64(r)/float64(benchkit.P50(wsT)), "raw-pipe/ws")
	b.ReportMetric(float64(in.Microseconds()), "bus-inproc-p50-µs")
	b.ReportMetric(float64(tc.Microseconds()), "bus-tcp-p50-µs")
	b.ReportMetric(float64(in)/float64(r), "inproc/raw")
	b.ReportMetric(float64(tc)/float64(r), "tcp/raw")
	b.ReportMetric(float64(benchkit.P50(floorInT))/float64(r), "bare-inproc/raw")
	b.ReportMetric(float64(benchkit.P50(floorTCPT))/float64(r), "bare-tcp/raw")

	echo, err := testConn.Subscribe(benchEchoSubject, func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		b.Fatal(err)
	}
	defer echo.Unsubscribe()
	out := runBenchClientProcess(b, tab, b.N)
	b.ReportMetric(float64(out.Raw.Microseconds()), "proc-raw-p50-µs")
	b.ReportMetric(float64(out.Bus.Microseconds()), "proc-tcp-p50-µs")
	b.ReportMetric(float64(out.Bus)/float64(out.Raw), "proc-tcp/raw")
	b.ReportMetric(float64(out.Floor.Microseconds()), "proc-bus-floor-p50-µs")
	b.ReportMetric(float64(out.Echo.Microseconds()), "proc-nats-echo-p50-µs")
}

// bareSubject is where startBareResponder answers: the plan subject of a
// tab that does not exist, so that an agent reaches it as it reaches a
// tab, through its account's import of the node's plan subjects.
var bareSubject = protocol.DefaultSubjects.TabPlan("BENCH_BARE")

// startBareResponder answers eval plans on bareSubject with the least a
// plan service does: decode, evaluate through the driver, encode, reply.
// It shares the page with the idle tab actor for the benchmark's sake
// (the driver's calls are safe from any goroutine); it stops when b ends.
func startBareResponder(b *testing.B, page *cdpdriver.Page) string {
	inbox := make(chan *nats.Msg, 16)
	sub, err := testConn.ChanSubscribe(bareSubject, inbox)
	if err != nil {
		b.Fatal(err)
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	b.Cleanup(func() { _ = sub.Unsubscribe(); close(quit); <-done })
	go func() {
		defer close(done)
		for {
			select {
			case m := <-inbox:
				res := protocol.PlanResult{OK: true, Version: protocol.Version, Executed: 1}
				r := protocol.ActionResult{Type: "eval"}
				plan, err := protocol.DecodePlan(m.Data)
				if err == nil {
					r.Value, err = page.Eval(context.Background(), plan.Actions[0].Expression, plan.Actions[0].EffectiveTimeout())
				}
				if r.OK = err == nil; !r.OK {
					r.Error = err.Error()
				}
				res.Results = []protocol.ActionResult{r}
				respondMsg(m, res, zerolog.Nop())
			case <-quit:
				return
			}
		}
	}()
	return bareSubject
}

// bareEval sends startBareResponder an eval 1+1 plan and checks its answer.
func bareEval(nc *nats.Conn, subject string) (protocol.PlanResult, error) {
	data, _ := json.Marshal(protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}})
	msg, err := nc.Request(subject, data, 10*time.Second)
	if err != nil {
		return protocol.PlanResult{}, err
	}
	var res protocol.PlanResult
	if err := json.Unmarshal(msg.Data, &res); err != nil || !res.OK || string(res.Results[0].Value) != "2" {
		return res, fmt.Errorf("bare responder: %s %v", msg.Data, err)
	}
	return res, nil
}

// evalPlan sends a one-action eval 1+1 plan based on seq and checks its
// answer; it returns the tab's sequence after it.
func evalPlan(nc *nats.Conn, tab string, seq int64) (int64, error) {
	data, _ := json.Marshal(protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1", BasedOnSequence: protocol.Based(seq)}})
	msg, err := nc.Request(protocol.DefaultSubjects.TabPlan(tab), data, 10*time.Second)
	if err != nil {
		return seq, err
	}
	var res protocol.PlanResult
	if err := json.Unmarshal(msg.Data, &res); err != nil || !res.OK || string(res.Results[0].Value) != "2" {
		return seq, fmt.Errorf("plan: %s %v", msg.Data, err)
	}
	return res.Sequence, nil
}

// evalRaw sends the driver's Runtime.evaluate of 1+1 and checks its answer.
func evalRaw(ctx context.Context, raw *cdp.Client) error {
	r, err := raw.Runtime.Evaluate(ctx, cdpdriver.EvalArgs("1+1", 30*time.Second))
	if err != nil || r.Result.DeepSerializedValue == nil || string(r.Result.DeepSerializedValue.Value) != "2" {
		return fmt.Errorf("raw evaluate: %v", err)
	}
	return nil
}

// The bench client process: this test binary started with benchClientEnv
// set to a JSON benchClientJob runs the job instead of the tests and
// prints a benchClientResult.
const benchClientEnv = "FRAMEBUS_BENCH_CLIENT"

type benchClientJob struct {
	Creds     protocol.Credentials // the bus: URL and login
	Tab, Page string               // the tab id, its DevTools websocket
	Sequence  int64
	N         int
}

type benchClientResult struct {
	Raw, Bus time.Duration // p50s
	// Floor is the p50 of a url plan, which makes no CDP call: the bus
	// and the actor alone, between two processes; Echo that of a bare
	// NATS echo on the node's in-process connection, the bus alone.
	Floor, Echo time.Duration
}

// benchEchoSubject is where the node side of the benchmark echoes: a
// plan subject of no tab, which an agent reaches through its account's
// import as it reaches a tab.
var benchEchoSubject = protocol.DefaultSubjects.TabPlan("BENCH_ECHO")

// runBenchClientProcess runs n interleaved raw and bus round trips from a
// client process of their own.
func runBenchClientProcess(b *testing.B, tab *Tab, n int) benchClientResult {
	job, _ := json.Marshal(benchClientJob{Creds: bustest.AddUser(b, testBus, protocol.RoleAgent), Tab: tab.ID(),
		Page: benchPageWebSocket(b, tab.ID()), Sequence: tab.Info().Sequence, N: n})
	cmd := testchild.DieWithTest(exec.Command(os.Args[0], "-test.run=^$"))
	cmd.Env = append(os.Environ(), benchClientEnv+"="+string(job))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("bench client: %v", err)
	}
	var res benchClientResult
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("bench client said %q: %v", out, err)
	}
	return res
}

// runBenchClient is the bench client process's main.
func runBenchClient(jobJSON string) int {
	var job benchClientJob
	if err := json.Unmarshal([]byte(jobJSON), &job); err != nil {
		fmt.Fprintln(os.Stderr, "bench client job:", err)
		return 1
	}
	ctx := context.Background()
	nc, err := nats.Connect(job.Creds.URL, bustest.Options(job.Creds)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench client:", err)
		return 1
	}
	defer nc.Close()
	conn, err := rpcc.DialContext(ctx, job.Page)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench client:", err)
		return 1
	}
	defer conn.Close()
	raw := cdp.NewClient(conn)
	seq := job.Sequence
	urlPlan, _ := json.Marshal(protocol.Plan{Action: &protocol.Action{Type: "url"}})
	rows := []func() error{
		func() error { return evalRaw(ctx, raw) },
		func() (err error) { seq, err = evalPlan(nc, job.Tab, seq); return err },
		func() error {
			_, err := nc.Request(protocol.DefaultSubjects.TabPlan(job.Tab), urlPlan, 10*time.Second)
			return err
		},
		func() error { _, err := nc.Request(benchEchoSubject, urlPlan, 10*time.Second); return err },
	}
	times := make([][]time.Duration, len(rows))
	for i := -200; i < job.N; i++ { // 200 to warm up
		for _, r := range rand.Perm(len(rows)) { // in an order of its own each time
			t0 := time.Now()
			if err := rows[r](); err != nil {
				fmt.Fprintln(os.Stderr, "bench client:", err)
				return 1
			}
			if i >= 0 {
				times[r] = append(times[r], time.Since(t0))
			}
		}
	}
	out, _ := json.Marshal(benchClientResult{Raw: benchkit.P50(times[0]), Bus: benchkit.P50(times[1]), Floor: benchkit.P50(times[2]), Echo: benchkit.P50(times[3])})
	fmt.Println(string(out))
	return 0
}

// BenchmarkInput measures click and type through the bus (a one-action
// plan from an in-process client: resolve, hit test, press, release,
// settle, one frame) against the least raw CDP that does the same on a
// mafredri/cdp connection to the same tab, interleaved in one run:
//
//   - click: resolve the element (Runtime.evaluate), DOM.getBoxModel,
//     mousePressed and mouseReleased at the centre, each awaited;
//   - type: resolve the element, DOM.focus, Input.insertText;
//   - fill: resolve the element, DOM.focus, select its content
//     (Runtime.callFunctionOn), Input.insertText over it.
//
// It reports each path's p50 and the ratio. The clicks land where the
// mouse already is, so framebus does not move it; click-moving is a bus
// click on alternating buttons, which moves the mouse first each time
// (the raw floor has no move to compare it with), and click-first-on-page
// the first click after a navigation, against raw's first click on
// other visits. Run with -cpu 1,2 (see BenchmarkEvalRoundTrip).
func BenchmarkInput(b *testing.B) {
	ctx := context.Background()
	tab, raw, agent := benchSetup(b, "/bench.html")
	rawWS := benchRawWebSocket(b, tab)

	seq := tab.Info().Sequence
	plan := func(a protocol.Action) {
		a.BasedOnSequence = protocol.Based(seq)
		data, _ := json.Marshal(protocol.Plan{Action: &a})
		msg, err := agent.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		var res protocol.PlanResult
		if err := json.Unmarshal(msg.Data, &res); err != nil || !res.OK {
			b.Fatalf("plan: %s %v", msg.Data, err)
		}
		seq = res.Sequence
	}
	resolveOn := func(raw *cdp.Client, sel string) runtime.RemoteObjectID {
		r, err := raw.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs("document.querySelector("+strconv.Quote(sel)+")"))
		if err != nil || r.Result.ObjectID == nil {
			b.Fatalf("resolve %s: %v", sel, err)
		}
		return *r.Result.ObjectID
	}
	resolve := func(sel string) runtime.RemoteObjectID { return resolveOn(raw, sel) }
	clickOn := func(raw *cdp.Client) {
		el := resolveOn(raw, "#count")
		box, err := raw.DOM.GetBoxModel(ctx, &dom.GetBoxModelArgs{ObjectID: &el})
		if err != nil {
			b.Fatal(err)
		}
		q := box.Model.Content
		x, y := (q[0]+q[4])/2, (q[1]+q[5])/2
		for _, typ := range []string{"mousePressed", "mouseReleased"} {
			ev := input.NewDispatchMouseEventArgs(typ, x, y).SetButton(input.MouseButtonLeft).SetClickCount(1)
			if err := raw.Input.DispatchMouseEvent(ctx, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	rawClick := func() { clickOn(raw) }
	rawType := func() {
		el := resolve("#q")
		if err := raw.DOM.Focus(ctx, &dom.FocusArgs{ObjectID: &el}); err != nil {
			b.Fatal(err)
		}
		if err := raw.Input.InsertText(ctx, input.NewInsertTextArgs("x")); err != nil {
			b.Fatal(err)
		}
	}
	rawFill := func() {
		el := resolve("#q")
		if err := raw.DOM.Focus(ctx, &dom.FocusArgs{ObjectID: &el}); err != nil {
			b.Fatal(err)
		}
		if _, err := raw.Runtime.CallFunctionOn(ctx, runtime.NewCallFunctionOnArgs("function () { this.select(); }").SetObjectID(el)); err != nil {
			b.Fatal(err)
		}
		if err := raw.Input.InsertText(ctx, input.NewInsertTextArgs("filled")); err != nil {
			b.Fatal(err)
		}
	}
	click := protocol.Action{Type: "click", Selector: "#count"}
	other := protocol.Action{Type: "click", Selector: "#other"}
	typ := protocol.Action{Type: "type", Selector: "#q", Text: "x"}
	for i := 0; i < 50; i++ {
		rawClick()
		plan(click)
		rawType()
		plan(typ)
	}
	var rc, wc, bc, rt, bt, mc []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tw := time.Now()
		clickOn(rawWS)
		t0 := time.Now()
		rawClick()
		t1 := time.Now()
		wc = append(wc, t0.Sub(tw))
		plan(click)
		t2 := time.Now()
		rawType()
		t3 := time.Now()
		plan(typ)
		t4 := time.Now()
		rc, bc, rt, bt = append(rc, t1.Sub(t0)), append(bc, t2.Sub(t1)), append(rt, t3.Sub(t2)), append(bt, t4.Sub(t3))
		if i%100 == 99 { // keep the field short
			plan(protocol.Action{Type: "eval", Expression: "document.getElementById('q').value = ''"})
		}
	}
	// Fills, in a loop of their own (they leave the field as it was).
	fill := protocol.Action{Type: "fill", Selector: "#q", Text: "filled"}
	var rf, bf []time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		rawFill()
		t1 := time.Now()
		plan(fill)
		rf, bf = append(rf, t1.Sub(t0)), append(bf, time.Since(t1))
	}
	// Then clicks that each move the mouse, in a loop of their own: the
	// hover changes they make would slow the rows above.
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		plan(other)
		plan(click)
		mc = append(mc, time.Since(t0)/2)
	}
	// And the first click on a new document, the one an agent makes
	// after navigating (framebus's world was made while it loaded), on
	// alternate visits through the bus and raw: a document's first input
	// costs the renderer more whoever sends it.
	var fc, rfc []time.Duration
	for i := range 40 {
		plan(protocol.Action{Type: "navigate", URL: site("/bench.html?visit=" + strconv.Itoa(i)), Wait: true})
		t0 := time.Now()
		if i%2 == 0 {
			plan(click)
			fc = append(fc, time.Since(t0))
		} else {
			rawClick()
			rfc = append(rfc, time.Since(t0))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(benchkit.P50(fc).Microseconds()), "click-first-on-page-bus-p50-µs")
	b.ReportMetric(float64(benchkit.P50(rfc).Microseconds()), "click-first-on-page-raw-p50-µs")
	b.ReportMetric(float64(benchkit.P50(fc))/float64(benchkit.P50(rfc)), "click-first-on-page-bus/raw")
	b.ReportMetric(float64(benchkit.P50(rc).Microseconds()), "click-raw-p50-µs")
	b.ReportMetric(float64(benchkit.P50(wc).Microseconds()), "click-raw-ws-p50-µs")
	b.ReportMetric(float64(benchkit.P50(rc))/float64(benchkit.P50(wc)), "click-raw-pipe/ws")
	b.ReportMetric(float64(benchkit.P50(bc).Microseconds()), "click-bus-p50-µs")
	b.ReportMetric(float64(benchkit.P50(bc))/float64(benchkit.P50(rc)), "click-bus/raw")
	b.ReportMetric(float64(benchkit.P50(mc).Microseconds()), "click-moving-bus-p50-µs")
	b.ReportMetric(float64(benchkit.P50(rt).Microseconds()), "type-raw-p50-µs")
	b.ReportMetric(float64(benchkit.P50(bt).Microseconds()), "type-bus-p50-µs")
	b.ReportMetric(float64(benchkit.P50(bt))/float64(benchkit.P50(rt)), "type-bus/raw")
	b.ReportMetric(float64(benchkit.P50(rf).Microseconds()), "fill-raw-p50-µs")
	b.ReportMetric(float64(benchkit.P50(bf).Microseconds()), "fill-bus-p50-µs")
	b.ReportMetric(float64(benchkit.P50(bf))/float64(benchkit.P50(rf)), "fill-bus/raw")
}

// benchSetup opens a tab at path, a raw DevTools client of the same tab
// (a second client, a session on the browser's pipe as the tab's own is,
// so both paths reach the same renderer the same way) and an in-process
// agent connection of its own, all closed when b ends.
func benchSetup(b *testing.B, path string) (*Tab, *cdp.Client, *nats.Conn) {
	ctx := context.Background()
	tab, page := benchTab(b, path)
	b.Cleanup(func() { tab.Stop(); _ = testBrowser.ClosePage(ctx, page) })
	rawConn, err := testBrowser.conn.DialPage(ctx, page.TargetID())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rawConn.Close() })
	agent, err := testBus.Connect("bench-agent")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(agent.Close)
	return tab, cdp.NewClient(rawConn), agent
}

// benchPageWebSocket is the websocket of a page of the shared browser,
// on the DevTools port it has while benchmarks run (see runTests): for
// clients that cannot share the node's pipe, and to compare the pipe with
// a websocket.
func benchPageWebSocket(b *testing.B, targetID string) string {
	ws, err := url.Parse(testBrowser.Process().BrowserWebSocketURL())
	if err != nil || ws.Host == "" {
		b.Fatalf("the test browser has no DevTools port (%q): run with -bench", testBrowser.Process().BrowserWebSocketURL())
	}
	return "ws://" + ws.Host + "/devtools/page/" + targetID
}

// benchRawWebSocket is a raw DevTools client of the tab over its page
// websocket, closed when b ends.
func benchRawWebSocket(b *testing.B, tab *Tab) *cdp.Client {
	conn, err := rpcc.DialContext(context.Background(), benchPageWebSocket(b, tab.ID()), rpcc.WithWriteBufferSize(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return cdp.NewClient(conn)
}

// benchTab opens a tab with its actor and loads path in it through a plan,
// so the page's own load cannot move the tab on after the benchmark read
// its frame.
func benchTab(b *testing.B, path string) (*Tab, *cdpdriver.Page) {
	ctx := context.Background()
	page, err := testBrowser.OpenPage(ctx, "about:blank")
	if err != nil {
		b.Fatal(err)
	}
	// A node's tab: the default viewport (its own window: NewTarget).
	tab, err := StartTab(ctx, TabOptions{ID: page.TargetID(), Page: page, Conn: testConn, Subjects: protocol.DefaultSubjects, Viewport: protocol.DefaultViewport})
	if err != nil {
		b.Fatal(err)
	}
	data, _ := json.Marshal(protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: site(path), Wait: true}})
	msg, err := testConn.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 30*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	if res, err := protocol.DecodePlanResult(msg.Data); err != nil || !res.OK {
		b.Fatalf("navigate %s: %s", path, msg.Data)
	}
	return tab, page
}

// BenchmarkNavigate measures navigate+load, in one run and interleaved per
// iteration, three ways, each on a tab of its own in the same Chromium:
//
//   - bus: a one-action `navigate --wait` plan over the bus, as the CLI
//     sends it (no basedOnSequence), answered with the new frame's
//     sequence, URL and title;
//   - chromedp: chromedp.Navigate (Page.navigate, then the frame's load)
//     on a tab of its own, connected with its remote.NewAllocator
//     (chromedp v0.23's NewRemoteAllocator): the peer;
//   - raw: Page.navigate and the load event on a mafredri/cdp connection:
//     the floor, what any CDP client must at least wait for.
//
// It does so on a small page and on a table of 1,000 rows, each visit at
// a URL of its own, so every bus frame carries the page's content (its
// URL changed). From the same bus plan it also times when an observer
// subscribed to the tab's frames has that frame with its content
// (frame-*): the reply may come first, the content follows on the frame.
// Beside it, chromedp-first-read is when chromedp's first read of the
// page (an evaluate) is answered after its navigate: the earliest any
// tool has anything from the page, since Chromium lays a new document out
// and paints it after the load event and before it answers.
//
// No path runs beside another: each ends once its page's work is done
// (the bus frame, the peer's and the floor's first read), and the paths
// take turns in all six orders, so each follows each as often. The tabs
// are alike: each in a window of its own, shown, laid out at 1280x720.
//
// The page's own load time (navigationStart to the end of its load event,
// as the page reports it) varies from tab to tab and round to round more
// than any driver's cost, so *-outside-page-p50-ms reports, per path, its
// time less the page's own: what the driver adds.
//
//	go test -run '^$' -bench Navigate -benchtime 200x -cpu 1 ./actors
func BenchmarkNavigate(b *testing.B) {
	ctx := context.Background()
	tab, _ := benchTab(b, "/")
	b.Cleanup(tab.Stop)
	agent, err := testBus.Connect("bench-agent")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(agent.Close)
	frames := watchBenchFrames(b, tab.ID())

	// The raw floor: a tab of its own, on a connection of its own.
	rawPage, err := testBrowser.OpenPage(ctx, "about:blank")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = testBrowser.ClosePage(ctx, rawPage) })
	rawNav, rawClient := rawNavigator(b, rawPage.TargetID())
	vp := protocol.DefaultViewport
	if err := rawClient.Emulation.SetDeviceMetricsOverride(ctx, emulation.NewSetDeviceMetricsOverrideArgs(vp.Width, vp.Height, vp.DeviceScaleFactor, false)); err != nil {
		b.Fatal(err)
	}

	// The chromedp peer, on a tab opened as framebus opens its own (a
	// window of its own), so the three differ only in what drives them.
	peerTab, err := testBrowser.NewTarget(ctx, "about:blank")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = testBrowser.CloseTarget(ctx, peerTab) })
	benchPageWebSocket(b, peerTab) // it has a port
	actx, cancelA := remote.NewAllocator(ctx, testBrowser.Process().BrowserWebSocketURL())
	b.Cleanup(cancelA)
	cdctx, cancelC := chromedp.NewContext(actx, chromedp.WithTargetID(chromedptarget.ID(peerTab)))
	b.Cleanup(cancelC)
	if err := chromedp.Do(cdctx, chromedp.EmulateViewport(int64(vp.Width), int64(vp.Height))); err != nil { // attaches
		b.Fatal(err)
	}
	// All three lay pages out alike, and are shown: a hidden tab (one
	// behind another in its window) is neither laid out nor painted
	// while it loads, which makes its load quicker and its first read
	// slower, and so says nothing about a tab an agent uses.
	// evalIn evaluates a string expression in the bus, chromedp and raw
	// tab, in that order; in the bus tab on a DevTools connection of its
	// own, not as a plan, which would make a frame (see inPage).
	busConn, err := testBrowser.conn.DialPage(ctx, tab.ID())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { busConn.Close() })
	rawEval := func(c *cdp.Client) func(js string) (string, error) {
		return func(js string) (string, error) {
			r, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(js).SetReturnByValue(true))
			if err != nil {
				return "", err
			}
			var s string
			return s, json.Unmarshal(r.Result.Value, &s)
		}
	}
	evalIn := [3]func(js string) (string, error){
		rawEval(cdp.NewClient(busConn)),
		func(js string) (string, error) { return chromedp.Run(cdctx, chromedp.Evaluate[string](js)) },
		rawEval(rawClient),
	}
	names := [3]string{"bus", "chromedp", "raw"}
	const shownJS = `document.visibilityState + " " + innerWidth + "x" + innerHeight`
	want := fmt.Sprintf("visible %dx%d", vp.Width, vp.Height)
	for i, eval := range evalIn {
		if got, err := eval(shownJS); err != nil || got != want {
			b.Fatalf("%s tab: %q (%v), want %q", names[i], got, err, want)
		}
	}
	// inPage is how long the page itself took to load, from the start of
	// its navigation (the unload of the page before) to the end of its
	// load event, as the page tells: what is left of a path's time is the
	// driver's own.
	inPage := func(i int) time.Duration {
		v, err := evalIn[i](`String(performance.timing.loadEventEnd - performance.timing.navigationStart)`)
		n, cerr := strconv.Atoi(v)
		if err != nil || cerr != nil || n <= 0 {
			b.Fatalf("%s tab: load time %q (%v)", names[i], v, err)
		}
		return time.Duration(n) * time.Millisecond
	}
	peer := func(url string) {
		if err := chromedp.Do(cdctx, chromedp.Navigate(url)); err != nil {
			b.Fatal(err)
		}
	}
	// firstRead is a path's first read of its page after the load: it
	// is answered once the renderer has done what it does after the load
	// event (Chromium lays a new document out and paints it then), which
	// any content read waits for. Every path ends with it (the bus path's
	// frame content is one), so none leaves that work to run beside the
	// next path on this machine's two cores.
	firstRead := func(i int) {
		if _, err := evalIn[i](`""`); err != nil {
			b.Fatalf("%s tab: %v", names[i], err)
		}
	}
	bus := func(url string) (reply, frame time.Duration) {
		data, _ := json.Marshal(protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: url, Wait: true}})
		t0 := time.Now()
		msg, err := agent.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		reply = time.Since(t0)
		res, err := protocol.DecodePlanResult(msg.Data)
		if err != nil || !res.OK || res.Results[0].URL != url {
			b.Fatalf("navigate %s: %s", url, msg.Data)
		}
		return reply, frames.contentAt(b, res.Sequence).Sub(t0)
	}
	timed := func(f func(string), url string) time.Duration {
		t0 := time.Now()
		f(url)
		return time.Since(t0)
	}
	pages := []struct{ name, path string }{{"small", "/"}, {"table", "/rows.html?n=1000"}}
	visit := 0
	url := func(path string) string {
		visit++
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		return site(path + sep + "visit=" + strconv.Itoa(visit))
	}
	var rows [2]struct {
		bus, frame, peer, peerRead, raw []time.Duration
		outside                         [3][]time.Duration // per path: its time less the page's own
	}
	// The paths run in each of their six orders in turn, so each follows
	// each other path as often.
	orders := [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	round := func(n int, keep bool) {
		for i, p := range pages {
			var took [3]time.Duration
			var bf, pr time.Duration
			paths := []func(){
				func() { took[0], bf = bus(url(p.path)) },
				func() {
					t0 := time.Now()
					peer(url(p.path))
					took[1] = time.Since(t0)
					firstRead(1)
					pr = time.Since(t0)
				},
				func() { took[2] = timed(rawNav, url(p.path)); firstRead(2) },
			}
			for _, k := range orders[n%len(orders)] {
				paths[k]()
				if keep { // read after the path's time is taken
					rows[i].outside[k] = append(rows[i].outside[k], took[k]-inPage(k))
				}
			}
			if keep {
				r := &rows[i]
				r.bus, r.frame, r.peer, r.peerRead, r.raw = append(r.bus, took[0]), append(r.frame, bf), append(r.peer, took[1]), append(r.peerRead, pr), append(r.raw, took[2])
			}
		}
	}
	for n := range 12 { // warm up all three
		round(n, false)
	}
	b.ResetTimer()
	for n := range b.N {
		round(n, true)
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op") // the medians below say more
	for i, p := range pages {
		r := rows[i]
		bus, frame, peer, peerRead, raw := benchkit.P50(r.bus), benchkit.P50(r.frame), benchkit.P50(r.peer), benchkit.P50(r.peerRead), benchkit.P50(r.raw)
		b.ReportMetric(ms(bus), p.name+"-bus-p50-ms")
		b.ReportMetric(ms(frame), p.name+"-frame-p50-ms")
		b.ReportMetric(ms(peer), p.name+"-chromedp-p50-ms")
		b.ReportMetric(ms(raw), p.name+"-raw-p50-ms")
		b.ReportMetric(float64(bus)/float64(peer), p.name+"-bus/chromedp")
		b.ReportMetric(float64(frame)/float64(peer), p.name+"-frame/chromedp")
		b.ReportMetric(ms(peerRead), p.name+"-chromedp-first-read-p50-ms")
		b.ReportMetric(float64(frame)/float64(peerRead), p.name+"-frame/chromedp-first-read")
		b.ReportMetric(float64(bus)/float64(raw), p.name+"-bus/raw")
		for k, name := range names {
			b.ReportMetric(ms(benchkit.P50(r.outside[k])), p.name+"-"+name+"-outside-page-p50-ms")
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// benchFrames records when frames reach an observer of a tab.
type benchFrames struct {
	ch chan benchFrame
}

type benchFrame struct {
	at      time.Time
	seq     int64
	content bool
}

// watchBenchFrames subscribes an observer connection of its own to tab's
// frames; each frame is decoded as it arrives, the time it was had.
func watchBenchFrames(b *testing.B, tab string) *benchFrames {
	nc, err := testBus.Connect("bench-observer")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	w := &benchFrames{ch: make(chan benchFrame, 1024)}
	_, err = nc.Subscribe(protocol.DefaultSubjects.TabFrames(tab), func(m *nats.Msg) {
		f, err := protocol.DecodeFrame(m.Data)
		if err != nil {
			return
		}
		w.ch <- benchFrame{at: time.Now(), seq: f.Sequence, content: f.FullPage != nil || f.FullPageRef != nil}
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	return w
}

// contentAt waits for frame seq and returns when the observer had it; it
// must carry the page's content.
func (w *benchFrames) contentAt(b *testing.B, seq int64) time.Time {
	for {
		select {
		case f := <-w.ch:
			if f.seq < seq {
				continue
			}
			if f.seq > seq || !f.content {
				b.Fatalf("frame %d (content %v), waiting for frame %d with content", f.seq, f.content, seq)
			}
			return f.at
		case <-time.After(30 * time.Second):
			b.Fatalf("frame %d did not come within 30s", seq)
		}
	}
}

// rawNavigator returns a raw-CDP navigate+load on the page: Page.navigate,
// then the load of the document it commits; and its client, a session on
// the browser's pipe.
func rawNavigator(b *testing.B, targetID string) (func(url string), *cdp.Client) {
	ctx := context.Background()
	conn, err := testBrowser.conn.DialPage(ctx, targetID)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	c := cdp.NewClient(conn)
	// The main frame's lifecycle "load", as the bus tab waits for:
	// Page.loadEventFired comes later on a page that takes long to paint
	// (~50 ms on the table), which would make the floor no floor.
	events, err := c.Page.LifecycleEvent(ctx) // before Page.enable
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { events.Close() })
	if err := c.Page.Enable(ctx); err != nil {
		b.Fatal(err)
	}
	if err := c.Page.SetLifecycleEventsEnabled(ctx, page.NewSetLifecycleEventsEnabledArgs(true)); err != nil {
		b.Fatal(err)
	}
	return func(url string) {
		r, err := c.Page.Navigate(ctx, page.NewNavigateArgs(url))
		if err != nil || r.ErrorText != nil || r.LoaderID == nil {
			b.Fatalf("raw navigate %s: %v %v", url, err, r)
		}
		for {
			e, err := events.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if e.Name == "load" && e.LoaderID == *r.LoaderID && e.FrameID == r.FrameID {
				return
			}
		}
	}, c
}

// historyBench is a bus with JetStream and a history, for the history
// benchmarks: its own, so the stream keeps only their frames.
type historyBench struct {
	bus     *bus.Bus
	node    *nats.Conn // the tabs' connection, as a node's
	history *History
}

func newHistoryBench(b *testing.B, opts HistoryOptions) *historyBench {
	bs, err := bus.Start(bus.Options{JetStream: &bus.JetStreamOptions{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bs.Close() })
	nc, err := bs.Connect("bench-node")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	h, err := StartHistory(ctx, nc, protocol.DefaultSubjects, opts, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	return &historyBench{bus: bs, node: nc, history: h}
}

// tab opens a tab on the bench's bus under subj, kept in the history or
// not, at path.
func (hb *historyBench) tab(b *testing.B, subj protocol.Subjects, h *History, path string) *Tab {
	ctx := context.Background()
	page, err := testBrowser.OpenPage(ctx, "about:blank")
	if err != nil {
		b.Fatal(err)
	}
	tab, err := StartTab(ctx, TabOptions{ID: page.TargetID(), Page: page, Conn: hb.node, Subjects: subj, Viewport: protocol.DefaultViewport, History: h})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tab.Stop(); _ = testBrowser.ClosePage(ctx, page) })
	data, _ := json.Marshal(protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: site(path), Wait: true}})
	if msg, err := hb.node.Request(subj.TabPlan(tab.ID()), data, 30*time.Second); err != nil {
		b.Fatal(err)
	} else if res, err := protocol.DecodePlanResult(msg.Data); err != nil || !res.OK {
		b.Fatalf("navigate %s: %s", path, msg.Data)
	}
	return tab
}

// client is a TCP connection to the bench's bus, closed when b ends,
// logged in as admin (the bench uses a second prefix, which the other
// roles' permissions do not cover).
func (hb *historyBench) client(b *testing.B) *nats.Conn {
	return bustest.Connect(b, hb.bus, protocol.RoleAdmin)
}

// BenchmarkFrameHistory measures what the frame history costs, in one
// run and interleaved so machine noise hits both alike: the time from an
// agent sending a plan that changes the URL (a pushState: the frame
// carries the page's content) to an observer, over TCP, receiving its
// frame, for a tab whose frames the JetStream history keeps and for one
// on the same bus and node connection whose frames it does not (another
// prefix, which the stream does not cover). It also reports when the
// same frame reached an observer that follows the history (an ordered
// consumer) instead of the live subject, and the plans' own round trips
// (reply-*).
//
//	go test -run '^$' -bench FrameHistory -benchtime 300x -cpu 1 ./actors
func BenchmarkFrameHistory(b *testing.B) {
	ctx := context.Background()
	hb := newHistoryBench(b, HistoryOptions{})
	noHistory := protocol.Subjects{Prefix: "nohistory"}
	kept := hb.tab(b, protocol.DefaultSubjects, hb.history, "/bench.html")
	live := hb.tab(b, noHistory, nil, "/bench.html")
	agent, observer := hb.client(b), hb.client(b)
	frames := func(subject string) chan protocol.Frame {
		ch := make(chan protocol.Frame, 1024)
		if _, err := observer.Subscribe(subject, func(m *nats.Msg) {
			if f, err := protocol.DecodeFrame(m.Data); err == nil {
				ch <- f
			}
		}); err != nil {
			b.Fatal(err)
		}
		return ch
	}
	keptFrames, liveFrames := frames(protocol.DefaultSubjects.TabFrames(kept.ID())), frames(noHistory.TabFrames(live.ID()))
	if err := observer.Flush(); err != nil {
		b.Fatal(err)
	}
	js, err := jetstream.New(hb.client(b))
	if err != nil {
		b.Fatal(err)
	}
	cons, err := js.OrderedConsumer(ctx, protocol.DefaultSubjects.FrameStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{protocol.DefaultSubjects.TabFrames(kept.ID())}, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		b.Fatal(err)
	}
	streamed := make(chan protocol.Frame, 1024)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if f, err := protocol.DecodeFrame(m.Data()); err == nil {
			streamed <- f
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cc.Stop)
	// until waits for frame seq on ch and says when it came.
	until := func(ch chan protocol.Frame, seq int64) time.Time {
		deadline := time.After(30 * time.Second)
		for {
			select {
			case f := <-ch:
				if f.Sequence == seq {
					if f.FullPage == nil {
						b.Fatalf("frame %d has no content", seq)
					}
					return time.Now()
				}
			case <-deadline:
				b.Fatalf("no frame %d within 30s", seq)
			}
		}
	}
	send := func(subj protocol.Subjects, tab *Tab, i int) int64 {
		data, _ := json.Marshal(protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: fmt.Sprintf("history.pushState(null, '', '?visit=%d')", i)}})
		msg, err := agent.Request(subj.TabPlan(tab.ID()), data, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		res, err := protocol.DecodePlanResult(msg.Data)
		if err != nil || !res.OK {
			b.Fatalf("pushState: %s", msg.Data)
		}
		return res.Sequence
	}
	var withT, withoutT, streamT, replyWithT, replyWithoutT []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		seq := send(noHistory, live, i)
		replyWithoutT = append(replyWithoutT, time.Since(start))
		withoutT = append(withoutT, until(liveFrames, seq).Sub(start))

		start = time.Now()
		seq = send(protocol.DefaultSubjects, kept, i)
		replyWithT = append(replyWithT, time.Since(start))
		withT = append(withT, until(keptFrames, seq).Sub(start))
		streamT = append(streamT, until(streamed, seq).Sub(start))
	}
	b.StopTimer()
	b.ReportMetric(float64(benchkit.P50(replyWithoutT).Microseconds()), "reply-no-history-p50-µs")
	b.ReportMetric(float64(benchkit.P50(replyWithT).Microseconds()), "reply-history-p50-µs")
	with, without := benchkit.P50(withT), benchkit.P50(withoutT)
	b.ReportMetric(float64(without.Microseconds()), "no-history-p50-µs")
	b.ReportMetric(float64(with.Microseconds()), "history-p50-µs")
	b.ReportMetric(float64(with)/float64(without), "history/no-history")
	b.ReportMetric(float64(benchkit.P50(streamT).Microseconds()), "history-consumer-p50-µs")
}

// BenchmarkHistoryReplay measures a new observer replaying 10,000 stored
// frames of one tab over TCP with an ordered consumer, as `framebus watch
// --from 1` does, and reports frames per second. The frames are made
// once, before the timer starts.
//
//	go test -run '^$' -bench HistoryReplay -benchtime 3x ./actors
func BenchmarkHistoryReplay(b *testing.B) {
	const stored = 10000
	ctx := context.Background()
	hb := newHistoryBench(b, HistoryOptions{MaxPerTab: 2 * stored})
	tab := hb.tab(b, protocol.DefaultSubjects, hb.history, "/bench.html")
	agent := hb.client(b)
	for tab.Info().Sequence < stored {
		n := min(protocol.MaxPlanActions, stored-int(tab.Info().Sequence))
		data, _ := json.Marshal(evals(n))
		if _, err := agent.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 5*time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	subject := protocol.DefaultSubjects.TabFrames(tab.ID())
	for deadline := time.Now().Add(time.Minute); ; {
		m, err := hb.history.Stream().GetLastMsgForSubject(ctx, subject)
		if err == nil {
			if f, _ := protocol.DecodeFrame(m.Data); f.Sequence >= stored {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("frame %d not stored within a minute: %v", stored, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	js, err := jetstream.New(hb.client(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var took time.Duration
	for range b.N {
		start := time.Now()
		cons, err := js.OrderedConsumer(ctx, protocol.DefaultSubjects.FrameStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
		if err != nil {
			b.Fatal(err)
		}
		msgs, err := cons.Messages()
		if err != nil {
			b.Fatal(err)
		}
		for want := int64(1); want <= stored; want++ {
			m, err := msgs.Next()
			if err != nil {
				b.Fatal(err)
			}
			f, err := protocol.DecodeFrame(m.Data())
			if err != nil || f.Sequence != want {
				b.Fatalf("replayed frame %d, want %d: %v", f.Sequence, want, err)
			}
		}
		msgs.Stop()
		took += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(stored*b.N)/took.Seconds(), "frames/s")
}

// BenchmarkAccessAndHistoryCost measures what authentication, the roles'
// permissions and the frame history add to a plan's round trip, in one
// run and interleaved: `eval 1+1` over TCP, by an agent logged in to a
// node's bus (every publish checked against its role, every frame stored
// in the history), against the same plan over TCP to a tab on a bare
// nats-server with no users and no JetStream. Both tabs are in the same
// browser. The target: the first at most 5% slower.
//
//	go test -run '^$' -bench AccessAndHistoryCost -benchtime 2000x -cpu 1 ./actors
func BenchmarkAccessAndHistoryCost(b *testing.B) {
	hb := newHistoryBench(b, HistoryOptions{})
	guarded := hb.tab(b, protocol.DefaultSubjects, hb.history, "/")
	agent := bustest.Connect(b, hb.bus, protocol.RoleAgent)

	bare := stockServer(b, &server.Options{})
	bareNode, err := nats.Connect(bare.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(bareNode.Close)
	open := &historyBench{node: bareNode}
	plain := open.tab(b, protocol.DefaultSubjects, nil, "/")
	bareAgent, err := nats.Connect(bare.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(bareAgent.Close)

	guardedSeq, plainSeq := guarded.Info().Sequence, plain.Info().Sequence
	round := func(nc *nats.Conn, tab *Tab, seq *int64) time.Duration {
		start := time.Now()
		next, err := evalPlan(nc, tab.ID(), *seq)
		if err != nil {
			b.Fatal(err)
		}
		*seq = next
		return time.Since(start)
	}
	for range 200 { // warm both up
		round(agent, guarded, &guardedSeq)
		round(bareAgent, plain, &plainSeq)
	}
	var withT, withoutT []time.Duration
	b.ResetTimer()
	for range b.N {
		withoutT = append(withoutT, round(bareAgent, plain, &plainSeq))
		withT = append(withT, round(agent, guarded, &guardedSeq))
	}
	b.StopTimer()
	with, without := benchkit.P50(withT), benchkit.P50(withoutT)
	b.ReportMetric(float64(without.Microseconds()), "open-bus-p50-µs")
	b.ReportMetric(float64(with.Microseconds()), "auth-history-p50-µs")
	b.ReportMetric(float64(with)/float64(without), "auth-history/open")
}

// BenchmarkFrameFanOut measures 100 observers, each on its own TCP
// connection with an observer credential, following one tab that changes
// frames as fast as it can (plans of 100 evals, back to back): frames per
// second delivered to each observer (the slowest and the median), and
// frames lost (every observer must see every frame: 0).
//
//	go test -run '^$' -bench FrameFanOut -benchtime 5x -cpu 1 ./actors
func BenchmarkFrameFanOut(b *testing.B) {
	const observers, perPlan = 100, 100
	hb := newHistoryBench(b, HistoryOptions{})
	tab := hb.tab(b, protocol.DefaultSubjects, hb.history, "/bench.html")
	agent := bustest.Connect(b, hb.bus, protocol.RoleAgent)
	subject := protocol.DefaultSubjects.TabFrames(tab.ID())
	type watcher struct {
		mu          sync.Mutex
		seen        map[int64]bool
		first, last time.Time
		done        chan struct{} // closed once it has the last frame
		closed      bool
	}
	// finish closes w.done when it has frame target; w.mu held.
	var target atomic.Int64
	target.Store(math.MaxInt64)
	finish := func(w *watcher) {
		if !w.closed && w.seen[target.Load()] {
			w.closed = true
			close(w.done)
		}
	}
	var from atomic.Int64
	from.Store(math.MaxInt64)
	ws := make([]*watcher, observers)
	for i := range ws {
		w := &watcher{seen: map[int64]bool{}, done: make(chan struct{})}
		ws[i] = w
		nc := bustest.Connect(b, hb.bus, protocol.RoleObserver)
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
			f, err := protocol.DecodeFrame(m.Data)
			if err != nil {
				return
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if f.Sequence < from.Load() {
				return // the tab's opening frames, still on their way
			}
			if len(w.seen) == 0 {
				w.first = time.Now()
			}
			w.seen[f.Sequence], w.last = true, time.Now()
			finish(w)
		})
		if err != nil {
			b.Fatal(err)
		}
		_ = sub.SetPendingLimits(-1, -1) // count loss on the wire, not in this process's buffer
		if err := nc.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	from.Store(tab.Info().Sequence + 1)
	data, _ := json.Marshal(evals(perPlan))
	b.ResetTimer()
	for range b.N {
		if _, err := agent.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	to := tab.Info().Sequence
	b.StopTimer()
	want := int(to - from.Load() + 1)
	target.Store(to)
	var rates []float64
	lost := 0
	// Frames come in order: the last one means all that will.
	wait, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	for _, w := range ws {
		w.mu.Lock()
		finish(w) // it may have had the last frame before target was set
		w.mu.Unlock()
		select {
		case <-w.done:
		case <-wait.Done():
		}
		w.mu.Lock()
		lost += want - len(w.seen)
		if span := w.last.Sub(w.first); span > 0 {
			rates = append(rates, float64(len(w.seen)-1)/span.Seconds())
		}
		w.mu.Unlock()
	}
	sort.Float64s(rates)
	if len(rates) > 0 {
		b.ReportMetric(rates[0], "slowest-observer-frames/s")
		b.ReportMetric(rates[len(rates)/2], "median-observer-frames/s")
	}
	b.ReportMetric(float64(want), "frames")
	b.ReportMetric(float64(lost), "lost")
}
