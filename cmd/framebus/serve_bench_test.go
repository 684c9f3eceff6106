package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/benchkit"
	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// BenchmarkServeEval measures eval 1+1 on the node users run: `framebus
// serve` with its defaults (the real binary; the browser under its own
// account with its sandbox when run as root, the frame history in
// memory, GOMAXPROCS half the CPUs), reached from a client process of its
// own (this test binary run as one, see serveBenchClient) that logs in
// over TCP with the credentials file serve wrote and sends plans through
// bus/client, as the CLI, the MCP server and Go agents do.
//
// The client times these rows, in blocks of serveBenchBlock round trips
// that take turns in an order shuffled every round (so that no row always
// follows another and pays for what that one left running):
//
//   - eval: the one-action eval 1+1 plan to the node's tab;
//   - url: a url plan to it (no CDP call, no frame: the bus and the tab
//     actor alone);
//   - bare: the eval plan, sent the same way (bus/client's Plan, the same
//     user, account and service import of the tabs' plan subjects), to a
//     bare responder on the plan subject of a tab that does not exist. It
//     runs in this process, logged in over TCP with the admin credentials
//     serve wrote (so in the node's account, as the node's connection is),
//     and does the least a plan service on NATS does: decode, evaluate
//     through cdpdriver on a page of a browser launched as serve launches
//     its own, encode, reply. It is the floor of eval; its responder's side
//     crosses TCP where the node's crosses an in-process connection, so
//     it is, if anything, a little high;
//   - echo: the same to a responder that answers without evaluating (the
//     floor of url), and echo-nats: that echo as a plain NATS request on
//     the client's connection, without bus/client's plan handling;
//   - chromedp: chromedp's Evaluate of 1+1 on a tab of that same browser
//     over its DevTools websocket (the peer), and raw: the Runtime.evaluate
//     the driver sends, on a plain mafredri/cdp websocket to that tab.
//
// It reports p50 and p90 per row and the ratios eval/bare (the target is
// at most 1.05), eval/chromedp, eval/raw, bare/chromedp, url/echo and
// echo/echo-nats (what bus/client's Plan adds to a request).
//
// $FRAMEBUS_BENCH_SERVE_ENV adds environment variables (space-separated
// NAME=VALUE) to serve's, to measure the node otherwise:
// FRAMEBUS_BROWSER_USER=root, GOMAXPROCS=2, FRAMEBUS_CONFIG=a file that
// sets history.storage off.
func BenchmarkServeEval(b *testing.B) {
	res := runServeBench(b, serveBenchEval, "/")
	reportServeRows(b, res, "eval", "url", "bare", "echo", "echo-nats", "chromedp", "raw")
	reportServeRatio(b, res, "eval", "bare")
	reportServeRatio(b, res, "eval", "chromedp")
	reportServeRatio(b, res, "eval", "raw")
	reportServeRatio(b, res, "bare", "chromedp")
	reportServeRatio(b, res, "url", "echo")
	reportServeRatio(b, res, "echo", "echo-nats")
}

// BenchmarkServeClick measures a click on the node users run, laid out
// as BenchmarkServeEval (serve with its defaults, the client a process of
// its own with the credentials file, the rows in shuffled blocks), on
// testdata/site/bench.html's button, where the mouse already is:
//
//   - click: a one-action click plan to the node's tab, based on the
//     frame the last one made, as an agent plans (locate and hit test,
//     press, release, a renderer round trip to settle, one frame);
//   - raw: the least raw CDP that clicks the element, as actors'
//     BenchmarkInput times it (Runtime.evaluate to resolve it,
//     DOM.getBoxModel, mousePressed and mouseReleased at its centre, each
//     awaited), from the client process on a mafredri/cdp websocket to a
//     tab of its own at the same page in the peer browser (serve's
//     browser speaks over a pipe no other process can share);
//   - bare: the click plan to the bare responder, which does what a plan
//     service must to answer a click as the node does: cdpdriver's click
//     (hit test included) and the settling round trip (bareAction); the
//     floor of click;
//   - echo: the click plan to the echo responder (the bus's share);
//   - chromedp: chromedp's Click on its tab of the peer browser (the peer).
//
// It reports p50 and p90 per row and the ratios click/raw (the standing
// target was at most 0.9), click/bare (what the node adds to its floor),
// bare/raw, echo/raw and click/chromedp.
func BenchmarkServeClick(b *testing.B) {
	res := runServeBench(b, serveBenchClick, "/bench.html")
	reportServeRows(b, res, "click", "raw", "bare", "echo", "chromedp")
	reportServeRatio(b, res, "click", "raw")
	reportServeRatio(b, res, "click", "bare")
	reportServeRatio(b, res, "bare", "raw")
	reportServeRatio(b, res, "echo", "raw")
	reportServeRatio(b, res, "click", "chromedp")
}

