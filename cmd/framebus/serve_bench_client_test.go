package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

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

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// The serve bench client: this test binary started with
// serveBenchClientEnv set to a JSON serveBenchJob runs it instead of the
// tests and prints a serveBenchResult.
const serveBenchClientEnv = "FRAMEBUS_BENCH_SERVE_CLIENT"

type serveBenchJob struct {
	Kind                  string // serveBenchEval, serveBenchClick or serveBenchNavigate
	Creds                 string // the credentials file serve wrote
	Tab, BareTab, EchoTab string
	Page                  string // the bench page, where every tab starts
	Site                  string // testdata/site's URL, for navigate's pages
	Browser               string // the peer browser's DevTools websocket
	PeerTarget, RawTarget string // its tabs for chromedp and raw CDP
	N                     int
}

// serveBenchBlock is how many round trips a row makes in a row before
// the next takes its turn. Each iteration's rows interleaved one by one,
// the rows on the peer browser (bare, chromedp, raw) kept its processes
// busy three times as often as eval kept the node's browser, and on a
// loaded 2-core machine a process that ran a moment ago answers sooner
// than one that has to be woken: eval/raw measured 1.68 that way and
// 1.1-1.2 with eval's own rows run back to back. In blocks, every path
// runs as an agent's plans do when it sends them one after another, and
// the blocks still interleave, so noise over time hits all rows alike.
// A navigation is one visit at a time: each ends with its page's work
// done, and one takes milliseconds, not tenths of one.
const serveBenchBlock = 16

// serveBenchResult holds every round trip of each row, by name.
type serveBenchResult map[string][]time.Duration

// serveBenchRow is a row the client times: run does one round trip of
// it and tells keep each time it took (a navigation times its reply and
// its frame), under the row's name or another.
type serveBenchRow struct {
	name string
	run  func(keep func(row string, d time.Duration)) error
}

// timedRow is the row name whose round trip is all of f.
func timedRow(name string, f func() error) serveBenchRow {
	return serveBenchRow{name, func(keep func(string, time.Duration)) error {
		t0 := time.Now()
		if err := f(); err != nil {
			return err
		}
		keep(name, time.Since(t0))
		return nil
	}}
}

// runServeBenchClient is the bench client process's main.
func runServeBenchClient(jobJSON string) int {
	if err := serveBenchClient(jobJSON); err != nil {
		fmt.Fprintln(os.Stderr, "serve bench client:", err)
		return 1
	}
	return 0
}

// serveBenchPeers is the client's connections: to the node, and to the
// peer browser's tabs for chromedp and raw CDP.
type serveBenchPeers struct {
	job      serveBenchJob
	bc       *busclient.Client
	chromedp context.Context
	raw      *cdp.Client // on RawTarget
	rawPeer  *cdp.Client // on PeerTarget, for the eval rows
	visit    int         // navigate's visits so far, each to a URL of its own
}

