package webfetch

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// deniedSpellings are the ways of writing the denied server at port p
// (and other schemes) an attacker tries: every one must be refused.
func deniedSpellings(p string) []string {
	return []string{
		"http://127.0.0.1:" + p + "/",
		"http://2130706433:" + p + "/",
		"http://0x7f000001:" + p + "/",
		"http://0x7f.1:" + p + "/",
		"http://0177.0.0.1:" + p + "/",
		"http://0177.1:" + p + "/",
		"http://127.1:" + p + "/",
		"http://127.0.1:" + p + "/",
		"http://127.0.0.1.:" + p + "/",
		"http://0:" + p + "/",
		"http://0.0.0.0:" + p + "/",
		"http://[::]:" + p + "/",
		"http://[::1]:" + p + "/",
		"http://[::ffff:127.0.0.1]:" + p + "/",
		"http://[::ffff:7f00:1]:" + p + "/",
		"http://[0:0:0:0:0:ffff:127.0.0.1]:" + p + "/",
		"http://[::127.0.0.1]:" + p + "/",
		"http://[64:ff9b::127.0.0.1]:" + p + "/",
		"http://[2002:7f00:1::]:" + p + "/",
		"http://example.test@127.0.0.1:" + p + "/",
		"http://example.test:" + p + "@127.0.0.1:" + p + "/",
		"http://127.0.0.1:" + p + "\\@example.test/",
		"http://127.0.0.1:" + p + "#@example.test/",
		"http://127.0.0.1:" + p + "?@example.test/",
		"http://%31%32%37.0.0.1:" + p + "/",
		"http://１２７．０．０．１:" + p + "/",
		"http://127。0。0。1:" + p + "/",
		"HTTP://127.0.0.1:" + p + "/",
		"https://127.0.0.1:" + p + "/",
		"//127.0.0.1:" + p + "/",
		"\\\\127.0.0.1:" + p + "/",
		"/\\127.0.0.1:" + p + "/",
		"http:127.0.0.1:" + p + "/",
		"http:/127.0.0.1:" + p + "/",
		"http:\\\\127.0.0.1:" + p + "/",
		" http://127.0.0.1:" + p + "/",
		"http://127.0.0.1:" + p + "/\r\nX: y",
		"http://" + reboundName + ":" + p + "/",
		"http://" + strings.ToUpper(reboundName) + ":" + p + "/",
		"http://" + reboundName + ".:" + p + "/",
		"http://localhost:" + p + "/",
		"http://LOCALHOST.:" + p + "/",
		"http://[::1%25lo]:" + p + "/",
		"http://[::ffff:127.0.0.1%25lo]:" + p + "/",
		"http://[fe80::1%25lo]:" + p + "/",
		"http://example.test%2f@127.0.0.1:" + p + "/",
		"http://127.0.0.1%2f.example.test:" + p + "/",
		"http://127.0.0.1%00.example.test:" + p + "/",
		"http://127.0.0.1:" + p + "%2f@example.test/",
		"http://[::1]:" + p + "@example.test/",
		"http://example.test:" + p + "\\127.0.0.1/",
		"http://0177.0.0.01:" + p + "/",
		"http://0x7F.0x0.0x0.0x1:" + p + "/",
		"http://127.0.0.1:" + p + ":80/",
		"http://127.0.0.1:0" + p + "/",
		"file:///etc/passwd",
		"gopher://127.0.0.1:" + p + "/_GET%20/",
		"data:text/plain,hello",
		"ftp://127.0.0.1:" + p + "/",
		"ws://127.0.0.1:" + p + "/",
		"javascript:alert(1)",
	}
}

// The attacker is a web server the fetch reaches: an allowed page that
// redirects to the denied server in every spelling of its address (and
// to other schemes). Each spelling is one attack; it got through when
// the denied server accepted a connection or the fetch answered OK.
func TestProbeRedirectToDeniedInEverySpelling(t *testing.T) {
	denied := startDenied(t)
	srv := serveOn(t, allowedAddr, http.HandlerFunc(redirector))
	f := newFetcher(t, Options{Timeout: 5 * time.Second})
	targets := deniedSpellings(denied.port)
	var through []string
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, target := range targets {
			before := denied.conns.Load()
			r, err := fetch(t, f, protocol.FetchRequest{URL: redirectTo(srv.URL, status, target)})
			reached := denied.conns.Load() - before
			if reached > 0 || (err == nil && (r.Status != status && !strings.HasPrefix(r.URL, srv.URL))) {
				through = append(through, fmt.Sprintf("%d %q: %d connections, reply %+v, err %v", status, target, reached, r.URL, err))
				continue
			}
			if err == nil {
				// Go resolved it to a path on the allowed server (a relative
				// Location): the allowed server answered, which is no way out.
				continue
			}
			if c := protocol.CodeOf(err); c != protocol.CodePermissionDenied && c != protocol.CodeFetchFailed {
				through = append(through, fmt.Sprintf("%d %q: code %s: %v", status, target, c, err))
			}
		}
	}
	t.Logf("%d redirects to the denied server, %d got through", 5*len(targets), len(through))
	for _, s := range through {
		t.Errorf("got through: %s", s)
	}
	if denied.conns.Load() != 0 {
		t.Errorf("the denied server accepted %d connections", denied.conns.Load())
	}
}

