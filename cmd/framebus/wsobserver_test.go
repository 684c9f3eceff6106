package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// The WebSocket listener is for browser-based observers, so a browser is
// one: testdata/wsobserver/observer.html runs nats.ws (the NATS project's
// WebSocket client, from npm) in real headless Chromium and logs in with
// an observer credential. The browser is a Chromium of its own, not a tab
// of the node's: a dashboard runs in its user's browser, outside the node,
// and a node's browser under a whitelist would not reach loopback at all.

// wsObserverDir holds the observer page and its npm package.
const wsObserverDir = "../../testdata/wsobserver"

// observerBrowser is a headless Chromium and the loopback server of the
// observer page.
type observerBrowser struct {
	site    *httptest.Server
	browser *cdpdriver.Browser
}

// startObserverBrowser serves testdata/wsobserver on loopback (the page
// and nats.ws's ES module bundle: no CDN) and launches a Chromium for it.
func startObserverBrowser(t *testing.T) *observerBrowser {
	t.Helper()
	if _, err := os.Stat(filepath.Join(wsObserverDir, "node_modules", "nats.ws", "esm", "nats.js")); err != nil {
		t.Fatalf("nats.ws is not installed (.ci/run runs: npm ci --prefix testdata/wsobserver): %v", err)
	}
	site := httptest.NewServer(http.FileServer(http.Dir(wsObserverDir)))
	t.Cleanup(site.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	proc, err := cdpdriver.Launch(ctx, cdpdriver.LaunchOptions{Headless: true, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Close() })
	b, err := proc.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &observerBrowser{site: site, browser: b}
}

// observerPage is one observer page open in the browser.
type observerPage struct {
	name string
	page *cdpdriver.Page
}

// open opens the observer page logged in as creds, asking for the tab
// list and following frames on subject; with plan, it then sends body to
// that subject.
func (ob *observerBrowser) open(t *testing.T, name string, creds protocol.Credentials, subject, plan, body string) *observerPage {
	t.Helper()
	fragment := url.Values{
		"server": {creds.WebSocket}, "user": {creds.User}, "password": {creds.Password},
		"inboxPrefix": {creds.InboxPrefix}, "subject": {subject},
		"tabs": {protocol.Subjects{Prefix: creds.Prefix}.Tabs()},
	}
	if plan != "" {
		fragment.Set("plan", plan)
		fragment.Set("body", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	id, err := ob.browser.NewTarget(ctx, ob.site.URL+"/observer.html#"+fragment.Encode())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ob.browser.ConnectPage(ctx, id, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return &observerPage{name: name, page: p}
}

// observerState is window.observer of the page.
type observerState struct {
	State string
	Error struct {
		Code, Message string
	}
	Frames []struct {
		Tab        string
		Sequence   int64
		URL        string
		Time       time.Time
		ReceivedAt float64 // ms since the epoch, the machine's clock as the node's
		MsgID      string
	}
	Plan *struct {
		Subject string
		Request struct {
			Outcome, Code, Message, Reply string
		}
		Publish struct {
			Outcome, Code, Subject string
		}
	}
	Tabs         protocol.TabList // the node's answer on <prefix>.tabs
	Skipped      int              // messages on the frame subject that are not the node's frames
	StatusErrors []any
}

// read reads the page's window.observer (zero before its script ran).
func (o *observerPage) read(t *testing.T) observerState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	v, err := o.page.Eval(ctx, "JSON.stringify(window.observer ?? {})", 20*time.Second)
	var s string
	var st observerState
	if err == nil {
		err = json.Unmarshal(v, &s)
	}
	if err == nil {
		err = json.Unmarshal([]byte(s), &st)
	}
	if err != nil {
		t.Fatalf("%s page: reading window.observer: %v (%s)", o.name, err, v)
	}
	return st
}

// waitState waits for the page's state to be want and returns what the
// page has then; a page that stops in another state fails the test.
func (o *observerPage) waitState(t *testing.T, want string) observerState {
	t.Helper()
	var st observerState
	waitFor(t, fmt.Sprintf("%s page: state %q", o.name, want), time.Minute, func() bool {
		st = o.read(t)
		switch {
		case st.State == want:
			return true
		case st.State == "" || st.State == "connecting" || st.State == "subscribed" && strings.HasPrefix(want, "subscribed, "):
			return false // still on its way
		}
		t.Fatalf("%s page: state %q, want %q: %+v", o.name, st.State, want, st)
		return false
	})
	return st
}

// waitFrame waits for the page to have received frame seq of its tab.
func (o *observerPage) waitFrame(t *testing.T, seq int64) observerState {
	t.Helper()
	var st observerState
	waitFor(t, fmt.Sprintf("%s page: frame %d", o.name, seq), time.Minute, func() bool {
		st = o.read(t)
		return len(st.Frames) > 0 && st.Frames[len(st.Frames)-1].Sequence >= seq
	})
	return st
}

// A browser page with an observer credential follows a tab's frames over
// the WebSocket listener; without the password it gets nothing, and the
// plan it sends is refused at once and never runs.
func TestBrowserObserverOverWebSocket(t *testing.T) {
	t.Parallel() // its own node and site
	// The listener takes web pages from the observer page's origin only.
	ob := startObserverBrowser(t)
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte("bus:\n  websocketOrigins: ["+ob.site.URL+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, envWebSocket+"=127.0.0.1:0", envConfig+"="+config)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	observer, _ := n.addCredentials(t, "dashboard", protocol.RoleObserver)
	if !strings.HasPrefix(observer.WebSocket, "ws://127.0.0.1:") || observer.WebSocket != n.state.WebSocket {
		t.Fatalf("the observer's credentials name WebSocket %q, the node listens on %q", observer.WebSocket, n.state.WebSocket)
	}
	subj := protocol.Subjects{Prefix: observer.Prefix}
	tab := n.tab()

	// The observer page follows the tab; the agent runs a plan there. A Go
	// observer over TCP follows it too, for the report's figures.
	watching := ob.open(t, "observer", observer, subj.TabFrames(tab), "", "")
	if st := watching.waitState(t, "subscribed"); !st.Tabs.OK || len(st.Tabs.Tabs) != 1 || st.Tabs.Tabs[0].Tab != tab {
		t.Errorf("the observer page's tab list: %+v, want the node's one tab %s", st.Tabs, tab)
	}
	overTCP := tcpObserver(t, observer, subj.TabFrames(tab))
	pages := []string{site("/product.html?id=ws"), site("/read.html?by=agent"), site("/links.html?by=agent")}
	var actions []string
	for _, p := range pages {
		actions = append(actions, `{"type":"navigate","url":"`+p+`","wait":true}`)
	}
	r := framebus(t, n.env, `{"id":"ws-agent-1","actions":[`+strings.Join(actions, ",")+`]}`, "plan", "-")
	res, err := protocol.DecodePlanResult([]byte(lastLine(r.stdout)))
	if err != nil || !res.OK {
		t.Fatalf("the agent's plan: %v %+v\n%s\n%s", err, res, r.stdout, r.stderr)
	}
	last := res.Sequence
	st := watching.waitFrame(t, last)
	// Exactly the plan's frames, in order, each the node's own.
	if len(st.Frames) != len(pages) {
		t.Fatalf("the observer page received %d frames, want the plan's %d: %+v", len(st.Frames), len(pages), st.Frames)
	}
	for i, f := range st.Frames {
		if want := last - int64(len(pages)-1-i); f.Tab != tab || f.Sequence != want || f.URL != pages[i] || f.MsgID != protocol.FrameMsgID(tab, want) {
			t.Errorf("the observer page's frame %d: %+v, want tab %s frame %d at %s (message id %s)", i, f, tab, want, pages[i], protocol.FrameMsgID(tab, want))
		}
	}
	// Figures for the report, not checks: frame made to frame received.
	for _, f := range st.Frames {
		t.Logf("frame %d reached the browser over WebSocket %s, a Go observer over TCP %s after the node made it",
			f.Sequence, time.UnixMicro(int64(f.ReceivedAt*1000)).Sub(f.Time), overTCP(f.Sequence).Sub(f.Time))
	}

	// Without the observer's password: refused, no connection, no frame.
	wrong, unknown, none := observer, observer, observer
	wrong.Password = "not-" + observer.Password
	unknown.User = "mallory"
	none.User, none.Password = "", ""
	var refused []*observerPage
	for _, c := range []struct {
		name  string
		creds protocol.Credentials
	}{{"wrong password", wrong}, {"unknown user", unknown}, {"no login", none}} {
		o := ob.open(t, c.name, c.creds, subj.TabFrames(tab), "", "")
		if st := o.waitState(t, "refused"); st.Error.Code != "AUTHORIZATION_VIOLATION" {
			t.Errorf("%s page: %+v, want AUTHORIZATION_VIOLATION", c.name, st.Error)
		}
		refused = append(refused, o)
	}
	// The same page from an origin not listed (any other web page the
	// browser visits), even with the observer's password: the listener
	// refuses its WebSocket before any login.
	elsewhere := httptest.NewServer(http.FileServer(http.Dir(wsObserverDir)))
	defer elsewhere.Close()
	foreign := &observerBrowser{site: elsewhere, browser: ob.browser}
	o := foreign.open(t, "another origin", observer, subj.TabFrames(tab), "", "")
	if st := o.waitState(t, "refused"); st.Error.Code == "AUTHORIZATION_VIOLATION" {
		t.Errorf("another origin's page reached the login: %+v", st.Error)
	}
	refused = append(refused, o)

	// The observer page sends the tab a plan, as a request and as a bare
	// publish: the server refuses both at once, as a permission error.
	stolen := site("/read.html?by=observer")
	attacker := ob.open(t, "observer sending a plan", observer, subj.TabFrames(tab), subj.TabPlan(tab),
		`{"id":"ws-observer-1","actions":[{"type":"navigate","url":"`+stolen+`","wait":true}]}`)
	st = attacker.waitState(t, "subscribed, plan tried")
	violation := `Permissions Violation for Publish to "` + subj.TabPlan(tab) + `"`
	if p := st.Plan; p == nil || p.Request.Outcome != "refused" || p.Request.Code != "PERMISSIONS_VIOLATION" || !strings.Contains(p.Request.Message, violation) {
		t.Errorf("the observer page's plan request: %+v, want refused with PERMISSIONS_VIOLATION: %s", p, violation)
	}
	if p := st.Plan; p == nil || p.Publish.Outcome != "refused" || p.Publish.Code != "PERMISSIONS_VIOLATION" || p.Publish.Subject != subj.TabPlan(tab) {
		t.Errorf("the observer page's plan publish: %+v, want refused with PERMISSIONS_VIOLATION on %s", p, subj.TabPlan(tab))
	}

	// The agent's next plan makes the tab's next frame: nothing ran in
	// between. Every page sees it but the refused ones, and only the
	// node's frames: the pings' answers the attacker aimed at the frame
	// subject are passed over (st.Skipped; none reach it once users are in
	// an account of their own).
	marker := site("/links.html?by=agent-after")
	r = framebus(t, n.env, `{"id":"ws-agent-2","actions":[{"type":"navigate","url":"`+marker+`","wait":true}]}`, "plan", "-")
	after, err := protocol.DecodePlanResult([]byte(lastLine(r.stdout)))
	if err != nil || !after.OK || after.Sequence != last+1 {
		t.Fatalf("the agent's plan after the observer's: %v %+v, want frame %d (the observer's plan ran?)\n%s\n%s", err, after, last+1, r.stdout, r.stderr)
	}
	for _, o := range []*observerPage{watching, attacker} {
		st := o.waitFrame(t, after.Sequence)
		for _, f := range st.Frames {
			if f.URL == stolen {
				t.Errorf("%s page: frame %d at %s, the observer's plan ran", o.name, f.Sequence, f.URL)
			}
		}
		if got := st.Frames[len(st.Frames)-1]; got.Sequence != after.Sequence || got.URL != marker {
			t.Errorf("%s page: last frame %+v, want %d at %s", o.name, got, after.Sequence, marker)
		}
		t.Logf("%s page: %d frames shown, %d other messages on the frame subject passed over", o.name, len(st.Frames), st.Skipped)
	}
	if st := watching.read(t); len(st.Frames) != len(pages)+1 {
		t.Errorf("the observer page shows %d frames, want the agent's %d", len(st.Frames), len(pages)+1)
	}
	for _, o := range refused {
		if st := o.read(t); len(st.Frames) != 0 || st.State != "refused" {
			t.Errorf("%s page: %s with %d frames, want refused with 0", o.name, st.State, len(st.Frames))
		}
	}
	// The node's history agrees: no frame of the tab is the observer's.
	r = framebus(t, n.env, "", "frames", "--tab", tab)
	if r.status != 0 {
		t.Fatalf("framebus frames: exit %d\n%s\n%s", r.status, r.stdout, r.stderr)
	}
	stored := 0
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f, err := protocol.DecodeFrame([]byte(line))
		if err != nil {
			t.Fatalf("framebus frames printed %q: %v", line, err)
		}
		stored++
		if f.URL == stolen {
			t.Errorf("stored frame %d is at %s: the observer's plan ran", f.Sequence, f.URL)
		}
	}
	if int64(stored) != after.Sequence {
		t.Errorf("the history holds %d frames of the tab, want %d", stored, after.Sequence)
	}
}

// tcpObserver subscribes to subject over TCP with nats.go as creds, and
// returns when each frame sequence arrived (the zero time for one that
// has not).
func tcpObserver(t *testing.T, creds protocol.Credentials, subject string) func(seq int64) time.Time {
	t.Helper()
	nc, err := nats.Connect(creds.URL, nats.UserInfo(creds.User, creds.Password), nats.CustomInboxPrefix(creds.InboxPrefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var mu sync.Mutex
	arrived := map[int64]time.Time{}
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		now := time.Now()
		if f, err := protocol.DecodeFrame(m.Data); err == nil {
			mu.Lock()
			arrived[f.Sequence] = now
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func(seq int64) time.Time {
		mu.Lock()
		defer mu.Unlock()
		return arrived[seq]
	}
}
