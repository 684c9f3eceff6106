package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// deniedHost is a loopback address no whitelist of these tests allows: what
// reaches it got around the boundary. evil.test is mapped to it too, so the
// attacks also go by name.
const (
	deniedHost = "127.0.0.2"
	deniedName = "evil.test"
)

// listeners count every UDP datagram and TCP connection that reaches the
// denied host, per port.
type listeners struct {
	udp, tcp, tls, quic, web int // ports
	mu                       sync.Mutex
	got                      map[string]int // "udp/3478" -> count
	closers                  []func() error
	total                    atomic.Int64
}

func startListeners(t *testing.T) *listeners {
	t.Helper()
	l := &listeners{got: map[string]int{}}
	t.Cleanup(l.close)
	for _, p := range []*int{&l.udp, &l.quic} {
		c, err := net.ListenPacket("udp", deniedHost+":0")
		if err != nil {
			t.Fatal(err)
		}
		*p = c.LocalAddr().(*net.UDPAddr).Port
		l.closers = append(l.closers, c.Close)
		key := fmt.Sprintf("udp/%d", *p)
		go func() {
			buf := make([]byte, 64<<10)
			for {
				if _, _, err := c.ReadFrom(buf); err != nil {
					return
				}
				l.count(key)
			}
		}()
	}
	// TURN over TCP uses the UDP port's number too, so one URL reaches both.
	for i, p := range []*int{&l.tcp, &l.tls, &l.web} {
		addr := deniedHost + ":0"
		if i == 0 {
			addr = fmt.Sprintf("%s:%d", deniedHost, l.udp)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		*p = ln.Addr().(*net.TCPAddr).Port
		l.closers = append(l.closers, ln.Close)
		key := fmt.Sprintf("tcp/%d", *p)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				l.count(key)
				c.Close()
			}
		}()
	}
	return l
}

func (l *listeners) count(key string) {
	l.mu.Lock()
	l.got[key]++
	l.mu.Unlock()
	l.total.Add(1)
}

func (l *listeners) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.got)
}

func (l *listeners) close() {
	for _, c := range l.closers {
		c()
	}
}

// attacks are the page's calls (testdata/site/transports.html) aimed at l.
func (l *listeners) attacks() map[string]string {
	ports := fmt.Sprintf(`{udp:%d,tcp:%d,tls:%d,quic:%d,web:%d}`, l.udp, l.tcp, l.tls, l.quic, l.web)
	return map[string]string{
		"webrtc":       fmt.Sprintf("webrtc(%q, %s)", deniedHost, ports),
		"webtransport": fmt.Sprintf("webtransport(%q, %q, %s)", deniedHost, deniedName, ports),
		"predictors":   fmt.Sprintf("predictors(%q, %q, %s)", deniedHost, deniedName, ports),
		"others":       fmt.Sprintf("others(%q, %q, %s)", deniedHost, deniedName, ports),
	}
}

// runAttacks opens the attack page on an allowed host (127.0.0.1) of a
// node with (or without) a whitelist and runs every attack to its end.
func runAttacks(t *testing.T, l *listeners, prefix string, wl *whitelist.Whitelist, more ...string) string {
	t.Helper()
	_, tab := runAttacksOn(t, l, NodeOptions{Prefix: prefix, Whitelist: wl}, more...)
	return tab
}

