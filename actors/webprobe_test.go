package actors

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/bus"
	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// probeNode is a node whose whitelist allows 127.0.0.1 only, on a bus
// of the smallest payload a node accepts.
func probeNode(t *testing.T, search SearchOptions, http HTTPOptions) *Node {
	t.Helper()
	wl, err := whitelist.New([]string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return startTestNode(t, NodeOptions{Prefix: "fbprobe", Whitelist: wl, Search: search, HTTP: http,
		Bus: bus.Options{MaxPayload: bus.MinMaxPayload}})
}

// A hostile server makes a fetch's reply larger than the bus carries:
// ten redirects with long Locations (240 KB each: headers as long as a
// browser takes), then a body at the node's cap. The
// caller must get an answer with a clear code within the fetch's time,
// in JSON and with the body outside it (Framebus-Body: raw), never
// silence until its own deadline.
func TestProbeReplyLargerThanTheBus(t *testing.T) {
	t.Parallel() // its own node and server
	// The body's cap as large as the node allows: the bus's payload,
	// less the room it keeps for the rest of the reply.
	node := probeNode(t, SearchOptions{}, HTTPOptions{MaxBytes: 64 << 20})
	longPath := "/" + strings.Repeat("p", 240<<10)
	body := make([]byte, 8<<20)
	rand.Read(body)
	var hop atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := hop.Add(1); n%11 != 0 {
			http.Redirect(w, r, fmt.Sprintf("%s?%d", longPath, n), http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body)
	}))
	defer srv.Close()
	nc := bustest.Connect(t, node.Bus(), protocol.RoleAgent)
	defer nc.Close()
	req, _ := json.Marshal(protocol.FetchRequest{URL: srv.URL + "/", Timeout: protocol.Duration(20 * time.Second)})
	silent := 0
	for _, raw := range []bool{false, true} {
		msg := &nats.Msg{Subject: node.Subjects().HTTPFetch(), Data: req, Header: nats.Header{}}
		if raw {
			msg.Header.Set(protocol.HeaderBody, protocol.BodyRaw)
		}
		out, err := nc.RequestMsg(msg, 40*time.Second)
		if err != nil {
			silent++
			t.Errorf("raw %v: no answer: %v", raw, err)
			continue
		}
		var reply protocol.ErrorReply
		if out.Header.Get(protocol.HeaderReply) != "" || json.Unmarshal(out.Data, &reply) != nil || reply.OK || reply.Code != protocol.CodeTooLarge {
			t.Errorf("raw %v: %d bytes, head %d bytes, %.200s; want too_large", raw, len(out.Data), len(out.Header.Get(protocol.HeaderReply)), out.Data)
		} else {
			t.Logf("raw %v: %s", raw, reply.Error)
		}
	}
	t.Logf("2 fetches whose reply is over the bus's %d bytes, %d answered nothing", nc.MaxPayload(), silent)

	// A text body the JSON makes six times larger (control characters are
	// \u00XX): 2 MB of them, under any body cap, is 12 MB of JSON. Plain
	// JSON is too_large at once; with the body outside the JSON it fits.
	controls := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Repeat("\x01", 2<<20)))
	}))
	defer controls.Close()
	req, _ = json.Marshal(protocol.FetchRequest{URL: controls.URL + "/", Timeout: protocol.Duration(20 * time.Second)})
	out, err := nc.Request(node.Subjects().HTTPFetch(), req, 40*time.Second)
	var reply protocol.ErrorReply
	if err != nil {
		t.Errorf("2 MB of control characters in JSON: no answer: %v", err)
	} else if json.Unmarshal(out.Data, &reply) != nil || reply.Code != protocol.CodeTooLarge {
		t.Errorf("2 MB of control characters in JSON: %.200s; want too_large", out.Data)
	}
	out, err = nc.RequestMsg(&nats.Msg{Subject: node.Subjects().HTTPFetch(), Data: req, Header: nats.Header{protocol.HeaderBody: {protocol.BodyRaw}}}, 40*time.Second)
	if err != nil {
		t.Errorf("2 MB of control characters outside the JSON: no answer: %v", err)
	} else if len(out.Data) != 2<<20 || out.Header.Get(protocol.HeaderReply) == "" {
		t.Errorf("2 MB of control characters outside the JSON: %d bytes", len(out.Data))
	}
}

