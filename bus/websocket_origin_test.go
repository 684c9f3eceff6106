package bus_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testscale"
)

// upgradeStatus sends a WebSocket upgrade to the listener at addr with the
// given Host and extra headers, as a browser or curl would, and returns
// the status the server answers (101: upgraded).
func upgradeStatus(t *testing.T, addr, host string, header map[string]string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	req := "GET / HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	for k, v := range header {
		req += k + ": " + v + "\r\n"
	}
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%v: no answer: %v", header, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestWebSocketRefusesEveryOriginByDefault is the rebinding attack on
// the WebSocket listener: with no origins configured, a request that
// names any origin is refused before the upgrade, including a page on a
// name re-pointed to 127.0.0.1, whose origin is the Host it connects to
// (the same-origin rule alone passed it: 101 and the server's INFO).
// A client that names no origin (no browser) still upgrades.
func TestWebSocketRefusesEveryOriginByDefault(t *testing.T) {
	b, err := bus.Start(bus.Options{WebSocket: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	u, _ := url.Parse(b.WebSocketURL())
	addr, port := u.Host, u.Port()
	attacks := []struct {
		name, host string
		header     map[string]string
	}{
		{"a rebound name, same origin", "rebind.test:" + port, map[string]string{"Origin": "http://rebind.test:" + port}},
		{"the listener's own address", addr, map[string]string{"Origin": "http://" + addr}},
		{"localhost", "localhost:" + port, map[string]string{"Origin": "http://localhost:" + port}},
		{"another site", addr, map[string]string{"Origin": "http://evil.test"}},
		{"https, same host", addr, map[string]string{"Origin": "https://" + addr}},
		{"the placeholder origin itself", "no-web-page.invalid", map[string]string{"Origin": "https://no-web-page.invalid"}},
		{"the placeholder, its Host too", "no-web-page.invalid:443", map[string]string{"Origin": "https://no-web-page.invalid:443"}},
		{"a sandboxed page (null)", addr, map[string]string{"Origin": "null"}},
		{"the old header", "rebind.test:" + port, map[string]string{"Sec-WebSocket-Origin": "http://rebind.test:" + port}},
	}
	through := 0
	for _, a := range attacks {
		if status := upgradeStatus(t, addr, a.host, a.header); status != http.StatusForbidden {
			through++
			t.Errorf("%s: %d, want 403", a.name, status)
		}
	}
	t.Logf("%d of %d origins through", through, len(attacks))
	if status := upgradeStatus(t, addr, addr, nil); status != http.StatusSwitchingProtocols {
		t.Errorf("no origin (not a browser): %d, want 101", status)
	}
}

// TestWebSocketTakesOnlyTheListedOrigins: with origins configured, a
// listed one upgrades and a rebound same-origin page does not.
func TestWebSocketTakesOnlyTheListedOrigins(t *testing.T) {
	b, err := bus.Start(bus.Options{WebSocket: "127.0.0.1:0", WebSocketOrigins: []string{"http://127.0.0.1:8080"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	u, _ := url.Parse(b.WebSocketURL())
	if s := upgradeStatus(t, u.Host, u.Host, map[string]string{"Origin": "http://127.0.0.1:8080"}); s != http.StatusSwitchingProtocols {
		t.Errorf("the listed origin: %d, want 101", s)
	}
	host := "rebind.test:" + u.Port()
	if s := upgradeStatus(t, u.Host, host, map[string]string{"Origin": "http://" + host}); s != http.StatusForbidden {
		t.Errorf("a rebound same-origin page: %d, want 403", s)
	}
}

// TestWebSocketRebindingPageInChromium is the same attack from a real
// browser: Chromium maps rebind.test to 127.0.0.1 (as a rebound DNS
// answer would), loads a page from the listener's own port (its origin
// is then http://rebind.test:PORT) and opens a WebSocket to it, same
// origin as far as the browser is concerned. The listener refuses it.
func TestWebSocketRebindingPageInChromium(t *testing.T) {
	b, err := bus.Start(bus.Options{WebSocket: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	u, _ := url.Parse(b.WebSocketURL())
	page := "http://rebind.test:" + u.Port() + "/"
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	proc, err := cdpdriver.Launch(ctx, cdpdriver.LaunchOptions{Headless: true, Logger: zerolog.Nop(),
		Args: []string{"--host-resolver-rules=MAP rebind.test 127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	br, err := proc.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	id, err := br.NewTarget(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	p, err := br.ConnectPage(ctx, id, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The listener answers a plain GET with an error page: a document of
	// the rebound origin all the same.
	origin := ""
	for deadline := time.Now().Add(time.Minute); origin != strings.TrimSuffix(page, "/"); {
		if time.Now().After(deadline) {
			t.Fatalf("the page's origin is %q, want %s", origin, page)
		}
		v, err := p.Eval(ctx, "document.readyState === 'complete' ? location.origin : ''", 10*time.Second)
		if err == nil {
			_ = json.Unmarshal(v, &origin)
		}
		if origin != strings.TrimSuffix(page, "/") {
			time.Sleep(50 * time.Millisecond) // poll until the document is there
		}
	}
	script := fmt.Sprintf(`new Promise(done => {
		const ws = new WebSocket(%q);
		ws.onmessage = e => done('message: ' + e.data);
		ws.onopen = () => setTimeout(() => done('open'), 2000);
		ws.onerror = () => done('error');
		ws.onclose = () => done('closed');
	})`, "ws://rebind.test:"+u.Port()+"/")
	v, err := p.Eval(ctx, script, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var outcome string
	_ = json.Unmarshal(v, &outcome)
	if outcome != "error" && outcome != "closed" {
		t.Errorf("a rebound page's WebSocket: %s, want refused", outcome)
	}
}
