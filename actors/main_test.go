package actors

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// The tests share one bus, one Chromium and one site, as chromedp's do;
// each test opens its own tab.
var (
	testBus     *bus.Bus
	testConn    *nats.Conn
	testBrowser *Browser
	testSite    *httptest.Server
)

func TestMain(m *testing.M) {
	if job := os.Getenv(benchClientEnv); job != "" {
		os.Exit(runBenchClient(job))
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	var err error
	testBus, err = bus.Start(bus.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start bus:", err)
		return 1
	}
	defer testBus.Close()
	if testConn, err = testBus.Connect("actors-test"); err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	// Benchmarks compare the pipe with a websocket, and the bench client
	// process and chromedp cannot share the node's pipe: while they run,
	// the shared browser also has a DevTools port (benchPageWebSocket).
	flag.Parse()
	bench := flag.Lookup("test.bench").Value.String() != ""
	testBrowser, err = StartBrowser(ctx, cdpdriver.LaunchOptions{Headless: true, DebuggingPort: bench}, zerolog.Nop())
	if err != nil {
		fmt.Fprintln(os.Stderr, "launch chromium:", err)
		return 1
	}
	defer testBrowser.Close()
	testSite = httptest.NewServer(siteHandler())
	defer testSite.Close()
	return m.Run()
}

func siteHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("../testdata/site")))
	mux.HandleFunc("/no-content", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="data.bin"`)
		w.Header().Set("Content-Type", "application/octet-stream")
		fmt.Fprint(w, "data")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "<title>slow</title>slow")
	})
	// /status?code=N answers a page with HTTP status N.
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		if err != nil {
			code = http.StatusBadRequest
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(code)
		fmt.Fprintf(w, "<title>Status %d</title><h1>%d %s</h1><a id=home href=/>home</a>", code, code, http.StatusText(code))
	})
	// /redirect?to=URL answers 302 to URL.
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	// /api/data answers a JSON object, after ?delay= (a Go duration) if given.
	mux.HandleFunc("/api/data", func(w http.ResponseWriter, r *http.Request) {
		if d, err := time.ParseDuration(r.URL.Query().Get("delay")); err == nil {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, `{"data": "fetched", "count": 42}`)
	})
	// /api/longpoll holds the request open for 60s unless the client goes away.
	mux.HandleFunc("/api/longpoll", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(60 * time.Second):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, "done")
	})
	// /api/events is an event stream that sends one message and stays open
	// (60s at most) until the client goes away.
	mux.HandleFunc("/api/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, "retry: 60000\ndata: hello\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-time.After(60 * time.Second):
		case <-r.Context().Done():
		}
	})
	// /slow-image?delay=D answers a 1x1 SVG after D (a Go duration, 60s
	// when absent), or never if the client goes away first: a subresource
	// that holds back the load event.
	mux.HandleFunc("/slow-image", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get("delay"))
		if err != nil {
			d = 60 * time.Second
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>`)
	})
	// /rows.html?n=N is a table of N rows, each with a link, a button, a
	// text input and text: cdpdriver's snapshot benchmark page.
	mux.HandleFunc("/rows.html", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 0 {
			http.Error(w, "bad n", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Rows</title></head><body>
<h1>Orders</h1>
<table><caption>Orders</caption>
<thead><tr><th>Order</th><th>Customer</th><th>Action</th><th>Note</th></tr></thead>
<tbody>
`)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(w, `<tr><td><a href="/orders/%d">Order %d</a></td><td>Customer number %d placed this order</td>`+
				`<td><button type="button" data-testid="cancel-%d">Cancel</button></td>`+
				`<td><input name="note-%d" aria-label="Note for order %d"></td></tr>
`, i, i, i, i, i, i)
		}
		fmt.Fprint(w, "</tbody></table></body></html>\n")
	})
	// /api/cached.js is a script cacheable for an hour that records when it
	// was served: only a reload that bypasses the cache changes the value.
	mux.HandleFunc("/api/cached.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("Cache-Control", "max-age=3600")
		fmt.Fprintf(w, "window.servedAt = %q;\n", fmt.Sprint(time.Now().UnixNano()))
	})
	return mux
}

// openTab opens a fresh tab with its actor, closed when the test ends.
func openTab(t *testing.T, opts ...func(*TabOptions)) *Tab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	page, err := testBrowser.OpenPage(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	o := TabOptions{ID: page.TargetID(), Page: page, Conn: testConn, Subjects: protocol.DefaultSubjects, StageReader: testBrowser.Process().User()}
	for _, f := range opts {
		f(&o)
	}
	tab, err := StartTab(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tab.Stop()
		_ = testBrowser.ClosePage(context.Background(), page)
	})
	return tab
}

// tabAt opens a tab, watches its frames and navigates it to a test page,
// returning the frame it is at.
func tabAt(t *testing.T, path string, opts ...func(*TabOptions)) (*Tab, *frameWatch, int64) {
	t.Helper()
	tab := openTab(t, opts...)
	frames := watchFrames(t, testConn, protocol.DefaultSubjects.TabFrames(tab.ID()))
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site(path)}))
	if !res.OK {
		t.Fatalf("navigate %s: %+v", path, res)
	}
	frames.until(res.Sequence)
	return tab, frames, res.Sequence
}

// startTestNode starts a node of its own (bus, browser, tab), headless
// unless opts say otherwise, closed when the test ends.
func startTestNode(t *testing.T, opts NodeOptions) *Node {
	t.Helper()
	opts.Launch.Headless = true
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	node, err := StartNode(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	return node
}

// autoDialogs makes a tab answer JavaScript dialogs at once (accept).
func autoDialogs(o *TabOptions) { o.DialogTimeout = -1 }

// site returns the URL of a test page.
func site(path string) string { return testSite.URL + path }

// send submits a plan (any JSON-encodable value or raw bytes) and decodes the reply.
func send(t *testing.T, tab string, plan any) protocol.PlanResult {
	t.Helper()
	res, err := request(testConn, tab, plan)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// request is send on a connection of the caller's, for goroutines (which
// must not call t.Fatal).
func request(nc *nats.Conn, tab string, plan any) (protocol.PlanResult, error) {
	data, ok := plan.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(plan); err != nil {
			return protocol.PlanResult{}, err
		}
	}
	msg, err := nc.Request(protocol.DefaultSubjects.TabPlan(tab), data, testscale.D(60*time.Second))
	if err != nil {
		return protocol.PlanResult{}, fmt.Errorf("plan %s: %v", data, err)
	}
	return protocol.DecodePlanResult(msg.Data)
}

// one is a single-action plan.
func one(a protocol.Action) protocol.Plan { return protocol.Plan{Action: &a} }

// frameWatch collects a tab's frames from the bus.
type frameWatch struct {
	t  *testing.T
	ch chan *nats.Msg
}

func watchFrames(t *testing.T, nc *nats.Conn, subject string) *frameWatch {
	t.Helper()
	ch := make(chan *nats.Msg, 4096)
	sub, err := nc.ChanSubscribe(subject, ch)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return &frameWatch{t: t, ch: ch}
}

// next waits for the next frame.
func (w *frameWatch) next() protocol.Frame {
	w.t.Helper()
	select {
	case m := <-w.ch:
		f, err := protocol.DecodeFrame(m.Data)
		if err != nil {
			w.t.Fatal(err)
		}
		return f
	case <-time.After(testscale.D(30 * time.Second)):
		w.t.Fatal("no frame within", testscale.D(30*time.Second))
	}
	return protocol.Frame{}
}

// until returns the first frame with the given sequence, failing on a gap.
func (w *frameWatch) until(seq int64) protocol.Frame {
	w.t.Helper()
	for {
		f := w.next()
		if f.Sequence == seq {
			return f
		}
		if f.Sequence > seq {
			w.t.Fatalf("frames skipped past %d to %d", seq, f.Sequence)
		}
	}
}