// A plan whose fetches together pass what one bus message carries: the
// plan answers too_large (its values left out), never nothing.
func TestProbePlanOfFetchesLargerThanTheBus(t *testing.T) {
	t.Parallel() // its own node and server
	node := probeNode(t, SearchOptions{}, HTTPOptions{})
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("x", 3<<20)))
	}))
	defer big.Close()
	agent := newBusClient(t, node)
	tab := node.Tabs()[0].Tab
	fetches := make([]protocol.Action, 3)
	for i := range fetches {
		fetches[i] = protocol.Action{Type: "fetch", URL: big.URL + "/"}
	}
	res := agent.plan(node.Subjects(), tab, protocol.Plan{Actions: fetches})
	if res.OK || res.Code != protocol.CodeTooLarge || res.Executed != 3 {
		t.Errorf("a plan of three 3 MB fetches on a bus of %d bytes: ok %v %s executed %d: %s", bus.MinMaxPayload, res.OK, res.Code, res.Executed, res.Error)
	}
}

// A thousand fetches at once, each held by a server that never answers:
// the node answers each (timeout), and meanwhile a plan on a tab (with a
// fetch of its own) and another agent's fetch of a page that answers
// still run.
func TestProbeThousandFetchesAtOnce(t *testing.T) {
	node := probeNode(t, SearchOptions{}, HTTPOptions{})
	hold := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held.Add(1)
			go func() {
				defer c.Close()
				http.ReadRequest(bufio.NewReader(c))
				<-hold
			}()
		}
	}()
	defer ln.Close()
	defer close(hold)
	page := site("/read.html")

	nc := bustest.Connect(t, node.Bus(), protocol.RoleAgent)
	defer nc.Close()
	const many = 1000
	req, _ := json.Marshal(protocol.FetchRequest{URL: "http://" + ln.Addr().String() + "/", Timeout: protocol.Duration(time.Second)})
	codes := make(chan protocol.Code, many)
	var wg sync.WaitGroup
	for range many {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := nc.Request(node.Subjects().HTTPFetch(), req, 2*time.Minute)
			if err != nil {
				codes <- "no answer: " + protocol.Code(err.Error())
				return
			}
			var reply protocol.ErrorReply
			json.Unmarshal(out.Data, &reply)
			codes <- reply.Code
		}()
	}
	// While they wait: a plan with a fetch and an eval, on a tab.
	agent := newBusClient(t, node)
	tab := node.Tabs()[0].Tab
	res := agent.plan(node.Subjects(), tab, protocol.Plan{Actions: []protocol.Action{
		{Type: "fetch", URL: page, Timeout: protocol.Duration(20 * time.Second)},
		{Type: "eval", Expression: "1+1"},
	}})
	if !res.OK {
		t.Errorf("a plan while %d fetches wait: %+v", many, res)
	}
	wg.Wait()
	close(codes)
	counts := map[protocol.Code]int{}
	for c := range codes {
		counts[c]++
	}
	t.Logf("%d fetches at once of a server that never answers: %v; %d connections reached it", many, counts, held.Load())
	if counts[protocol.CodeTimeout] != many {
		t.Errorf("answers %v, want %d timeouts", counts, many)
	}
}

