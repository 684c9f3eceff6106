package actors

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/protocol"
)

// rebindResolver is a DNS server under an attacker's control: it answers
// rebind.test with the allowed address until told otherwise, then with
// the internal one (internal), or with each in turn (alternate), lookup
// by lookup.
type rebindResolver struct {
	mode    atomic.Int32 // rebindAllowed, rebindInternal, rebindAlternate
	lookups atomic.Int64
}

// rebindInternalAddr is the internal server's address: loopback, denied
// like all of 127.0.0.0/8, and one no other test listens on or dials. On
// 127.0.0.1 the count below also caught strangers: a page of another
// test's browser (another package's, running beside this one) still
// polling a server that had closed, whose port this test then took.
const rebindInternalAddr = "127.0.0.3"

const (
	rebindAllowed = iota
	rebindInternal
	rebindAlternate
)

func (r *rebindResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	n := r.lookups.Add(1)
	if host != "rebind.test" {
		return nil, fmt.Errorf("no such host %s", host)
	}
	mode := r.mode.Load()
	if mode == rebindInternal || mode == rebindAlternate && n%2 == 0 {
		return []netip.Addr{netip.MustParseAddr(rebindInternalAddr)}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
}

// TestRebindingBoundary is DNS rebinding from the attacker's side. The
// whitelist allows rebind.test and the address 127.0.0.2, where the
// allowed site is. The "internal" server, standing for loopback and every
// internal service (framebus's own bus and proxy listen on 127.0.0.1), is
// on another loopback address (rebindInternalAddr), on the same port: one URL, http://rebind.test:PORT/,
// reaches either, depending only on what the name resolves to. The proxy
// pins no answer here (EgressNoPin), so every check and every connection
// looks the name up again: the worst case. The page loads from the allowed
// address; then the name resolves to the internal one, and the page tries
// to reach it by fetch (same origin: it could read the answer), by
// WebSocket, and the agent by navigation; then the name answers each
// address in turn, so the browser's filter can see the allowed address
// and the proxy the internal one a moment later. The internal server
// counts every TCP connection it accepts: 0.
func TestRebindingBoundary(t *testing.T) {
	var allowedSockets atomic.Int64
	allowedLn, internalLn, port := twinListeners(t, "127.0.0.2", rebindInternalAddr)
	allowed := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			allowedSockets.Add(1) // no WebSocket server here: reaching it is enough
		}
		fmt.Fprint(w, "<title>allowed</title>allowed")
	}))
	allowed.Listener.Close()
	allowed.Listener = allowedLn
	// Every request the proxy sends dials anew, so every one is checked
	// (a kept-alive connection to a checked address is fine, but would
	// take the rebinding out of the test).
	allowed.Config.SetKeepAlivesEnabled(false)
	allowed.Start()
	defer allowed.Close()
	var internal atomic.Int64
	var heard sync.Mutex
	var requests []string // what reached the internal server, for the failure
	go func() {
		for {
			c, err := internalLn.Accept()
			if err != nil {
				return
			}
			internal.Add(1)
			c.SetReadDeadline(time.Now().Add(time.Second))
			head := make([]byte, 512)
			n, _ := c.Read(head)
			heard.Lock()
			requests = append(requests, fmt.Sprintf("from %s: %q", c.RemoteAddr(), head[:n]))
			heard.Unlock()
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 34\r\nConnection: close\r\n\r\n<title>internal</title>secret-data")
			c.Close()
		}
	}()
	defer internalLn.Close()

	wl, err := whitelist.New([]string{"rebind.test", "127.0.0.2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dns := &rebindResolver{}
	node := startTestNode(t, NodeOptions{Prefix: "fbrebind", Whitelist: wl, EgressResolver: dns, EgressNoPin: true})
	c := newBusClient(t, node)
	subj := node.Subjects()
	tab := node.Tabs()[0].Tab
	run := func(a protocol.Action) protocol.PlanResult {
		t.Helper()
		return c.plan(subj, tab, one(a))
	}
	eval := func(expr string) string {
		t.Helper()
		res := run(protocol.Action{Type: "eval", Expression: expr})
		if !res.OK {
			t.Fatalf("eval %s: %+v", expr, res)
		}
		return string(res.Results[0].Value)
	}
	site := "http://rebind.test:" + port
	load := func() {
		t.Helper()
		dns.mode.Store(rebindAllowed)
		if res := run(protocol.Action{Type: "navigate", URL: site + "/", Wait: true}); !res.OK {
			t.Fatalf("the allowed page: %+v", res)
		}
		if got := eval("document.title"); got != `"allowed"` {
			t.Fatalf("the allowed page's title: %s", got)
		}
	}
	fetch := func() string {
		return eval("fetch('/secret').then(r => r.text()).then(t => t.includes('secret') ? 'read' : 'refused', () => 'failed')")
	}
	socket := func(u string) string {
		return eval(`new Promise(done => {
			const ws = new WebSocket(` + strconv.Quote(u) + `);
			ws.onopen = () => done("open"); ws.onerror = () => done("error");
			setTimeout(() => done("timeout"), 3000);
		})`)
	}

	// Before the rebinding: the allowed server is reached, by every way.
	load()
	socket("ws://rebind.test:" + port + "/ws")
	if allowedSockets.Load() == 0 {
		t.Fatal("a WebSocket to the allowed address never reached it: the count below would prove nothing")
	}

	// The name now resolves to the internal address.
	dns.mode.Store(rebindInternal)
	if got := fetch(); got != `"failed"` {
		t.Errorf("fetch after rebinding: %s, want failed", got)
	}
	for _, u := range []string{"ws://rebind.test:" + port + "/ws", "wss://rebind.test:" + port + "/ws"} {
		if got := socket(u); got != `"error"` {
			t.Errorf("WebSocket to %s after rebinding: %s, want error", u, got)
		}
	}
	res := run(protocol.Action{Type: "navigate", URL: site + "/other", Wait: true})
	if res.OK || res.Code != protocol.CodePermissionDenied || !strings.Contains(res.Error, "rebind.test") || !strings.Contains(res.Error, rebindInternalAddr) {
		t.Errorf("navigate after rebinding: %+v, want permission_denied naming rebind.test and %s", res, rebindInternalAddr)
	}
	// The same address written as a URL, in the forms Chromium reads.
	for _, u := range []string{"http://" + rebindInternalAddr + ":" + port + "/", "http://2130706435:" + port + "/", "http://0x7f.3:" + port + "/", "http://[::ffff:" + rebindInternalAddr + "]:" + port + "/"} {
		if res := run(protocol.Action{Type: "navigate", URL: u}); res.OK || res.Code != protocol.CodePermissionDenied {
			t.Errorf("navigate %s: %+v, want permission_denied", u, res)
		}
	}

	// The name answers each address in turn: whatever the filter saw, the
	// proxy checks the address it connects to.
	load()
	dns.mode.Store(rebindAlternate)
	deniedBefore := node.egress.Denied()
	for range 4 {
		if got := fetch(); got == `"read"` {
			t.Errorf("fetch while the name alternates read the internal server")
		}
		socket("ws://rebind.test:" + port + "/ws")
		run(protocol.Action{Type: "navigate", URL: site + "/other", Wait: true})
		if got := eval("document.body ? document.body.innerText : ''"); strings.Contains(got, "secret") {
			t.Errorf("a navigation while the name alternates shows the internal page: %s", got)
		}
	}
	if node.egress.Denied() == deniedBefore {
		t.Errorf("the proxy refused nothing while the name alternated: the race was not run")
	}
	t.Logf("the internal server accepted %d connections; the proxy refused %d; %d lookups", internal.Load(), node.egress.Denied(), dns.lookups.Load())
	if n := internal.Load(); n != 0 {
		heard.Lock()
		defer heard.Unlock()
		t.Fatalf("the internal server accepted %d connections:\n%s", n, strings.Join(requests, "\n"))
	}
}

// twinListeners listens on the same free port of two loopback addresses.
func twinListeners(t *testing.T, a, b string) (net.Listener, net.Listener, string) {
	t.Helper()
	for try := 0; try < 20; try++ {
		la, err := net.Listen("tcp", net.JoinHostPort(a, "0"))
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(la.Addr().String())
		if lb, err := net.Listen("tcp", net.JoinHostPort(b, port)); err == nil {
			return la, lb, port
		}
		la.Close()
	}
	t.Fatal("no port free on both loopback addresses")
	return nil, nil, ""
}