func serveBenchClient(jobJSON string) error {
	var job serveBenchJob
	if err := json.Unmarshal([]byte(jobJSON), &job); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Minute))
	defer cancel()
	creds, err := busclient.ReadCredentials(job.Creds)
	if err != nil {
		return err
	}
	bc, err := busclient.Connect(ctx, busclient.Options{Credentials: &creds})
	if err != nil {
		return err
	}
	defer bc.Close()

	actx, cancelA := remote.NewAllocator(ctx, job.Browser)
	defer cancelA()
	cdctx, cancelC := chromedp.NewContext(actx, chromedp.WithTargetID(chromedptarget.ID(job.PeerTarget)))
	defer cancelC()
	ws, err := url.Parse(job.Browser)
	if err != nil {
		return err
	}
	dial := func(target string) (*cdp.Client, error) {
		conn, err := rpcc.DialContext(ctx, "ws://"+ws.Host+"/devtools/page/"+target)
		if err != nil {
			return nil, err
		}
		go func() { <-ctx.Done(); conn.Close() }()
		return cdp.NewClient(conn), nil
	}
	p := serveBenchPeers{job: job, bc: bc, chromedp: cdctx}
	if p.raw, err = dial(job.RawTarget); err != nil {
		return err
	}
	if p.rawPeer, err = dial(job.PeerTarget); err != nil {
		return err
	}
	if err := p.layOut(ctx); err != nil {
		return err
	}

	var rows []serveBenchRow
	block, warmup := serveBenchBlock, 200
	switch job.Kind {
	case serveBenchEval:
		rows, err = p.evalRows(ctx)
	case serveBenchClick:
		rows, err = p.clickRows(ctx)
	case serveBenchNavigate:
		rows, err = p.navigateRows(ctx)
		block, warmup = 1, 12
	default:
		err = fmt.Errorf("no bench kind %q", job.Kind)
	}
	if err != nil {
		return err
	}
	res := serveBenchResult{}
	keep := func(row string, d time.Duration) { res[row] = append(res[row], d) }
	skip := func(string, time.Duration) {}
	for i := -warmup; i < job.N; i += block {
		// The rows take turns in blocks, in an order of their own each
		// round (see serveBenchBlock).
		for _, r := range rand.Perm(len(rows)) {
			for j := i; j < i+block; j++ {
				k := keep
				if j < 0 || j >= job.N {
					k = skip
				}
				if err := rows[r].run(k); err != nil {
					return fmt.Errorf("%s: %w", rows[r].name, err)
				}
			}
		}
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return nil
}

// layOut brings the node's tab to the bench page and gives the peer's
// tabs the node's viewport; all three must be shown (a tab hidden in its
// window is neither laid out nor painted while it loads, which says
// nothing about a tab an agent uses).
func (p *serveBenchPeers) layOut(ctx context.Context) error {
	nav, err := p.bc.Plan(ctx, p.job.Tab, protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: p.job.Page, Wait: true}})
	if err != nil || !nav.OK {
		return fmt.Errorf("navigate to %s: %v %+v", p.job.Page, err, nav)
	}
	vp := protocol.DefaultViewport
	if err := p.raw.Emulation.SetDeviceMetricsOverride(ctx, emulation.NewSetDeviceMetricsOverrideArgs(vp.Width, vp.Height, vp.DeviceScaleFactor, false)); err != nil {
		return err
	}
	if err := chromedp.Do(p.chromedp, chromedp.EmulateViewport(int64(vp.Width), int64(vp.Height))); err != nil { // attaches
		return err
	}
	const shownJS = `document.visibilityState + " " + innerWidth + "x" + innerHeight`
	want := fmt.Sprintf("visible %dx%d", vp.Width, vp.Height)
	node, err := p.bc.Plan(ctx, p.job.Tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: shownJS}})
	if err != nil || !node.OK || string(node.Results[0].Value) != strconv.Quote(want) {
		return fmt.Errorf("the node's tab: %v %+v, want %q", err, node, want)
	}
	peer, err := chromedp.Run(p.chromedp, chromedp.Evaluate[string](shownJS))
	if err != nil || peer != want {
		return fmt.Errorf("chromedp's tab: %q %v, want %q", peer, err, want)
	}
	raw, err := rawString(ctx, p.raw, shownJS)
	if err != nil || raw != want {
		return fmt.Errorf("raw's tab: %q %v, want %q", raw, err, want)
	}
	bare, err := p.bc.Plan(ctx, p.job.BareTab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: shownJS}})
	if err != nil || !bare.OK || string(bare.Results[0].Value) != strconv.Quote(want) {
		return fmt.Errorf("the bare responder's tab: %v %+v, want %q", err, bare, want)
	}
	return nil
}

// rawString evaluates a string expression on a raw client.
func rawString(ctx context.Context, c *cdp.Client, js string) (string, error) {
	r, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(js).SetReturnByValue(true))
	if err != nil {
		return "", err
	}
	if r.ExceptionDetails != nil {
		return "", fmt.Errorf("%s: %s", js, r.ExceptionDetails.Text)
	}
	var s string
	return s, json.Unmarshal(r.Result.Value, &s)
}