// A search engine's page injects a result at a host the whitelist denies;
// a plan navigates to it: the browser refuses, and the denied host sees
// nothing. A `use` path that is huge or deep is refused as bad input.
func TestProbePlanFollowsAnInjectedResult(t *testing.T) {
	var denied atomic.Int64
	elsewhere := serveOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { denied.Add(1) }))
	results, err := os.ReadFile("../testdata/search/ddg-results.html")
	if err != nil {
		t.Fatal(err)
	}
	target := "http://" + elsewhere.Listener.Addr().String() + "/steal"
	results = []byte(strings.ReplaceAll(string(results), url.QueryEscape("https://pkg.go.dev/net/http"), url.QueryEscape(target)))
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(results)
	}))
	defer engine.Close()
	node := probeNode(t, SearchOptions{DuckDuckGoURL: engine.URL + "/html/"}, HTTPOptions{})
	agent := newBusClient(t, node)
	tab := node.Tabs()[0].Tab
	through := 0
	for _, step := range []protocol.Action{
		{Type: "navigate", Use: map[string]string{"url": "0.results.0.url"}, Wait: true},
		{Type: "fetch", Use: map[string]string{"url": "0.results.0.url"}},
		{Type: "navigate", Use: map[string]string{"url": "0." + strings.Repeat("results.", 50000) + "url"}},
		{Type: "navigate", Use: map[string]string{"url": "0.results.99999999999999999999.url"}},
	} {
		res := agent.plan(node.Subjects(), tab, protocol.Plan{Actions: []protocol.Action{
			{Type: "search", Query: "go http client", Limit: 1},
			step,
		}})
		if res.OK || len(res.Results) == 0 || !res.Results[0].OK {
			through += map[bool]int{true: 1}[res.OK]
			t.Logf("%s %.80v: ok %v, %d results, %s: %.200s", step.Type, step.Use, res.OK, len(res.Results), res.Code, res.Error)
			continue
		}
		t.Logf("%s %.80v: %s: %.300s", step.Type, step.Use, res.Code, res.Error)
	}
	// A page's redirect, taken with noRedirects, and its Location fed to a
	// fetch and a navigate by use: the whitelist still catches it.
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	}))
	defer redirecting.Close()
	for _, step := range []protocol.Action{
		{Type: "fetch", Use: map[string]string{"url": "0.headers.Location.0"}},
		{Type: "navigate", Use: map[string]string{"url": "0.headers.Location.0"}, Wait: true},
	} {
		res := agent.plan(node.Subjects(), tab, protocol.Plan{Actions: []protocol.Action{
			{Type: "fetch", URL: redirecting.URL + "/", NoRedirects: true},
			step,
		}})
		if len(res.Results) == 0 || !res.Results[0].OK {
			t.Fatalf("the fetch of the redirect itself (noRedirects): %+v", res)
		}
		if res.OK || res.Code != protocol.CodePermissionDenied {
			through++
			t.Errorf("%s by use of %s: ok %v %s %s", step.Type, step.Use["url"], res.OK, res.Code, res.Error)
		}
	}
	t.Logf("4 plans following an injected result and 2 a redirect's Location, %d got through; the denied host saw %d requests", through, denied.Load())
	if through > 0 || denied.Load() > 0 {
		t.Errorf("%d plans got through, %d requests reached the denied host", through, denied.Load())
	}
}

