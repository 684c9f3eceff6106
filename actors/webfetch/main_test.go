package webfetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framebus/framebus/actors/egress"
	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/protocol"
)

// The tests' network, all on loopback: the allowed servers listen on
// 127.0.0.2, which the whitelist lists by address, and every name under
// example.test resolves there; the denied server listens on 127.0.0.1,
// which the whitelist does not list (loopback is a special range), and
// counts every connection it accepts. rebound.example.test is an allowed
// name that resolves to 127.0.0.1 (DNS rebinding): only the Dialer stops
// it.
const (
	allowedAddr  = "127.0.0.2"
	deniedAddr   = "127.0.0.1"
	reboundName  = "rebound.example.test"
	testPatterns = "127.0.0.2 example.test *.example.test"
)

// testResolver answers every name under example.test, and only those.
type testResolver struct{}

func (testResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	switch {
	case host == reboundName:
		return []netip.Addr{netip.MustParseAddr(deniedAddr)}, nil
	case host == "example.test" || strings.HasSuffix(host, ".example.test"):
		return []netip.Addr{netip.MustParseAddr(allowedAddr)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// newFetcher is a Fetcher as a node makes it: the real whitelist's Check
// and the real egress Dialer over it. o's other fields are kept.
func newFetcher(t testing.TB, o Options) *Fetcher {
	t.Helper()
	wl, err := whitelist.New(strings.Fields(testPatterns), nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Check = wl.Check
	o.Dialer = egress.NewDialer(wl.CheckAddrPort, testResolver{})
	f := New(o)
	t.Cleanup(f.Close)
	return f
}

// serveOn starts h on addr (a loopback address) at a free port.
func serveOn(t testing.TB, addr string, h http.Handler) *httptest.Server {
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

// deniedServer listens on the denied address and counts the connections
// it accepts (a TCP accept, before any HTTP), answering each with a page.
type deniedServer struct {
	port  string
	conns atomic.Int64
}

func startDenied(t testing.TB) *deniedServer {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(deniedAddr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	d := &deniedServer{}
	_, d.port, _ = net.SplitHostPort(ln.Addr().String())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d.conns.Add(1)
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\ndenied")
			c.Close()
		}
	}()
	return d
}

// port is a server's port.
func port(srv *httptest.Server) string {
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return p
}

// fetch runs one fetch with no deadline but the Fetcher's own, and fails
// the test if it has not answered well past that (30 s at most in these
// tests): a fetch that hangs fails instead of hanging the test.
func fetch(t testing.TB, f *Fetcher, req protocol.FetchRequest) (protocol.FetchReply, error) {
	t.Helper()
	type result struct {
		reply protocol.FetchReply
		err   error
	}
	done := make(chan result, 1)
	go func() {
		r, err := f.Fetch(context.Background(), req)
		done <- result{r, err}
	}()
	select {
	case r := <-done:
		return r.reply, r.err
	case <-time.After(45 * time.Second):
		t.Fatalf("fetch %s: no answer within 45 s", req.URL)
		return protocol.FetchReply{}, nil
	}
}

// mustFetch is fetch that fails the test on an error.
func mustFetch(t testing.TB, f *Fetcher, req protocol.FetchRequest) protocol.FetchReply {
	t.Helper()
	r, err := fetch(t, f, req)
	if err != nil {
		t.Fatalf("fetch %s %s: %v", req.Method, req.URL, err)
	}
	return r
}

// wantCode fails the test unless err is a *protocol.Error with code and
// a message holding every one of words.
func wantCode(t testing.TB, err error, code protocol.Code, words ...string) {
	t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a *protocol.Error %s", err, err, code)
	}
	t.Logf("%s: %s", pe.Code, pe.Message)
	if pe.Code != code {
		t.Fatalf("code %s (%v), want %s", pe.Code, pe, code)
	}
	for _, w := range words {
		if !strings.Contains(pe.Message, w) {
			t.Errorf("message %q does not say %q", pe.Message, w)
		}
	}
}