// The same spellings as the first URL of a fetch (with white space
// around it too).
func TestProbeFirstURLToDeniedInEverySpelling(t *testing.T) {
	denied := startDenied(t)
	f := newFetcher(t, Options{Timeout: 5 * time.Second})
	targets := append(deniedSpellings(denied.port), "  http://127.0.0.1:"+denied.port+"/", "http://127.0.0.1:"+denied.port+"\t/")
	through := 0
	for _, target := range targets {
		before := denied.conns.Load()
		_, err := fetch(t, f, protocol.FetchRequest{URL: target})
		// Refused (permission_denied), not a URL (bad_request), or no
		// connection at all (fetch_failed: a name no resolver knows).
		c := protocol.CodeOf(err)
		if denied.conns.Load() > before || err == nil || (c != protocol.CodePermissionDenied && c != protocol.CodeBadRequest && c != protocol.CodeFetchFailed) {
			through++
			t.Errorf("got through: %q: err %v (%s)", target, err, c)
		}
	}
	t.Logf("%d first URLs at the denied server, %d got through", len(targets), through)
}

// The Host header trick: the URL names an allowed server that hosts a
// denied site too (a CDN, or any virtual-host server), and the Host
// header names the denied site in a spelling the whitelist's parse and
// the server's parse read differently. The server here routes by host as
// Go's ServeMux does (the Host header's host, the port after its last
// colon stripped), as many servers do.
func TestProbeHostHeaderNamesADeniedSite(t *testing.T) {
	var deniedSite atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("denied.test/", func(w http.ResponseWriter, r *http.Request) {
		deniedSite.Add(1)
		fmt.Fprint(w, "the denied site")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "the allowed site") })
	srv := serveOn(t, allowedAddr, mux)
	f := newFetcher(t, Options{Timeout: 5 * time.Second})
	hosts := []string{
		"denied.test",
		"DENIED.TEST",
		"denied.test.",
		"denied.test:80",
		"example.test@denied.test",
		"denied.test:80@example.test",
		"denied.test:@example.test",
		"denied.test:1@a.example.test",
		"denied.test\\.example.test",
		"denied.test/.example.test",
		"denied.test#.example.test",
		"denied.test?.example.test",
		"denied.test .example.test",
		"denied.test,.example.test",
		"denied.test;.example.test",
		"[denied.test]",
	}
	through := 0
	for _, host := range hosts {
		before := deniedSite.Load()
		r, err := fetch(t, f, protocol.FetchRequest{URL: srv.URL + "/", Headers: map[string]string{"Host": host}})
		if deniedSite.Load() > before {
			through++
			t.Errorf("got through: Host %q reached the denied site (reply %q, err %v)", host, r.Body, err)
			continue
		}
		t.Logf("Host %q: %q %v", host, r.Body, err)
	}
	t.Logf("%d Host headers naming the denied site, %d got through", len(hosts), through)
}

// A hostile server's answers cost no more than the caps: a gzip bomb, an
// endless body, a huge header block, a huge Location, status line and
// many redirects. Each is a fetch that must end with an error or a
// truncated answer within bounds.
func TestProbeHostileAnswers(t *testing.T) {
	const maxBytes = 64 << 10
	// A gzip bomb: 64 MiB of zeros in about 64 KB.
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 64 {
		zw.Write(zeros)
	}
	zw.Close()
	hugeHeader := strings.Repeat("x", 9<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/plain")
		w.Write(bomb.Bytes())
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("a"), 32<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Huge", hugeHeader)
		fmt.Fprint(w, "small")
	})
	mux.HandleFunc("/location", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/final?"+hugeHeader)
		w.WriteHeader(302)
	})
	srv := serveOn(t, allowedAddr, mux)
	f := newFetcher(t, Options{MaxBytes: maxBytes, Timeout: 10 * time.Second})

	r, err := fetch(t, f, protocol.FetchRequest{URL: srv.URL + "/bomb"})
	if err == nil && (len(r.Body) > maxBytes || !r.Truncated) {
		t.Errorf("gzip bomb: %d bytes of body, truncated %v", len(r.Body), r.Truncated)
	}
	t.Logf("gzip bomb: %d bytes kept, truncated %v, err %v", len(r.Body), r.Truncated, err)
	r, err = fetch(t, f, protocol.FetchRequest{URL: srv.URL + "/endless"})
	if err != nil || !r.Truncated || len(r.Body) != maxBytes {
		t.Errorf("endless body: %d bytes, truncated %v, err %v", len(r.Body), r.Truncated, err)
	}
	for _, path := range []string{"/headers", "/location"} {
		r, err = fetch(t, f, protocol.FetchRequest{URL: srv.URL + path})
		size := 0
		for k, vs := range r.Headers {
			size += len(k)
			for _, v := range vs {
				size += len(v)
			}
		}
		for _, h := range r.Redirects {
			size += len(h.URL)
		}
		size += len(r.URL)
		t.Logf("%s: %d bytes of headers, hops and URL in the reply, err %v", path, size, err)
		if err != nil && protocol.CodeOf(err) != protocol.CodeFetchFailed {
			t.Errorf("%s: %v, want fetch_failed", path, err)
		}
		if size > 1<<20 {
			t.Errorf("%s: the reply carries %d bytes besides its body (the body's cap is %d)", path, size, maxBytes)
		}
	}
}

