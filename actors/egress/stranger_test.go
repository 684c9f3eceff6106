package egress

import (
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
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/internal/testscale"
)

// TestProxyTakesOnlyTheBrowsersAccount is a local user at the egress
// proxy: uid 65534 (through setpriv, the test being root) runs curl -x
// through it to a whitelisted host, as a plain request and as a CONNECT
// tunnel. The proxy is told the browser's account is the test's own, so
// it refuses both (403 naming the uid) and the host sees nothing from
// them; the test's own request goes through. Told that 65534 is the
// browser's, the same curl goes through: the refusal is the account's.
func TestProxyTakesOnlyTheBrowsersAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs curl as uid 65534 with setpriv, which needs root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed: ", err)
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is needed: ", err)
	}
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "whitelisted content")
	}))
	defer target.Close()
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	every := func(host string, to netip.AddrPort) error { return nil }
	p, err := Start(func(host string) error {
		if host == "good.test" {
			return nil
		}
		return errors.New("permission denied: " + host)
	}, NewDialer(every, resolverFunc(func(string) []netip.Addr { return []netip.Addr{netip.MustParseAddr("127.0.0.1")} })), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Allow(os.Getuid())
	page := "http://good.test:" + port + "/"

	asNobody := func(tunnel bool) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		defer cancel()
		args := []string{"--reuid=65534", "--regid=65534", "--clear-groups", curl, "-sS", "--fail-with-body", "--max-time", "30", "-x", "http://" + p.Addr()}
		if tunnel {
			args = append(args, "-p") // CONNECT, as for https and wss
		}
		out, err := exec.CommandContext(ctx, setpriv, append(args, page)...).CombinedOutput()
		return string(out), err
	}
	through := 0
	for _, tunnel := range []bool{false, true} {
		before := hits.Load()
		out, err := asNobody(tunnel)
		if err == nil || hits.Load() != before {
			through++
			t.Errorf("uid 65534, tunnel %v: %q (err %v), the host saw %d requests", tunnel, out, err, hits.Load()-before)
		}
		if !tunnel && !strings.Contains(out, "uid 65534") {
			t.Errorf("uid 65534's refusal: %q, want one naming the uid", out)
		}
	}
	if n := p.Strangers(); n != 2 {
		t.Errorf("refused %d strangers, want 2", n)
	}
	t.Logf("another account through the proxy: %d of 2", through)

	// The browser's account (here the test's) goes through.
	proxyURL, _ := url.Parse("http://" + p.Addr())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: time.Minute}
	resp, err := client.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "whitelisted content" {
		t.Fatalf("the browser's account: %d %q", resp.StatusCode, body)
	}
	// And 65534, once it is the browser's account.
	p.Allow(65534)
	for _, tunnel := range []bool{false, true} {
		if out, err := asNobody(tunnel); err != nil || out != "whitelisted content" {
			t.Errorf("uid 65534 allowed, tunnel %v: %q %v", tunnel, out, err)
		}
	}
}
