package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/internal/testscale"
)

// Where the rebinding tests' two servers are: the allowed one on an
// address the whitelist lists (127.0.0.2), and the "internal" one on
// 127.0.0.1, which stands for loopback and every internal service
// (framebus's own bus and proxy listen there). Both listen on the same
// port, so one URL, http://rebind.test:PORT/, reaches either, depending
// only on what the name resolves to: what a rebinding DNS server does.
const (
	allowedAddr  = "127.0.0.2"
	internalAddr = "127.0.0.1"
	rebindName   = "rebind.test"
)

// rebindWhitelist allows the name and the allowed address, nothing else.
func rebindWhitelist(t *testing.T) *whitelist.Whitelist {
	t.Helper()
	wl, err := whitelist.New([]string{rebindName, allowedAddr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return wl
}

// rebinder answers rebindName with the allowed address the first time
// and the internal one ever after, and counts the lookups.
type rebinder struct {
	lookups atomic.Int64
}

func (r *rebinder) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if host != rebindName {
		return nil, fmt.Errorf("no such host %s", host)
	}
	if r.lookups.Add(1) == 1 {
		return []netip.Addr{netip.MustParseAddr(allowedAddr)}, nil
	}
	return []netip.Addr{netip.MustParseAddr(internalAddr)}, nil
}

// twins are the allowed and the internal server on one port; internal
// counts every connection that reaches it (a TCP accept, before any HTTP).
type twins struct {
	port     string
	allowed  atomic.Int64 // requests served by the allowed server
	internal atomic.Int64 // connections accepted by the internal one
}

func startTwins(t *testing.T) *twins {
	t.Helper()
	tw := &twins{}
	var allowedLn, internalLn net.Listener
	for try := 0; ; try++ {
		ln, err := net.Listen("tcp", allowedAddr+":0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		if other, err := net.Listen("tcp", internalAddr+":"+port); err == nil {
			allowedLn, internalLn, tw.port = ln, other, port
			break
		}
		ln.Close()
		if try == 20 {
			t.Fatal("no port free on both loopback addresses")
		}
	}
	allowed := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw.allowed.Add(1)
		if r.Header.Get("Upgrade") == "websocket" {
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			c.Close()
			return
		}
		fmt.Fprint(w, "allowed")
	}))
	allowed.Listener.Close()
	allowed.Listener = allowedLn
	// Every request dials anew, so every one is checked (a kept-alive
	// connection to a checked address is fine, but would hide the check).
	allowed.Config.SetKeepAlivesEnabled(false)
	allowed.Start()
	t.Cleanup(allowed.Close)
	go func() {
		for {
			c, err := internalLn.Accept()
			if err != nil {
				return
			}
			tw.internal.Add(1)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\ninternal")
			c.Close()
		}
	}()
	t.Cleanup(func() { internalLn.Close() })
	return tw
}