// Who may ask: an observer and a user of another account, over TCP; the
// raw-body header from a page with odd header bytes; a Host header the
// whitelist denies, on the bus.
func TestProbeWhoMayFetch(t *testing.T) {
	t.Parallel() // its own nodes and servers
	wl, err := whitelist.New([]string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbwho", Whitelist: wl, Bus: bus.Options{WebSocket: "127.0.0.1:0"}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Odd"] = []string{"caf\xe9 \"quoted\" \\ back", "\u2028line"}
		w.Header().Set("Framebus-Reply", `{"ok":true,"status":999}`)
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	connect := func(role string) *busclient.Client {
		creds := bustest.AddUser(t, node.Bus(), role)
		c, err := busclient.Connect(t.Context(), busclient.Options{Credentials: &creds, Prefix: node.Subjects().Prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	agent := connect(protocol.RoleAgent)
	got, err := agent.Fetch(ctx, protocol.FetchRequest{URL: srv.URL + "/"})
	if err != nil || got.Status != 200 || got.Body != "hello" {
		t.Fatalf("the agent's fetch: %+v %v", got, err)
	}
	t.Logf("odd headers through the raw path: %q %q", got.Headers["X-Odd"], got.Headers["Framebus-Reply"])
	_, err = agent.Fetch(ctx, protocol.FetchRequest{URL: srv.URL + "/", Headers: map[string]string{"Host": "127.0.0.2"}})
	if protocol.CodeOf(err) != protocol.CodePermissionDenied {
		t.Errorf("Host 127.0.0.2 on the bus: %v", err)
	}
	through := 0
	observer := connect(protocol.RoleObserver)
	if _, err := observer.Fetch(ctx, protocol.FetchRequest{URL: srv.URL + "/"}); protocol.CodeOf(err) != protocol.CodePermissionDenied {
		through++
		t.Errorf("observer fetch: %v", err)
	}
	if _, err := observer.Search(ctx, protocol.SearchRequest{Query: "q"}); protocol.CodeOf(err) != protocol.CodePermissionDenied {
		through++
		t.Errorf("observer search: %v", err)
	}
	// An observer asks on every transport (TCP, WebSocket), and with no
	// login at all: each is refused, never a fetch. The requests are short
	// (1 s): a refused one is never answered.
	creds := bustest.AddUser(t, node.Bus(), protocol.RoleObserver)
	tried := 2
	for _, busURL := range []string{node.Bus().ClientURL(), node.Bus().WebSocketURL()} {
		for _, login := range [][]nats.Option{bustest.Options(creds), nil} {
			onc, err := nats.Connect(busURL, login...)
			if err != nil {
				tried++
				t.Logf("%s, login %v: %v", busURL, login != nil, err)
				continue
			}
			for _, subj := range []string{node.Subjects().HTTPFetch(), node.Subjects().SearchQuery()} {
				tried++
				data, _ := json.Marshal(protocol.FetchRequest{URL: srv.URL + "/"})
				out, err := onc.Request(subj, data, time.Second)
				if err == nil {
					through++
					t.Errorf("observer on %s over %s: %.200s", subj, busURL, out.Data)
				}
				// A bare nats.go request hears the server's permissions
				// violation only as an asynchronous error, and times out;
				// the framebus client (above) makes it permission_denied.
			}
			onc.Close()
		}
	}
	t.Logf("%d observer and anonymous attempts at the resources over TCP and WebSocket: %d got through", tried, through)
}

// cookiesFrom: the default profile's browser holds a session cookie
// (HttpOnly) and a path cookie from a site on 127.0.0.1; a fetch with
// cookiesFrom is redirected, or aimed directly, at a server on 127.0.0.2
// (allowed: the attacker's) in several spellings. Each is one attack; it
// got through when that server saw the session's value.
func TestProbeCookiesFromStayWithTheirHost(t *testing.T) {
	const session = "SESSION-7f3a"
	var sawSession atomic.Int64
	var cookies sync.Map
	attacker := serveOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Cookie"), session) {
			sawSession.Add(1)
		}
		cookies.Store(r.URL.String(), r.Header.Get("Cookie"))
		fmt.Fprint(w, "ok")
	}))
	var owner *httptest.Server
	owner = serveOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/set":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: session, Path: "/", HttpOnly: true})
			http.SetCookie(w, &http.Cookie{Name: "priv", Value: "only-under-private", Path: "/private"})
			fmt.Fprint(w, "<title>set</title>set")
		case r.URL.Path == "/plain":
			fmt.Fprint(w, "<title>plain</title>a page that shows no cookie")
		case r.URL.Path == "/to":
			w.Header().Set("Location", r.URL.Query().Get("next"))
			w.WriteHeader(http.StatusFound)
		default:
			fmt.Fprint(w, r.Header.Get("Cookie"))
		}
	}))
	wl, err := whitelist.New([]string{"127.0.0.1", "127.0.0.2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbcookie", Whitelist: wl})
	agent := newBusClient(t, node)
	tab := node.Tabs()[0].Tab
	if res := agent.plan(node.Subjects(), tab, protocol.Plan{Actions: []protocol.Action{{Type: "navigate", URL: owner.URL + "/set", Wait: true}}}); !res.OK {
		t.Fatalf("navigate to set the cookies: %+v", res)
	}
	fetchWith := func(u string) (protocol.FetchReply, protocol.ErrorReply) {
		var reply protocol.FetchReply
		raw := agent.ask(node.Subjects().HTTPFetch(), protocol.FetchRequest{URL: u, CookiesFrom: protocol.DefaultProfile}, &reply)
		var e protocol.ErrorReply
		json.Unmarshal(raw, &e)
		return reply, e
	}
	// The control: the owner's own site gets its cookies, the path one only
	// under its path.
	if r, e := fetchWith(owner.URL + "/echo"); !strings.Contains(r.Body, session) || strings.Contains(r.Body, "only-under-private") {
		t.Fatalf("the owner's site with cookiesFrom: %q %+v", r.Body, e)
	}
	if r, _ := fetchWith(owner.URL + "/private/x"); !strings.Contains(r.Body, "only-under-private") {
		t.Fatalf("the owner's /private with cookiesFrom: %q", r.Body)
	}
	_, aport, _ := net.SplitHostPort(attacker.Listener.Addr().String())
	_, oport, _ := net.SplitHostPort(owner.Listener.Addr().String())
	to := func(next string) string { return owner.URL + "/to?next=" + url.QueryEscape(next) }
	attacks := []string{
		attacker.URL + "/direct",
		to(attacker.URL + "/redirected"),
		to("//127.0.0.2:" + aport + "/scheme-relative"),
		to("http://127.0.0.1@127.0.0.2:" + aport + "/userinfo"),
		to("http://127.0.0.1:" + oport + "@127.0.0.2:" + aport + "/userinfo-port"),
		to("http://2130706434:" + aport + "/decimal"),
		to("http://[::ffff:127.0.0.2]:" + aport + "/mapped"),
		"http://127.0.0.1:" + oport + "@127.0.0.2:" + aport + "/first-userinfo",
		to(to(attacker.URL + "/two-hops")),
	}
	through := 0
	for _, u := range attacks {
		before := sawSession.Load()
		r, e := fetchWith(u)
		if sawSession.Load() > before || strings.Contains(r.Body, session) || strings.Contains(e.Error, session) {
			through++
			t.Errorf("got through: %s: %q %+v", u, r.Body, e)
		}
	}
	t.Logf("%d fetches with cookiesFrom aimed at another host, %d carried the session", len(attacks), through)

	// An observer watches every frame and event while a plan fetches with
	// the session and an Authorization header: the fetch makes no frame,
	// and nothing it sent or got reaches the observer.
	const token = "Bearer TOKEN-91c2"
	watcher := bustest.Connect(t, node.Bus(), protocol.RoleObserver)
	defer watcher.Close()
	var seen, leaked atomic.Int64
	for _, subj := range []string{node.Subjects().TabFrames("*"), node.Subjects().TabEvents("*", ">")} {
		sub, err := watcher.Subscribe(subj, func(m *nats.Msg) {
			seen.Add(1)
			if strings.Contains(string(m.Data), session) || strings.Contains(string(m.Data), token) {
				leaked.Add(1)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
	watcher.Flush()
	res := agent.plan(node.Subjects(), tab, protocol.Plan{Actions: []protocol.Action{
		{Type: "fetch", URL: owner.URL + "/echo", CookiesFrom: protocol.DefaultProfile},
		{Type: "fetch", URL: owner.URL + "/echo", Headers: map[string]string{"Authorization": token}},
		{Type: "navigate", URL: owner.URL + "/plain", Wait: true},
	}})
	if !res.OK || !strings.Contains(string(res.Results[0].Value), session) {
		t.Fatalf("the plan's fetches: %+v", res)
	}
	// The navigate's frame shows the watch works; wait for it (bounded).
	for deadline := time.Now().Add(testscale.D(10 * time.Second)); seen.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if seen.Load() == 0 {
		t.Fatalf("the observer saw no frame of the plan's navigate: the watch sees nothing")
	}
	if leaked.Load() != 0 {
		t.Errorf("the observer saw the session or the token in %d of %d messages", leaked.Load(), seen.Load())
	}
	t.Logf("an observer saw %d frames and events during a plan fetching with a session and a token, %d held them", seen.Load(), leaked.Load())
	cookies.Range(func(k, v any) bool { t.Logf("the attacker saw %v with Cookie %q", k, v); return true })
}

// The node's own ports: its NATS listener, its WebSocket listener and its
// egress proxy, all on loopback. With a whitelist of names only ("*":
// every name, every public address), a fetch reaches none of them, in
// any spelling, by name (localhost) or address. Each is one attack; it
// got through when the fetch answered or failed with anything but
// permission_denied (a connection was made).
func TestProbeNodesOwnPorts(t *testing.T) {
	wl, err := whitelist.New([]string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbports", Whitelist: wl, Bus: bus.Options{WebSocket: "127.0.0.1:0"}})
	var ports []string
	for _, u := range []string{node.Bus().ClientURL(), node.Bus().WebSocketURL(), "http://" + node.egress.Addr()} {
		parsed, err := url.Parse(u)
		if err != nil || parsed.Port() == "" {
			t.Fatalf("a port of the node: %q %v", u, err)
		}
		ports = append(ports, parsed.Port())
	}
	agent := newBusClient(t, node)
	through, tried := 0, 0
	for _, p := range ports {
		for _, host := range []string{"127.0.0.1", "localhost", "LOCALHOST.", "127.1", "2130706433", "0x7f.0.0.1", "0", "0.0.0.0", "[::1]", "[::]", "[::ffff:127.0.0.1]", "127.0.0.1.nip.io"} {
			tried++
			var e protocol.ErrorReply
			agent.ask(node.Subjects().HTTPFetch(), protocol.FetchRequest{URL: "http://" + host + ":" + p + "/", Timeout: protocol.Duration(5 * time.Second)}, &e)
			if e.OK || e.Code != protocol.CodePermissionDenied {
				// A name the resolver cannot find (no network here) is
				// fetch_failed without any connection: not through.
				if e.Code == protocol.CodeFetchFailed && strings.Contains(e.Error, "no such host") {
					continue
				}
				through++
				t.Errorf("got through: %s:%s: %+v", host, p, e)
			}
		}
	}
	t.Logf("%d fetches of the node's own ports (bus, websocket, egress proxy) with whitelist *, %d got through", tried, through)
}