// evalRows are BenchmarkServeEval's.
func (p *serveBenchPeers) evalRows(ctx context.Context) ([]serveBenchRow, error) {
	job, bc := p.job, p.bc
	plan := protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}}
	sendTo := func(tab string) func() error {
		return func() error {
			res, err := bc.Plan(ctx, tab, plan)
			if err == nil && (!res.OK || string(res.Results[0].Value) != "2") {
				err = fmt.Errorf("plan eval 1+1 to %s: %+v", tab, res)
			}
			return err
		}
	}
	// The echo's plan as Plan sends it (with an id), for a plain request.
	planData, _ := protocol.Marshal(protocol.Plan{ID: busclient.NewPlanID(), Action: plan.Action})
	urlPlan := protocol.Plan{Action: &protocol.Action{Type: "url"}}
	return []serveBenchRow{
		timedRow("eval", sendTo(job.Tab)),
		timedRow("url", func() error {
			res, err := bc.Plan(ctx, job.Tab, urlPlan)
			if err == nil && (!res.OK || string(res.Results[0].Value) != strconv.Quote(job.Page)) {
				err = fmt.Errorf("plan url: %+v", res)
			}
			return err
		}),
		timedRow("bare", sendTo(job.BareTab)),
		timedRow("echo", sendTo(job.EchoTab)),
		timedRow("echo-nats", func() error {
			_, err := bc.Conn().Request(bc.Subjects().TabPlan(job.EchoTab), planData, 10*time.Second)
			return err
		}),
		timedRow("chromedp", func() error {
			v, err := chromedp.Run(p.chromedp, chromedp.Evaluate[int]("1+1"))
			if err == nil && v != 2 {
				err = fmt.Errorf("chromedp evaluate 1+1: %d", v)
			}
			return err
		}),
		timedRow("raw", func() error {
			r, err := p.rawPeer.Runtime.Evaluate(ctx, cdpdriver.EvalArgs("1+1", 30*time.Second))
			if err == nil && (r.Result.DeepSerializedValue == nil || string(r.Result.DeepSerializedValue.Value) != "2") {
				err = fmt.Errorf("raw evaluate: %+v", r)
			}
			return err
		}),
	}, nil
}

// clickRows are BenchmarkServeClick's, all on bench.html's #count.
func (p *serveBenchPeers) clickRows(ctx context.Context) ([]serveBenchRow, error) {
	job, bc := p.job, p.bc
	const sel = "#count"
	var seq int64 // the node's tab's last frame, which the next click is based on
	click := func(tab string, guard bool) func() error {
		return func() error {
			a := protocol.Action{Type: "click", Selector: sel}
			if guard {
				a.BasedOnSequence = protocol.Based(seq)
			}
			res, err := bc.Plan(ctx, tab, protocol.Plan{Action: &a})
			if err == nil && (!res.OK || !res.Results[0].OK) {
				err = fmt.Errorf("plan click to %s: %+v", tab, res)
			}
			if guard {
				seq = res.Sequence
			}
			return err
		}
	}
	first, err := bc.Plan(ctx, job.Tab, protocol.Plan{Action: &protocol.Action{Type: "click", Selector: sel}})
	if err != nil || !first.OK {
		return nil, fmt.Errorf("first click: %v %+v", err, first)
	}
	seq = first.Sequence
	return []serveBenchRow{
		timedRow("click", click(job.Tab, true)),
		timedRow("bare", click(job.BareTab, false)),
		timedRow("echo", func() error {
			_, err := bc.Plan(ctx, job.EchoTab, protocol.Plan{Action: &protocol.Action{Type: "click", Selector: sel}})
			return err
		}),
		timedRow("raw", func() error { return rawClick(ctx, p.raw, sel) }),
		timedRow("chromedp", func() error { return chromedp.Do(p.chromedp, chromedp.Click(chromedp.CSS(sel))) }),
	}, nil
}

