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
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// The proxy forwards HTTP and tunnels CONNECT to allowed hosts only; a
// denied host gets 403 and is never dialled.
func TestProxyAllowsOnlyCheckedHosts(t *testing.T) {
	var hits int
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		fmt.Fprint(w, "hello from ", r.URL.Path)
	}))
	defer target.Close()
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	looked := map[string]int{}
	every := func(host string, to netip.AddrPort) error { return nil } // this test is about names
	resolve := resolverFunc(func(host string) []netip.Addr {
		looked[host]++
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")} // every name is the target
	})
	p, err := Start(func(host string) error {
		if host == "good.test" {
			return nil
		}
		return errors.New("permission denied: " + host)
	}, NewDialer(every, resolve), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p.Allow(os.Getuid()) // the test is the browser
	defer p.Close()
	proxyURL, _ := url.Parse("http://" + p.Addr())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}

	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("http://good.test:" + port + "/page"); code != 200 || body != "hello from /page" {
		t.Fatalf("allowed GET: %d %q", code, body)
	}
	if code, body := get("http://evil.test:" + port + "/page"); code != http.StatusForbidden || !strings.Contains(body, "evil.test") {
		t.Fatalf("denied GET: %d %q", code, body)
	}

	connect := func(host string) (int, net.Conn) {
		t.Helper()
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", host, port, host, port)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, c
	}
	code, c := connect("good.test")
	if code != 200 {
		t.Fatalf("allowed CONNECT: %d", code)
	}
	fmt.Fprint(c, "GET /tunnelled HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n")
	body, _ := io.ReadAll(c)
	c.Close()
	if !strings.Contains(string(body), "hello from /tunnelled") {
		t.Fatalf("through the tunnel: %q", body)
	}
	code, c = connect("evil.test")
	c.Close()
	if code != http.StatusForbidden {
		t.Fatalf("denied CONNECT: %d", code)
	}
	if looked["evil.test"] != 0 {
		t.Fatalf("the proxy looked a denied host up: %v", looked)
	}
	if p.Denied() != 2 || hits != 2 {
		t.Fatalf("denied %d, target hits %d; want 2 and 2", p.Denied(), hits)
	}
}

// resolverFunc answers lookups with a function of the host.
type resolverFunc func(host string) []netip.Addr

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(host), nil
}