// runAttacksOn is runAttacks on a node of the given options.
func runAttacksOn(t *testing.T, l *listeners, opts NodeOptions, more ...string) (*Node, string) {
	t.Helper()
	opts.Launch.Args = append(opts.Launch.Args, "--host-resolver-rules=MAP "+deniedName+" "+deniedHost)
	node := startTestNode(t, opts)
	c := newBusClient(t, node)
	subj := node.Subjects()
	tab := node.Tabs()[0].Tab
	if res := c.plan(subj, tab, one(protocol.Action{Type: "navigate", URL: site("/transports.html"), Wait: true})); !res.OK {
		t.Fatal(res)
	}
	attacks := l.attacks()
	for i, expr := range more {
		attacks[fmt.Sprint("more", i)] = expr
	}
	for name, expr := range attacks {
		res := c.plan(subj, tab, one(protocol.Action{Type: "eval", Expression: expr}))
		// A renderer that crashed under an attack let nothing out: the
		// page is loaded again and the attack tried again, so it runs.
		for try := 1; res.Code == protocol.CodePageCrashed && try <= 3; try++ {
			t.Logf("%s: the page crashed (try %d); loading it again", name, try)
			if res := c.plan(subj, tab, one(protocol.Action{Type: "navigate", URL: site("/transports.html"), Wait: true})); !res.OK {
				t.Fatal(res)
			}
			res = c.plan(subj, tab, one(protocol.Action{Type: "eval", Expression: expr}))
		}
		if !res.OK {
			t.Fatalf("%s: %+v", name, res)
		}
		t.Logf("%s: page saw %s; denied host got %s", name, res.Results[0].Value, l)
	}
	return node, tab
}