// rawClick is the least raw CDP that clicks the element sel finds, as
// actors' BenchmarkInput times it: resolve it, read its box, press and
// release at its centre, each awaited.
func rawClick(ctx context.Context, c *cdp.Client, sel string) error {
	r, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs("document.querySelector("+strconv.Quote(sel)+")"))
	if err != nil {
		return err
	}
	if r.Result.ObjectID == nil {
		return fmt.Errorf("no element %s", sel)
	}
	box, err := c.DOM.GetBoxModel(ctx, &dom.GetBoxModelArgs{ObjectID: r.Result.ObjectID})
	if err != nil {
		return err
	}
	q := box.Model.Content
	x, y := (q[0]+q[4])/2, (q[1]+q[5])/2
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		ev := input.NewDispatchMouseEventArgs(typ, x, y).SetButton(input.MouseButtonLeft).SetClickCount(1)
		if err := c.Input.DispatchMouseEvent(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

// navigateRows are BenchmarkServeNavigate's: each path on the small page
// and on the table.
func (p *serveBenchPeers) navigateRows(ctx context.Context) ([]serveBenchRow, error) {
	job, bc := p.job, p.bc
	watch, err := bc.Watch(ctx, job.Tab, busclient.FromNext)
	if err != nil {
		return nil, err
	}
	raw, err := rawNavigator(ctx, p.raw)
	if err != nil {
		return nil, err
	}
	visit := func(path string) string {
		p.visit++
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		return job.Site + path + sep + "visit=" + strconv.Itoa(p.visit)
	}
	// inPage is how long the page itself took to load, from the start of
	// its navigation to the end of its load event, as the page tells:
	// what is left of a path's time is the driver's own. It is read once
	// the path's time is taken (in the node's tab by a plan: an eval,
	// whose frame is of no consequence here).
	const loadJS = `String(performance.timing.loadEventEnd - performance.timing.navigationStart)`
	inPage := func(read func() (string, error)) (time.Duration, error) {
		v, err := read()
		n, cerr := strconv.Atoi(v)
		if err != nil || cerr != nil || n <= 0 {
			return 0, fmt.Errorf("load time %q: %v", v, err)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	planRead := func(tab string) func() (string, error) {
		return func() (string, error) {
			res, err := bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: loadJS}})
			if err != nil || !res.OK {
				return "", fmt.Errorf("%v %+v", err, res)
			}
			var s string
			return s, json.Unmarshal(res.Results[0].Value, &s)
		}
	}
	var rows []serveBenchRow
	for _, page := range []struct{ name, path string }{{"small", "/"}, {"table", "/table.html"}} {
		// keepOutside keeps d, less the page's own load, as the path's
		// outside-page time.
		keepOutside := func(keep func(string, time.Duration), path string, d time.Duration, read func() (string, error)) error {
			load, err := inPage(read)
			if err != nil {
				return err
			}
			keep(page.name+"-"+path+"-outside-page", d-load)
			keep(page.name+"-"+path+"-in-page", load)
			return nil
		}
		// navigate --wait to tab: the reply's time, and its answer.
		navigate := func(tab, u string) (time.Duration, protocol.PlanResult, error) {
			t0 := time.Now()
			res, err := bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: u, Wait: true}})
			d := time.Since(t0)
			if err == nil && (!res.OK || res.Results[0].URL != u || res.Results[0].Title == "") {
				err = fmt.Errorf("navigate %s: %+v", u, res)
			}
			return d, res, err
		}
		rows = append(rows,
			serveBenchRow{page.name + "-navigate", func(keep func(string, time.Duration)) error {
				t0 := time.Now()
				reply, res, err := navigate(job.Tab, visit(page.path))
				if err != nil {
					return err
				}
				at, err := contentAt(ctx, watch, res.Sequence)
				if err != nil {
					return err
				}
				keep(page.name+"-navigate", reply)
				keep(page.name+"-frame", at.Sub(t0))
				return keepOutside(keep, "navigate", reply, planRead(job.Tab))
			}},
			serveBenchRow{page.name + "-bare", func(keep func(string, time.Duration)) error {
				reply, _, err := navigate(job.BareTab, visit(page.path))
				if err != nil {
					return err
				}
				keep(page.name+"-bare", reply)
				return keepOutside(keep, "bare", reply, planRead(job.BareTab))
			}},
			serveBenchRow{page.name + "-chromedp", func(keep func(string, time.Duration)) error {
				t0 := time.Now()
				if err := chromedp.Do(p.chromedp, chromedp.Navigate(visit(page.path))); err != nil {
					return err
				}
				d := time.Since(t0)
				keep(page.name+"-chromedp", d)
				// Its first read, which the load time is.
				return keepOutside(keep, "chromedp", d, func() (string, error) { return chromedp.Run(p.chromedp, chromedp.Evaluate[string](loadJS)) })
			}},
			serveBenchRow{page.name + "-chromedp-title", func(keep func(string, time.Duration)) error {
				t0 := time.Now()
				if err := chromedp.Do(p.chromedp, chromedp.Navigate(visit(page.path))); err != nil {
					return err
				}
				title, err := chromedp.Run(p.chromedp, chromedp.Title())
				if err != nil || title == "" {
					return fmt.Errorf("chromedp title %q: %v", title, err)
				}
				keep(page.name+"-chromedp-title", time.Since(t0))
				return nil
			}},
			serveBenchRow{page.name + "-raw", func(keep func(string, time.Duration)) error {
				t0 := time.Now()
				if err := raw(visit(page.path)); err != nil {
					return err
				}
				d := time.Since(t0)
				keep(page.name+"-raw", d)
				return keepOutside(keep, "raw", d, func() (string, error) { return rawString(ctx, p.raw, loadJS) })
			}},
		)
	}
	return rows, nil
}