// Many redirects: the cap holds whatever the request asks.
func TestProbeRedirectCapHolds(t *testing.T) {
	var asked atomic.Int64
	srv := serveOn(t, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, fmt.Sprintf("/r%d", asked.Load()), http.StatusFound)
	}))
	f := newFetcher(t, Options{MaxRedirects: 5})
	_, err := fetch(t, f, protocol.FetchRequest{URL: srv.URL + "/", MaxRedirects: 1000})
	wantCode(t, err, protocol.CodeFetchFailed, "too many redirects")
	if asked.Load() != 6 {
		t.Errorf("%d requests for a cap of 5 redirects", asked.Load())
	}
}

// Credentials in a URL the caller gives stay out of errors; the page's
// server cannot make them appear elsewhere by redirecting.
func TestProbeURLPasswordInErrors(t *testing.T) {
	denied := startDenied(t)
	srv := serveOn(t, allowedAddr, http.HandlerFunc(redirector))
	f := newFetcher(t, Options{})
	secret := "s3cretpw"
	withPassword := strings.Replace(srv.URL, "http://", "http://user:"+secret+"@", 1)
	cases := []string{
		redirectTo(withPassword, 302, "http://127.0.0.1:"+denied.port+"/"),
		redirectTo(withPassword, 302, "/loop"),
		"http://user:" + secret + "@127.0.0.1:" + denied.port + "/",
		"gopher://user:" + secret + "@example.test/",
	}
	leaks := 0
	for _, u := range cases {
		_, err := fetch(t, f, protocol.FetchRequest{URL: u})
		if err != nil && strings.Contains(err.Error(), secret) {
			leaks++
			t.Errorf("the password is in the error of %s: %v", u, err)
		}
	}
	t.Logf("%d fetches with a password in the URL failing, %d errors show it", len(cases), leaks)
}

// Credentials the caller gives (Authorization, Cookie) are for the
// origin it asked: a redirect to another port of the same host (another
// service, perhaps another tenant's) must not carry them, as browsers
// (the Fetch standard: a cross-origin redirect) and curl drop them. Each
// redirect is one attack; it got through when the other port saw them.
func TestProbeCredentialsStayWithTheirOrigin(t *testing.T) {
	var leaked atomic.Int64
	other := serveOn(t, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" || r.Header.Get("Proxy-Authorization") != "" {
			leaked.Add(1)
		}
		fmt.Fprint(w, "other")
	}))
	first := serveOn(t, allowedAddr, http.HandlerFunc(redirector))
	f := newFetcher(t, Options{})
	creds := map[string]string{"Authorization": "Bearer for-the-first-only", "Cookie": "sid=first", "Proxy-Authorization": "Basic eDp5"}
	attacks := 0
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, next := range []string{other.URL + "/", "http://example.test:" + port(other) + "/", "http://a.example.test:" + port(other) + "/"} {
			attacks++
			mustFetch(t, f, protocol.FetchRequest{URL: redirectTo(first.URL, status, next), Headers: creds})
		}
	}
	// The control: the same origin keeps them.
	r := mustFetch(t, f, protocol.FetchRequest{URL: redirectTo(first.URL, 302, first.URL+"/echo"), Headers: creds})
	if !strings.Contains(r.Body, "for-the-first-only") {
		t.Errorf("a redirect to the same origin dropped the caller's Authorization: %s", r.Body)
	}
	t.Logf("%d redirects to another port carrying the caller's credentials, %d got through", attacks, leaked.Load())
	if leaked.Load() != 0 {
		t.Errorf("%d of %d redirects to another origin carried the caller's Authorization or Cookie", leaked.Load(), attacks)
	}
}

// Slowloris servers: a header block, or a body, trickled a byte at a
// time, forever. The fetch's timeout bounds the whole of it: timeout,
// whatever keeps arriving.
func TestProbeSlowlorisServers(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	trickle := func(head string) string {
		return rawServer(t, func(c net.Conn) {
			io.WriteString(c, head)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-hold:
					return
				case <-tick.C:
					if _, err := io.WriteString(c, "a"); err != nil {
						return
					}
				}
			}
		})
	}
	f := newFetcher(t, Options{})
	for name, u := range map[string]string{
		"headers":       trickle("HTTP/1.1 200 OK\r\nX-Slow: "),
		"body":          trickle("HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n"),
		"chunked body":  trickle("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000\r\n"),
		"redirect body": trickle("HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 1000000\r\n\r\n"),
	} {
		_, err := fetch(t, f, protocol.FetchRequest{URL: u, Timeout: protocol.Duration(300 * time.Millisecond)})
		if protocol.CodeOf(err) != protocol.CodeTimeout {
			t.Errorf("%s trickled: %v, want timeout", name, err)
		}
	}
}