// TestTransportsNoSystemDNS: WebRTC looks its STUN and TURN names up
// itself (around --host-resolver-rules and the proxy), so a page could
// carry data out in the name. With a whitelist Chromium's DNS is
// DNS-over-HTTPS in secure mode at a server that cannot answer: its
// net-log shows no query to the machine's resolver (a DNS transaction
// attempt over UDP or TCP, or a getaddrinfo task) for the names the page
// tried. Without a whitelist the same page's lookups are counted, so the
// count can see them.
func TestTransportsNoSystemDNS(t *testing.T) {
	t.Parallel() // its own nodes, browsers and listeners
	l := startListeners(t)
	defer l.close()
	wl, err := whitelist.New([]string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ports := fmt.Sprintf(`{udp:%d,tcp:%d,tls:%d,quic:%d,web:%d}`, l.udp, l.tcp, l.tls, l.quic, l.web)
	lookups := func(prefix string, wl *whitelist.Whitelist) int {
		netlog := filepath.Join(testdir.Writable(t), "netlog.json") // the browser writes it as its own account
		opts := NodeOptions{Prefix: prefix, Whitelist: wl}
		opts.Launch.Args = []string{"--log-net-log=" + netlog}
		node, _ := runAttacksOn(t, l, opts, fmt.Sprintf("webrtc(%q, %s)", "leak-by-dns.test", ports))
		node.Close() // Chromium finishes its net-log as it exits
		return systemLookups(t, netlog)
	}
	if n := lookups("fbtransdns", wl); n != 0 {
		t.Fatalf("with a whitelist, %d lookups went to the machine's resolver", n)
	}
	if n := lookups("fbtransdnsctl", nil); n == 0 {
		t.Fatal("without a whitelist no lookup was counted: the count does not see them")
	}
}

// systemLookups counts, in a Chromium net-log, the lookups that asked the
// machine's resolver: DNS transaction attempts over UDP or TCP (not over
// HTTPS) and getaddrinfo tasks.
func systemLookups(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A log cut short at exit lacks its closing; it is completed here.
	if data = bytes.TrimRight(data, " \r\n"); !bytes.HasSuffix(data, []byte("}")) {
		data = append(bytes.TrimRight(data, ","), "]}"...)
	}
	var log struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type int `json:"type"`
		} `json:"events"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatalf("net-log: %v", err)
	}
	types := log.Constants.LogEventTypes
	attempt, ok1 := types["DNS_TRANSACTION_ATTEMPT"]
	task, ok2 := types["HOST_RESOLVER_SYSTEM_TASK"]
	if !ok1 || !ok2 {
		t.Fatal("net-log: Chromium no longer names its DNS events as this test expects")
	}
	n := 0
	for _, e := range log.Events {
		if e.Type == attempt || e.Type == task {
			n++
		}
	}
	return n
}

// TestTransportsBoundary attacks the whitelist from a page on an allowed
// host with every non-HTTP transport Chromium has: WebRTC (STUN and TURN
// over UDP, TCP and TLS, by address and by name, and connectivity checks to
// remote host candidates), WebTransport (QUIC), DNS prefetch and
// preconnect, beacons, keepalive fetches, EventSource and WebSockets. The
// UDP and TCP listeners on the denied host count what arrives: nothing may.
func TestTransportsBoundary(t *testing.T) {
	t.Parallel() // its own node, browser and listeners
	l := startListeners(t)
	wl, err := whitelist.New([]string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// WebTransport to the allowed host itself still may not go around the
	// proxy: its QUIC packets would carry whatever the page wants, unchecked.
	allowed, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	var allowedGot atomic.Int64
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, _, err := allowed.ReadFrom(buf); err != nil {
				return
			}
			allowedGot.Add(1)
		}
	}()
	port := allowed.LocalAddr().(*net.UDPAddr).Port
	runAttacks(t, l, "fbtransports", wl, fmt.Sprintf("webtransport(%q, %q, {quic:%d})", "127.0.0.1", "localhost", port))
	if n := l.total.Load(); n != 0 {
		t.Fatalf("%d packets/connections reached the denied host: %s", n, l)
	}
	if n := allowedGot.Load(); n != 0 {
		t.Fatalf("%d QUIC packets went straight to the allowed host, around the proxy", n)
	}
}

// TestTransportsControl runs the same attacks without a whitelist: the
// listeners must count them, or TestTransportsBoundary's 0 proves nothing.
func TestTransportsControl(t *testing.T) {
	t.Parallel() // its own node, browser and listeners
	l := startListeners(t)
	runAttacks(t, l, "fbtransctl", nil)
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	want := []string{fmt.Sprintf("udp/%d", l.udp), fmt.Sprintf("udp/%d", l.quic), fmt.Sprintf("tcp/%d", l.web)}
	for {
		l.mu.Lock()
		missing := ""
		for _, k := range want {
			if l.got[k] == 0 {
				missing = k
			}
		}
		l.mu.Unlock()
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("without a whitelist nothing reached %s (got %s): the listeners do not see the attacks", missing, l)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTransportsAttachRefused: a whitelist cannot be enforced on a browser
// framebus did not start (no egress proxy, no WebRTC policy), so an attach
// profile is refused with permission_denied, at start and on connect, and
// the attacks never run there: the listeners count nothing.
func TestTransportsAttachRefused(t *testing.T) {
	t.Parallel() // its own node, browsers and listeners
	l := startListeners(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	outside, err := cdpdriver.Launch(ctx, cdpdriver.LaunchOptions{Headless: true, DebuggingPort: true, Logger: zerolog.Nop(), // a user's own Chrome
		Args: []string{"--host-resolver-rules=MAP " + deniedName + " " + deniedHost}})
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	wl, err := whitelist.New([]string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbtransattach", Whitelist: wl,
		Profiles: []ProfileOptions{{Name: "chrome", Attach: outside.DevToolsURL()}}})
	c := newBusClient(t, node)
	subj := node.Subjects()

	var r map[string]any
	raw := c.ask(subj.Profile("chrome", protocol.OpConnect), nil, &r)
	if !strings.Contains(string(raw), `"permission_denied"`) || !strings.Contains(string(raw), "WebRTC") {
		t.Fatalf("connect with a whitelist: %s", raw)
	}
	var pages protocol.TabList
	c.ask(subj.Profile("chrome", protocol.OpPages), nil, &pages)
	for _, tab := range pages.Tabs {
		if tab.Profile == "chrome" {
			t.Fatalf("a tab of the refused profile has an actor: %+v", pages)
		}
	}
	for _, tab := range node.Tabs() {
		if tab.Profile == "chrome" {
			t.Fatalf("a tab of the refused profile has an actor: %+v", tab)
		}
	}
	if n := l.total.Load(); n != 0 {
		t.Fatalf("%d packets/connections reached the denied host: %s", n, l)
	}
}