// BenchmarkServeNavigate measures navigate+load on the node users run,
// laid out as BenchmarkServeEval, on a small page (testdata/site's
// index.html) and on a table of 1,000 rows a script builds
// (table.html), each visit at a URL of its own so that every frame
// carries the page's content:
//
//   - navigate: a one-action `navigate --wait` plan to the node's tab, as
//     the CLI sends it, timed to its reply (the new frame's sequence, URL
//     and the loaded page's title); frame is when the client's watch of
//     the tab had that frame with its content;
//   - bare: the same plan to the bare responder, which navigates with
//     cdpdriver on its tab of the peer browser, waits for the load and
//     reads the title as the node does (bareAction): the floor of
//     navigate;
//   - chromedp: chromedp.Navigate on its tab of the peer browser (the
//     peer), which answers no title; chromedp-title: chromedp.Navigate
//     then chromedp.Title, what it takes chromedp to answer what the
//     node's reply says;
//   - raw: Page.navigate and the main frame's lifecycle load on a
//     mafredri/cdp websocket to a tab of its own.
//
// Every path ends with its page's post-load work done (the node's with
// its frame's content, the others with a first read of the page,
// untimed), so none leaves it running beside the next; they take turns
// one visit at a time in an order shuffled every round. The four tabs
// are shown and laid out at the default viewport alike. Each path's time
// is also split at the page's own load time (navigationStart to the end
// of its load event, as the page tells): *-in-page and *-outside-page,
// the driver's share.
//
// It reports p50 and p90 per row and the ratios navigate/chromedp (the
// standing target was at most 1.05), navigate/bare (what the node adds
// to its floor), bare/chromedp, navigate/chromedp-title, navigate/raw and
// chromedp/raw, per page, and the outside-page ones of navigate to bare
// and to chromedp.
func BenchmarkServeNavigate(b *testing.B) {
	res := runServeBench(b, serveBenchNavigate, "/")
	b.ReportMetric(0, "ns/op") // the medians say more
	for _, page := range []string{"small", "table"} {
		reportServeRows(b, res, page+"-navigate", page+"-frame", page+"-bare", page+"-chromedp", page+"-chromedp-title", page+"-raw")
		reportServeRatio(b, res, page+"-navigate", page+"-chromedp")
		reportServeRatio(b, res, page+"-navigate", page+"-bare")
		reportServeRatio(b, res, page+"-bare", page+"-chromedp")
		reportServeRatio(b, res, page+"-navigate", page+"-chromedp-title")
		reportServeRatio(b, res, page+"-navigate", page+"-raw")
		reportServeRatio(b, res, page+"-chromedp", page+"-raw")
		for _, path := range []string{"navigate", "bare", "chromedp", "raw"} {
			reportServeRows(b, res, page+"-"+path+"-outside-page", page+"-"+path+"-in-page")
		}
		// The drivers' shares alone: the pages' own load times differ
		// from browser to browser, and the node's is not the peer's.
		reportServeRatio(b, res, page+"-navigate-outside-page", page+"-bare-outside-page")
		reportServeRatio(b, res, page+"-navigate-outside-page", page+"-chromedp-outside-page")
	}
}

