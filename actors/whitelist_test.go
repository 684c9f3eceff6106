package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// The whitelist is a security boundary in the browser's network layer: a
// table of attempts to reach a denied host, each of which must end on
// permission_denied or leave the tab on the allowed page, and the denied
// server must never see a request.
func TestWhitelistBoundary(t *testing.T) {
	t.Parallel() // its own node, browser and sites
	var evilHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		evilHits.Add(1)
		fmt.Fprint(w, "<title>evil</title>evil")
	}))
	defer evil.Close()
	var goodSocketHits atomic.Int64
	site := siteHandler()
	// The allowed site is on 127.0.0.2, listed by address, and the denied
	// one on 127.0.0.1, not listed: the attacks by address below aim at it.
	good := serveOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			goodSocketHits.Add(1) // no WebSocket server here: reaching it is enough
		}
		site.ServeHTTP(w, r)
	}))
	_, evilPort, _ := net.SplitHostPort(evil.Listener.Addr().String())
	_, goodPort, _ := net.SplitHostPort(good.Listener.Addr().String())

	wl, err := whitelist.New([]string{"*.example.test", "example.test", "127.0.0.2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	node, err := StartNode(ctx, NodeOptions{
		Bus:    bus.Options{},
		Launch: cdpdriver.LaunchOptions{Headless: true},
		// Distinct origins on loopback: every test domain is the allowed
		// site's address (the proxy resolves every name Chromium loads).
		Whitelist:      wl,
		EgressResolver: fixedResolver(netip.MustParseAddr("127.0.0.2")),
		SettleTimeout:  2 * time.Second,
		Logger:         zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	nc, err := node.Bus().Connect("whitelist-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tab := node.Tabs()[0].Tab
	run := func(a protocol.Action) protocol.ActionResult {
		t.Helper()
		data := fmt.Appendf(nil, `{"action":%s}`, mustJSON(t, a))
		msg, err := nc.Request(node.Subjects().TabPlan(tab), data, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", a.Type, err)
		}
		res, err := protocol.DecodePlanResult(msg.Data)
		if err != nil || len(res.Results) != 1 {
			t.Fatalf("%s: %s %v", a.Type, msg.Data, err)
		}
		return res.Results[0]
	}
	evilURL := "http://evil.test:" + evilPort
	allowed := "http://mail.example.test:" + goodPort + "/bypass.html?evil=" + url.QueryEscape(evilURL)
	here := func() string {
		t.Helper()
		r := run(protocol.Action{Type: "url"})
		var u string
		fmt.Sscanf(strings.Trim(string(r.Value), `"`), "%s", &u)
		return u
	}
	// Allowed hosts load, subdomains included.
	for _, u := range []string{"http://docs.example.test:" + goodPort + "/", "http://example.test:" + goodPort + "/", allowed} {
		if r := run(protocol.Action{Type: "navigate", URL: u, Wait: true}); !r.OK {
			t.Fatalf("allowed %s: %+v", u, r)
		}
	}

	navigations := []string{
		evilURL + "/",
		"http://EVIL.test.:" + evilPort + "/",
		"http://mail.example.test:" + goodPort + "@evil.test:" + evilPort + "/",
		`http://evil.test:` + evilPort + `\@mail.example.test/`,
		"http://example.test.evil.test:" + evilPort + "/",
		"http://%65vil.test:" + evilPort + "/",
		"http://2130706433:" + evilPort + "/", // 127.0.0.1, the evil server
		"http://0x7f.1:" + evilPort + "/",
		"http://[::ffff:127.0.0.1]:" + evilPort + "/",
		"http://еvil.test:" + evilPort + "/", // Cyrillic е
		"javascript:location='" + evilURL + "'",
		"data:text/html,<script>location='" + evilURL + "'</script>",
		"file:///etc/passwd",
	}
	for _, u := range navigations {
		r := run(protocol.Action{Type: "navigate", URL: u})
		if r.OK || r.Code != protocol.CodePermissionDenied {
			t.Errorf("navigate %s: %+v, want permission_denied", u, r)
		}
	}
	if r := run(protocol.Action{Type: "navigate", URL: evilURL + "/"}); !strings.Contains(r.Error, "evil.test") {
		t.Errorf("the error does not name the denied domain: %+v", r)
	}
	// A URL the whitelist cannot read is refused for its form.
	for _, u := range []string{"http://%zz/", "http://\u200d.test/", "https://ex ample.test/"} {
		if r := run(protocol.Action{Type: "navigate", URL: u}); r.OK || r.Code != protocol.CodeBadRequest || !strings.Contains(r.Error, "host") {
			t.Errorf("navigate %q: %+v, want bad_request about its host", u, r)
		}
	}

	// Ways for a page to go there on its own or through an action.
	redirect := "http://mail.example.test:" + goodPort + "/redirect?to=" + url.QueryEscape(evilURL+"/redirected")
	r := run(protocol.Action{Type: "navigate", URL: redirect})
	if r.OK || r.Code != protocol.CodePermissionDenied || !strings.Contains(r.Error, "evil.test") {
		t.Errorf("HTTP redirect: %+v, want permission_denied naming evil.test", r)
	}
	for _, sel := range []string{"#link", "#submit", "#js", "#assign", "#popup", "#iframe", "#img", "#refresh", "#beacon"} {
		if r := run(protocol.Action{Type: "navigate", URL: allowed, Wait: true}); !r.OK {
			t.Fatalf("back to the allowed page: %+v", r)
		}
		r := run(protocol.Action{Type: "click", Selector: sel})
		if !r.OK && r.Code != protocol.CodePermissionDenied {
			t.Errorf("click %s: %+v", sel, r)
		}
		// Whatever the click started has had its chance to go out.
		run(protocol.Action{Type: "eval", Expression: "new Promise(r => setTimeout(r, 300))"})
		if u := here(); !strings.HasPrefix(u, "http://mail.example.test:"+goodPort+"/bypass.html") {
			t.Errorf("after click %s the tab is at %s", sel, u)
		}
	}
	// WebSockets are not Fetch requests: the egress proxy refuses the
	// denied ones (any number form of the address too).
	socket := func(u string) string {
		t.Helper()
		r := run(protocol.Action{Type: "eval", Expression: `new Promise(done => {
			const ws = new WebSocket(` + strconv.Quote(u) + `);
			ws.onopen = () => done("open"); ws.onerror = () => done("error");
			setTimeout(() => done("timeout"), 3000);
		})`})
		return string(r.Value)
	}
	for _, u := range []string{"ws://evil.test:" + evilPort + "/ws", "ws://2130706433:" + evilPort + "/ws", "wss://evil.test:" + evilPort + "/ws"} {
		if got := socket(u); got != `"error"` {
			t.Errorf("WebSocket to %s: %s, want error", u, got)
		}
	}
	socket("ws://mail.example.test:" + goodPort + "/ws")
	if goodSocketHits.Load() == 0 {
		t.Errorf("a WebSocket to an allowed host never reached it")
	}
	if n := node.egress.Denied(); n < 2 {
		t.Errorf("the egress proxy refused %d connections; the WebSockets to evil.test went another way", n)
	}

	// A fetch from the page fails in the page.
	if r := run(protocol.Action{Type: "eval", Expression: "fetch('" + evilURL + "/fetch').then(() => 'reached', e => 'failed')"}); string(r.Value) != `"failed"` {
		t.Errorf("fetch: %+v", r)
	}
	if n := evilHits.Load(); n != 0 {
		t.Fatalf("the denied server saw %d requests", n)
	}
}

// serveOn serves h on a free port of the loopback address addr
// (127.0.0.2, ...), for tests that need servers apart by address.
func serveOn(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// An empty whitelist denies every host: navigations, new tabs and
// sessions alike, and nothing reaches the server.
func TestEmptyWhitelistDeniesAll(t *testing.T) {
	t.Parallel() // its own node and server
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	none, err := whitelist.New([]string{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbdenyall", Whitelist: none, ProfileDir: testdir.Enterable(t)})
	c := newBusClient(t, node)
	subj := node.Subjects()
	res := c.plan(subj, node.Tabs()[0].Tab, one(protocol.Action{Type: "navigate", URL: srv.URL + "/"}))
	if res.Code != protocol.CodePermissionDenied || !strings.Contains(res.Error, "127.0.0.1") {
		t.Errorf("navigate: %+v", res)
	}
	var r protocol.PlanResult
	if raw := c.ask(subj.Profile(protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{URL: srv.URL + "/"}, &r); r.Code != protocol.CodePermissionDenied {
		t.Errorf("newtab: %s", raw)
	}
	if raw := c.ask(subj.SessionStart(), protocol.SessionStartRequest{Domain: "example.test"}, &r); r.Code != protocol.CodePermissionDenied {
		t.Errorf("session start: %s", raw)
	}
	// A page can not get there either: about:blank scripting a navigation.
	c.plan(subj, node.Tabs()[0].Tab, one(protocol.Action{Type: "eval", Expression: "location.href = '" + srv.URL + "/script'; 1"}))
	c.plan(subj, node.Tabs()[0].Tab, one(protocol.Action{Type: "eval", Expression: "new Promise(r => setTimeout(r, 300))"}))
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server saw %d requests", n)
	}
}

// With a whitelist every request goes through the egress proxy: pages,
// scripts and images load, an event stream streams, a long poll stays
// open without holding up anything else, and a form post gets through.
func TestAllowedTrafficThroughTheEgressProxy(t *testing.T) {
	t.Parallel() // its own node and server
	wl, err := whitelist.New([]string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbegress", Whitelist: wl})
	c := newBusClient(t, node)
	subj := node.Subjects()
	tab := node.Tabs()[0].Tab
	eval := func(expr string) string {
		t.Helper()
		res := c.plan(subj, tab, one(protocol.Action{Type: "eval", Expression: expr}))
		if !res.OK {
			t.Fatalf("eval %s: %+v", expr, res)
		}
		return string(res.Results[0].Value)
	}
	load := func(path string) {
		t.Helper()
		if res := c.plan(subj, tab, one(protocol.Action{Type: "navigate", URL: site(path), Wait: true})); !res.OK {
			t.Fatalf("navigate %s: %+v", path, res)
		}
	}
	load("/longpoll.html") // a request held open for a minute
	load("/sse.html")
	waitUntil(t, func() bool { return eval("window.sseMessage || ''") == `"hello"` })
	if got := eval("fetch('/api/data').then(r => r.json()).then(d => d.data)"); got != `"fetched"` {
		t.Fatalf("fetch through the proxy: %s", got)
	}
	if got := eval("fetch('/no-content', {method: 'POST', body: 'x'.repeat(100000)}).then(r => r.status)"); got != "204" {
		t.Fatalf("a post through the proxy: %s", got)
	}
	if node.egress == nil {
		t.Fatal("no egress proxy with a whitelist")
	}
}