// The acceptance case at the proxy, for each way through it (a plain
// http request, a CONNECT tunnel as for https and wss, a plain ws
// upgrade): the name resolves to the allowed address, then to the
// internal one. The first request reaches the allowed server; the second
// is refused with 403 naming the name and the address, and the internal
// server accepts no connection at all.
func TestProxyRebinding(t *testing.T) {
	tw := startTwins(t)
	base := "http://" + rebindName + ":" + tw.port
	ways := map[string]func(proxy string) (int, string){
		"http": func(proxy string) (int, string) {
			return viaProxy(t, proxy, "GET "+base+"/page HTTP/1.1\r\nHost: "+rebindName+":"+tw.port+"\r\n\r\n")
		},
		"connect": func(proxy string) (int, string) {
			return viaProxy(t, proxy, "CONNECT "+rebindName+":"+tw.port+" HTTP/1.1\r\nHost: "+rebindName+":"+tw.port+"\r\n\r\n")
		},
		"ws": func(proxy string) (int, string) {
			return viaProxy(t, proxy, "GET "+base+"/ws HTTP/1.1\r\nHost: "+rebindName+":"+tw.port+
				"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
		},
	}
	for name, way := range ways {
		t.Run(name, func(t *testing.T) {
			wl := rebindWhitelist(t)
			r := &rebinder{}
			p, err := Start(wl.CheckHost, NewDialer(wl.CheckAddrPort, r).PinFor(0), zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			p.Allow(os.Getuid()) // the test is the browser
			defer p.Close()
			before := tw.allowed.Load()
			if code, body := way(p.Addr()); code >= 300 {
				t.Fatalf("first, at the allowed address: %d %q", code, body)
			}
			if tw.allowed.Load() == before && name != "connect" {
				t.Fatalf("the allowed server saw nothing")
			}
			code, body := way(p.Addr())
			if code != http.StatusForbidden || !strings.Contains(body, rebindName) || !strings.Contains(body, internalAddr) {
				t.Errorf("then, resolving to %s: %d %q, want 403 naming %s and the address", internalAddr, code, body, rebindName)
			}
			if r.lookups.Load() != 2 || p.Denied() != 1 {
				t.Errorf("lookups %d, denied %d; want 2 and 1", r.lookups.Load(), p.Denied())
			}
		})
	}
	if n := tw.internal.Load(); n != 0 {
		t.Fatalf("the internal server accepted %d connections", n)
	}
}

// viaProxy sends one raw request to the proxy and reads the answer's
// status and (for a non-2xx answer) its body.
func viaProxy(t *testing.T, proxy, request string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, request)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	return resp.StatusCode, ""
}

// The Dialer dials what it checked: the address, never the name; a
// mixed answer is refused whole; an IP address is checked in every form
// without a lookup; a checked answer is pinned (one lookup for the filter
// and the proxy), and with no pin every call looks the name up again.
func TestDialer(t *testing.T) {
	tw := startTwins(t)
	wl := rebindWhitelist(t)
	var mu sync.Mutex
	answer := []netip.Addr{netip.MustParseAddr(allowedAddr)}
	lookups := 0
	resolver := resolverFunc(func(host string) []netip.Addr {
		mu.Lock()
		defer mu.Unlock()
		lookups++
		return answer
	})
	setAnswer := func(addrs ...string) {
		mu.Lock()
		defer mu.Unlock()
		answer = nil
		for _, a := range addrs {
			answer = append(answer, netip.MustParseAddr(a))
		}
	}
	ctx := context.Background()

	d := NewDialer(wl.CheckAddrPort, resolver)
	c, err := d.DialContext(ctx, "tcp", rebindName+":"+tw.port)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RemoteAddr().String(); got != allowedAddr+":"+tw.port {
		t.Errorf("dialled %s", got)
	}
	c.Close()
	setAnswer(internalAddr) // rebinding within the pin: the checked answer holds
	if _, err := d.Resolve(ctx, rebindName, 80); err != nil || lookups != 1 {
		t.Errorf("pinned: %v after %d lookups", err, lookups)
	}

	d = NewDialer(wl.CheckAddrPort, resolver).PinFor(0)
	for _, answer := range [][]string{{internalAddr}, {allowedAddr, internalAddr}, {internalAddr, allowedAddr}, {"::ffff:" + internalAddr}} {
		setAnswer(answer...)
		_, err := d.DialContext(ctx, "tcp", rebindName+":"+tw.port)
		var denied *DeniedError
		if !errors.As(err, &denied) || denied.Addr.String() != internalAddr || denied.Host != rebindName {
			t.Errorf("answer %v: %v, want refused for %s", answer, err, internalAddr)
		}
		var wlDenied *whitelist.DeniedError
		if !errors.As(err, &wlDenied) {
			t.Errorf("answer %v: %v does not unwrap to the whitelist's error", answer, err)
		}
	}
	before := lookups
	for _, host := range []string{internalAddr, "::ffff:" + internalAddr, "[::ffff:7f00:1]", "::1", "[::1]", "0.0.0.0", "64:ff9b::7f00:1"} {
		if _, err := d.Resolve(ctx, host, 80); err == nil {
			t.Errorf("address %s allowed", host)
		}
	}
	if addrs, err := d.Resolve(ctx, "[::ffff:"+allowedAddr+"]", 80); err != nil || len(addrs) != 1 || addrs[0].String() != allowedAddr {
		t.Errorf("the listed address, mapped: %v %v", addrs, err)
	}
	if lookups != before {
		t.Errorf("an IP address was looked up")
	}
	if n := tw.internal.Load(); n != 0 {
		t.Fatalf("the internal server accepted %d connections", n)
	}
}

// A listener of the node's own (here one the test opens on 127.0.0.1,
// which the whitelist allows) is never dialled, by address or by a name
// whose answer was pinned for another port: the pinned answer is checked
// again at each port. Its port named in the whitelist, it is.
func TestDialerKeepsTheNodesListenersOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	own := &whitelist.Listeners{}
	if err := own.Add("the bus's client port", "nats://"+ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var lookups atomic.Int64
	resolver := resolverFunc(func(string) []netip.Addr {
		lookups.Add(1)
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	})
	wl, err := whitelist.New([]string{"own.test", "127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDialer(wl.WithListeners(own).CheckAddrPort, resolver)
	ctx := context.Background()
	if _, err := d.Resolve(ctx, "own.test", 80); err != nil {
		t.Fatalf("own.test at port 80: %v", err)
	}
	for _, addr := range []string{"own.test:" + port, "127.0.0.1:" + port, "[::ffff:127.0.0.1]:" + port, "localhost:" + port} {
		c, err := d.DialContext(ctx, "tcp", addr)
		var denied *DeniedError
		if !errors.As(err, &denied) || denied.Port == 0 {
			if c != nil {
				c.Close()
			}
			t.Errorf("%s: %v, want refused as the node's own", addr, err)
		}
	}
	if lookups.Load() != 2 { // own.test once (then pinned), localhost once
		t.Errorf("%d lookups: the pinned answer was not used", lookups.Load())
	}
	named, _ := whitelist.New([]string{"own.test", "127.0.0.1:" + port}, nil)
	c, err := NewDialer(named.WithListeners(own).CheckAddrPort, resolver).DialContext(ctx, "tcp", "own.test:"+port)
	if err != nil {
		t.Fatalf("the listener named in the whitelist: %v", err)
	}
	c.Close()
	for deadline := time.Now().Add(testscale.D(10 * time.Second)); accepted.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // the accept goroutine counts it
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("the listener accepted %d connections, want the named one only", n)
	}
}