// The serve benchmarks' kinds of work.
const (
	serveBenchEval     = "eval"
	serveBenchClick    = "click"
	serveBenchNavigate = "navigate"
)

// runServeBench starts serve (with $FRAMEBUS_BENCH_SERVE_ENV), the peer
// browser at path and the bare responder, runs the bench client process
// for kind and returns the rows it timed.
func runServeBench(b *testing.B, kind, path string) serveBenchResult {
	bin, err := plainBinary()
	if err != nil {
		b.Fatal(err)
	}
	n := startNodeOf(b, bin, strings.Fields(os.Getenv("FRAMEBUS_BENCH_SERVE_ENV"))...)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Minute))
	defer cancel()
	dir := filepath.Dir(n.stateFile)
	page := site(path)

	peer := launchPeerBrowser(b, ctx, page)
	bare := startBareResponder(b, ctx, filepath.Join(dir, serving.AdminCredsFile), peer.page)

	job, _ := json.Marshal(serveBenchJob{Kind: kind, Creds: filepath.Join(dir, serving.AgentCredsFile), Tab: n.tab(), Page: page, Site: site(""),
		BareTab: bare.tab, EchoTab: bare.echoTab,
		Browser: peer.process.BrowserWebSocketURL(), PeerTarget: peer.chromedpTarget, RawTarget: peer.rawTarget, N: b.N})
	cmd := testchild.DieWithTest(exec.CommandContext(ctx, os.Args[0], "-test.run=^$"))
	cmd.Env = append(os.Environ(), serveBenchClientEnv+"="+string(job))
	cmd.Stderr = os.Stderr
	b.ResetTimer()
	out, err := cmd.Output()
	b.StopTimer()
	if err != nil {
		b.Fatalf("bench client: %v", err)
	}
	var res serveBenchResult
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("bench client said %q: %v", out, err)
	}
	return res
}

// reportServeRows reports each row's p50 and p90.
func reportServeRows(b *testing.B, res serveBenchResult, rows ...string) {
	for _, row := range rows {
		d := res[row]
		if len(d) == 0 {
			b.Fatalf("row %s: no times", row)
		}
		b.ReportMetric(float64(benchkit.P50(d).Microseconds()), row+"-p50-µs")
		b.ReportMetric(float64(benchkit.Percentile(d, 90).Microseconds()), row+"-p90-µs")
	}
}

// reportServeRatio reports row a's p50 over row b's as "a/b".
func reportServeRatio(b *testing.B, res serveBenchResult, x, y string) {
	b.ReportMetric(float64(benchkit.P50(res[x]))/float64(benchkit.P50(res[y])), x+"/"+y)
}

// peerBrowser is a Chromium launched as serve launches its own (its
// account and sandbox when root, headless), with a DevTools port besides
// for the client process, and three tabs at the bench page: one driven
// through the pipe by cdpdriver (the bare responder's), one left to
// chromedp and one to raw CDP (the eval rows' raw evaluations share
// chromedp's).
type peerBrowser struct {
	process                   *cdpdriver.Process
	page                      *cdpdriver.Page
	chromedpTarget, rawTarget string
}

func launchPeerBrowser(b *testing.B, ctx context.Context, url string) peerBrowser {
	chromium, err := cdpdriver.FindChromium()
	if err != nil {
		b.Fatal(err)
	}
	p, err := cdpdriver.Launch(ctx, cdpdriver.LaunchOptions{Binary: chromium, Headless: true, DebuggingPort: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	br, err := p.Connect(ctx, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = br.Close() })
	br.OwnWindows() // as a node opens its tabs
	var targets [3]string
	for i := range targets {
		if targets[i], err = br.NewTarget(ctx, url); err != nil {
			b.Fatal(err)
		}
	}
	page, err := br.ConnectPage(ctx, targets[0], zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = page.Close() })
	vp := protocol.DefaultViewport // as the node's tab, and the client's
	if _, err := page.Emulate(ctx, cdpdriver.Emulation{Width: vp.Width, Height: vp.Height, DeviceScaleFactor: vp.DeviceScaleFactor}); err != nil {
		b.Fatal(err)
	}
	return peerBrowser{process: p, page: page, chromedpTarget: targets[1], rawTarget: targets[2]}
}