// contentAt waits for the watch's frame seq and returns when it came; it
// must carry the page's content.
func contentAt(ctx context.Context, w *busclient.Watcher, seq int64) (time.Time, error) {
	for {
		select {
		case f, ok := <-w.Frames():
			if !ok {
				return time.Time{}, fmt.Errorf("watch ended waiting for frame %d: %v", seq, w.Err())
			}
			if f.Sequence < seq {
				continue
			}
			if f.Sequence > seq || f.FullPage == nil {
				return time.Time{}, fmt.Errorf("frame %d (content %v), waiting for frame %d with content", f.Sequence, f.FullPage != nil, seq)
			}
			return time.Now(), nil
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("frame %d: %w", seq, ctx.Err())
		}
	}
}

// rawNavigator returns a raw-CDP navigate+load on c's page: Page.navigate,
// then the main frame's lifecycle load of the document it commits (what
// the node's navigate --wait waits for; Page.loadEventFired comes later
// on a page that takes long to paint), as actors' BenchmarkNavigate's
// floor.
func rawNavigator(ctx context.Context, c *cdp.Client) (func(url string) error, error) {
	events, err := c.Page.LifecycleEvent(ctx) // before Page.enable
	if err != nil {
		return nil, err
	}
	go func() { <-ctx.Done(); events.Close() }()
	if err := c.Page.Enable(ctx); err != nil {
		return nil, err
	}
	if err := c.Page.SetLifecycleEventsEnabled(ctx, page.NewSetLifecycleEventsEnabledArgs(true)); err != nil {
		return nil, err
	}
	return func(url string) error {
		r, err := c.Page.Navigate(ctx, page.NewNavigateArgs(url))
		if err != nil {
			return err
		}
		if r.ErrorText != nil || r.LoaderID == nil {
			return fmt.Errorf("raw navigate %s: %+v", url, r)
		}
		for {
			e, err := events.Recv()
			if err != nil {
				return err
			}
			if e.Name == "load" && e.LoaderID == *r.LoaderID && e.FrameID == r.FrameID {
				return nil
			}
		}
	}, nil
}
