package actors

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/protocol"
)

// TestOwnListenersAreNoTarget is the node's own ports from the
// attacker's side. The whitelist allows 127.0.0.1, where the node's bus
// (client and WebSocket ports) and its egress proxy listen too. An agent
// fetches them (by address, in another spelling, by name, through a
// redirect of an allowed server) and navigates to them; a page on an
// allowed server tries them with fetch, an image and WebSockets. Every
// try is refused (permission_denied where an answer comes back), no
// answer carries the bus's INFO banner, the bus accepts no connection
// and the proxy is not reached through itself.
func TestOwnListenersAreNoTarget(t *testing.T) {
	wl, err := whitelist.New([]string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbown", Whitelist: wl, Bus: bus.Options{WebSocket: "127.0.0.1:0"}})
	if proc := node.Profiles()[0].Browser().Process(); browserUID(proc) == os.Getuid() {
		t.Fatal("the browser runs as the node's account: the proxy would take its own connection, and its count below would see nothing")
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		fmt.Fprint(w, "<title>allowed</title>allowed")
	}))
	defer site.Close()
	port := func(u string) string {
		p, err := url.Parse(u)
		if err != nil || p.Port() == "" {
			t.Fatalf("no port in %q", u)
		}
		return p.Port()
	}
	own := map[string]string{ // what -> port
		"bus client":    port(node.Bus().ClientURL()),
		"bus WebSocket": port(node.Bus().WebSocketURL()),
		"egress proxy":  port("http://" + node.egress.Addr()),
	}
	c := newBusClient(t, node)
	subj := node.Subjects()
	tab := node.Tabs()[0].Tab
	run := func(a protocol.Action) protocol.PlanResult {
		t.Helper()
		return c.plan(subj, tab, one(a))
	}
	connections := func() int64 {
		v, err := node.Bus().Server().Varz(nil)
		if err != nil {
			t.Fatal(err)
		}
		return int64(v.TotalConnections)
	}
	if res := run(protocol.Action{Type: "navigate", URL: site.URL + "/", Wait: true}); !res.OK {
		t.Fatalf("the allowed page: %+v", res)
	}
	connsBefore, strangersBefore := connections(), node.egress.Strangers()

	tried, through := 0, 0
	for what, p := range own {
		targets := []string{
			"http://127.0.0.1:" + p + "/",
			"http://2130706433:" + p + "/",
			"http://localhost:" + p + "/",
			site.URL + "/?to=" + url.QueryEscape("http://127.0.0.1:"+p+"/"),
		}
		for _, u := range targets {
			tried++
			var reply struct {
				OK    bool
				Code  protocol.Code
				Error string
				Body  string
			}
			c.ask(subj.HTTPFetch(), protocol.FetchRequest{URL: u}, &reply)
			if reply.OK || reply.Code != protocol.CodePermissionDenied || strings.Contains(reply.Error+reply.Body, "INFO") {
				through++
				t.Errorf("fetch %s (%s): %+v, want permission_denied", u, what, reply)
			}
		}
		for _, u := range targets[:2] {
			tried++
			if res := run(protocol.Action{Type: "navigate", URL: u}); res.OK || res.Code != protocol.CodePermissionDenied {
				through++
				t.Errorf("navigate %s (%s): %+v, want permission_denied", u, what, res)
			}
		}
		if res := run(protocol.Action{Type: "navigate", URL: site.URL + "/", Wait: true}); !res.OK {
			t.Fatalf("back to the allowed page: %+v", res)
		}
		// The page's own tries.
		res := run(protocol.Action{Type: "eval", Expression: `(async () => {
			const port = ` + strconv.Quote(p) + `, out = [];
			const fetched = u => fetch(u, {mode: 'no-cors'}).then(() => 'reached', () => 'failed');
			const socket = u => new Promise(done => {
				const ws = new WebSocket(u);
				ws.onopen = () => done('open'); ws.onerror = () => done('error');
				ws.onmessage = () => done('message');
			});
			const image = u => new Promise(done => {
				const img = new Image();
				img.onload = () => done('loaded'); img.onerror = () => done('error');
				img.src = u;
			});
			out.push(await fetched('http://127.0.0.1:' + port + '/'));
			out.push(await fetched('http://localhost:' + port + '/'));
			out.push(await image('http://127.0.0.1:' + port + '/x.png'));
			out.push(await socket('ws://127.0.0.1:' + port + '/'));
			out.push(await socket('ws://localhost:' + port + '/'));
			return out.join(',');
		})()`})
		tried += 5
		if !res.OK {
			t.Fatalf("the page's tries at the %s: %+v", what, res)
		}
		var got string
		_ = json.Unmarshal(res.Results[0].Value, &got)
		for _, outcome := range strings.Split(got, ",") {
			if outcome != "failed" && outcome != "error" {
				through++
			}
		}
		if got != "failed,failed,error,error,error" {
			t.Errorf("the page's tries at the %s: %s, want each failed", what, got)
		}
	}
	conns, strangers := connections()-connsBefore, node.egress.Strangers()-strangersBefore
	t.Logf("%d tries at the node's own ports: %d answered, %d connections at the bus, the proxy reached through itself %d times", tried, through, conns, strangers)
	if conns != 0 || strangers != 0 {
		t.Errorf("the bus accepted %d connections, the proxy was reached through itself %d times; want 0", conns, strangers)
	}
}