// bareResponder answers plans on the plan subjects of two tabs that do not
// exist: tab by doing the plan's one action on its page (bareAction),
// echoTab without doing anything.
type bareResponder struct{ tab, echoTab string }

func startBareResponder(b *testing.B, ctx context.Context, adminCreds string, page *cdpdriver.Page) bareResponder {
	creds, err := serving.ReadCredentials(adminCreds)
	if err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(creds.URL, nats.UserInfo(creds.User, creds.Password))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	r := bareResponder{tab: "BENCH_BARE", echoTab: "BENCH_ECHO"}
	reply := func(m *nats.Msg, ar protocol.ActionResult, err error) {
		ar.OK = err == nil
		if err != nil {
			ar.Error = err.Error()
		}
		data, _ := protocol.Marshal(protocol.PlanResult{OK: err == nil, Version: protocol.Version, Executed: 1, Results: []protocol.ActionResult{ar}})
		_ = m.Respond(data)
	}
	// A plain subscription's handler runs on one goroutine, in order, as
	// a tab takes its plans.
	if _, err := nc.Subscribe(protocol.DefaultSubjects.TabPlan(r.tab), func(m *nats.Msg) {
		plan, err := protocol.DecodePlan(m.Data)
		if err != nil {
			reply(m, protocol.ActionResult{}, err)
			return
		}
		ar, err := bareAction(ctx, page, plan.Actions[0])
		reply(m, ar, err)
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := nc.Subscribe(protocol.DefaultSubjects.TabPlan(r.echoTab), func(m *nats.Msg) {
		plan, err := protocol.DecodePlan(m.Data)
		ar := protocol.ActionResult{Value: json.RawMessage("2")}
		if err == nil {
			ar.Type = plan.Actions[0].Type
		}
		reply(m, ar, err)
	}); err != nil {
		b.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	return r
}

// bareAction does the least a plan service must do for the action a node
// does on its tab, with cdpdriver on the page as the node would:
//
//   - eval: the evaluation;
//   - click: the click (locate and hit test, press, release), then one
//     renderer round trip, as the node settles a click: without it a
//     navigation the click started may not have been reported yet;
//   - navigate (with wait): Page.navigate, the main frame's lifecycle
//     load of its document, then the title as the browser has it (the
//     node's reply carries the loaded page's title, and the browser
//     reports none before the load; see the node's settle).
func bareAction(ctx context.Context, page *cdpdriver.Page, a protocol.Action) (protocol.ActionResult, error) {
	ar := protocol.ActionResult{Type: a.Type}
	switch a.Type {
	case "click":
		if err := page.Click(ctx, a.Selector, cdpdriver.ClickOptions{}); err != nil {
			return ar, err
		}
		url, title, err := page.Location(ctx)
		ar.URL, ar.Title = url, title
		return ar, err
	case "navigate":
		page.TakeEvents() // what came before is not this navigation's
		nav, err := page.Navigate(ctx, a.URL)
		if err != nil {
			return ar, err
		}
		for loaded := false; !loaded; {
			select {
			case <-page.Notify():
				for _, ev := range page.TakeEvents() {
					if l, ok := ev.(cdpdriver.Lifecycle); ok && l.Main && l.Name == "load" && l.LoaderID == nav.LoaderID {
						loaded = true
					}
				}
			case <-ctx.Done():
				return ar, ctx.Err()
			}
		}
		loc, err := page.BrowserLocation(ctx)
		ar.URL, ar.Title = loc.URL, loc.Title
		return ar, err
	default:
		v, err := page.Eval(ctx, a.Expression, a.EffectiveTimeout())
		ar.Value = v
		return ar, err
	}
}
