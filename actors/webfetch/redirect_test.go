package webfetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// redirector answers /to/<status>?next=<url> with that redirect, /loop
// with a redirect to itself, /chain/<n> with one to /chain/<n-1> down to
// the echo at /chain/0, and anything else with the echo.
func redirector(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/to/"):
		status, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/to/"))
		w.Header().Set("Location", r.URL.Query().Get("next"))
		w.WriteHeader(status)
	case r.URL.Path == "/loop":
		http.Redirect(w, r, "/loop", http.StatusFound)
	case strings.HasPrefix(r.URL.Path, "/chain/") && r.URL.Path != "/chain/0":
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/chain/"))
		http.Redirect(w, r, fmt.Sprintf("/chain/%d", n-1), http.StatusMovedPermanently)
	default:
		echo(w, r)
	}
}

func redirectTo(base string, status int, next string) string {
	return fmt.Sprintf("%s/to/%d?next=%s", base, status, url.QueryEscape(next))
}

// A chain of allowed hops is followed, each hop recorded with its status;
// the method changes as a browser changes it (301/302 turn POST into GET,
// 303 anything but HEAD, dropping the body and its headers), 307/308 keep
// method and body; noRedirects answers the redirect itself.
func TestRedirectChain(t *testing.T) {
	srv := serveOn(t, allowedAddr, http.HandlerFunc(redirector))
	f := newFetcher(t, Options{})
	final := srv.URL + "/final"
	cases := []struct {
		status     int
		method     string
		wantMethod string
		wantBody   bool
	}{
		{301, "POST", "GET", false},
		{302, "POST", "GET", false},
		{303, "POST", "GET", false},
		{303, "PUT", "GET", false},
		{303, "HEAD", "HEAD", false},
		{301, "PUT", "PUT", true},
		{302, "DELETE", "DELETE", true},
		{307, "POST", "POST", true},
		{308, "PATCH", "PATCH", true},
		{307, "GET", "GET", false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d-%s", c.status, c.method), func(t *testing.T) {
			first := redirectTo(srv.URL, c.status, final)
			req := protocol.FetchRequest{URL: first, Method: c.method}
			if c.method != "GET" && c.method != "HEAD" {
				req.Body, req.Headers = "the body", map[string]string{"Content-Type": "text/plain"}
			}
			r := mustFetch(t, f, req)
			if r.URL != final || len(r.Redirects) != 1 || r.Redirects[0] != (protocol.FetchHop{URL: first, Status: c.status}) {
				t.Fatalf("url %q redirects %+v", r.URL, r.Redirects)
			}
			if c.method == "HEAD" {
				return
			}
			var e echoed
			if err := json.Unmarshal([]byte(r.Body), &e); err != nil {
				t.Fatalf("body %q: %v", r.Body, err)
			}
			if e.Method != c.wantMethod {
				t.Errorf("the final request was %s, want %s", e.Method, c.wantMethod)
			}
			if got := e.Body == "the body"; got != c.wantBody && c.method != "GET" {
				t.Errorf("body %q at the end, want it kept: %v", e.Body, c.wantBody)
			}
			if got := e.Header.Get("Content-Type") != ""; got != c.wantBody && c.method != "GET" {
				t.Errorf("Content-Type %q at the end, want it kept: %v", e.Header.Get("Content-Type"), c.wantBody)
			}
		})
	}

	// A longer chain, relative Locations: every hop, in order.
	r := mustFetch(t, f, protocol.FetchRequest{URL: srv.URL + "/chain/3"})
	var hops []string
	for _, h := range r.Redirects {
		hops = append(hops, fmt.Sprintf("%s %d", strings.TrimPrefix(h.URL, srv.URL), h.Status))
	}
	if r.URL != srv.URL+"/chain/0" || strings.Join(hops, ", ") != "/chain/3 301, /chain/2 301, /chain/1 301" {
		t.Errorf("chain: ended at %s via %v", r.URL, hops)
	}
	// noRedirects: the redirect is the answer.
	r = mustFetch(t, f, protocol.FetchRequest{URL: srv.URL + "/chain/3", NoRedirects: true})
	if r.Status != 301 || r.Headers["Location"][0] != "/chain/2" || len(r.Redirects) != 0 || r.URL != srv.URL+"/chain/3" {
		t.Errorf("noRedirects: %d, Location %v, redirects %v, url %s", r.Status, r.Headers["Location"], r.Redirects, r.URL)
	}
}

// urls are the denied server reached every way a URL can name it,
// each with the name the refusal must give: its address in every
// spelling a browser accepts, a name the whitelist does not list, and an
// allowed name that resolves to it.
func (d *deniedServer) urls() []struct{ url, names string } {
	at := func(host string) string { return "http://" + host + ":" + d.port + "/" }
	return []struct{ url, names string }{
		{at("127.0.0.1"), "127.0.0.1"},
		{at("2130706433"), "127.0.0.1"},
		{at("0x7f.1"), "127.0.0.1"},
		{at("0177.0.0.1"), "127.0.0.1"},
		{at("[::ffff:127.0.0.1]"), "127.0.0.1"},
		{at("[::ffff:7f00:1]"), "127.0.0.1"},
		{at("denied.test"), "denied.test"},
		{at(reboundName), reboundName},
		{at(strings.ToUpper(reboundName)), reboundName},
	}
}

// A redirect to a host the whitelist denies fails with permission_denied
// naming it and the redirect, after the allowed hops before it, and
// nothing reaches it, whichever way the URL names it; nor does a
// redirect to a scheme the whitelist does not allow go anywhere.
func TestRedirectToADeniedHost(t *testing.T) {
	denied := startDenied(t)
	srv := serveOn(t, allowedAddr, http.HandlerFunc(redirector))
	f := newFetcher(t, Options{})
	cases := append(denied.urls(), struct{ url, names string }{"ftp://127.0.0.1/", "ftp"})
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			// Two allowed hops, then the denied one.
			first := srv.URL + "/to/302?next=" + url.QueryEscape(redirectTo(srv.URL, 307, c.url))
			_, err := fetch(t, f, protocol.FetchRequest{URL: first})
			wantCode(t, err, protocol.CodePermissionDenied, c.names, "redirect 2")
		})
	}
	if n := denied.conns.Load(); n != 0 {
		t.Fatalf("the denied server accepted %d connections", n)
	}
}

// The first URL is checked as every hop is.
func TestDeniedURLs(t *testing.T) {
	denied := startDenied(t)
	f := newFetcher(t, Options{})
	for _, c := range denied.urls() {
		_, err := fetch(t, f, protocol.FetchRequest{URL: c.url})
		wantCode(t, err, protocol.CodePermissionDenied, c.names)
	}
	if n := denied.conns.Load(); n != 0 {
		t.Fatalf("the denied server accepted %d connections", n)
	}
}

// A redirect loop, and a chain longer than the redirects allowed, fail
// with fetch_failed naming the chain.
func TestRedirectLoop(t *testing.T) {
	srv := serveOn(t, allowedAddr, http.HandlerFunc(redirector))
	f := newFetcher(t, Options{MaxRedirects: 5})
	_, err := fetch(t, f, protocol.FetchRequest{URL: srv.URL + "/loop"})
	wantCode(t, err, protocol.CodeFetchFailed, "redirect loop", "more than 5", ": "+srv.URL+"/loop (302) -> "+srv.URL+"/loop (302)")
	if strings.Count(err.Error(), "/loop") != 3 {
		t.Errorf("the loop is named more than once round: %v", err)
	}

	_, err = fetch(t, f, protocol.FetchRequest{URL: srv.URL + "/chain/3", MaxRedirects: 2})
	wantCode(t, err, protocol.CodeFetchFailed, "too many redirects", "more than 2", "/chain/3 (301) -> ", "/chain/1 (301) -> "+srv.URL+"/chain/0")
	// The Fetcher's bound is the ceiling.
	_, err = fetch(t, f, protocol.FetchRequest{URL: srv.URL + "/chain/7", MaxRedirects: 50})
	wantCode(t, err, protocol.CodeFetchFailed, "more than 5")
	mustFetch(t, f, protocol.FetchRequest{URL: srv.URL + "/chain/5"})
}

// cookiesFrom is asked for each hop's own URL, and what it gives goes to
// that hop only; without it no profile cookie is sent.
func TestCookiesFromPerHop(t *testing.T) {
	var mu sync.Mutex
	var seen []string // host: Cookie header, per request
	var asked []string
	srv := serveOn(t, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, strings.Split(r.Host, ":")[0]+": "+r.Header.Get("Cookie"))
		mu.Unlock()
		redirector(w, r)
	}))
	cookies := func(ctx context.Context, profile string, u *url.URL) ([]*http.Cookie, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, profile+" "+u.Hostname())
		return []*http.Cookie{{Name: "session", Value: strings.Split(u.Hostname(), ".")[0]}}, nil
	}
	f := newFetcher(t, Options{Cookies: cookies})
	a := "http://a.example.test:" + port(srv)
	b := "http://b.example.test:" + port(srv) + "/end"
	mustFetch(t, f, protocol.FetchRequest{URL: redirectTo(a, 302, b), CookiesFrom: "work", Headers: map[string]string{"Cookie": "mine=1"}})
	mustFetch(t, f, protocol.FetchRequest{URL: a + "/plain"})
	mu.Lock()
	defer mu.Unlock()
	want := []string{"a.example.test: mine=1; session=a", "b.example.test: session=b", "a.example.test: "}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("the server saw %q, want %q", seen, want)
	}
	if strings.Join(asked, "|") != "work a.example.test|work b.example.test" {
		t.Errorf("cookies asked for %q", asked)
	}
}
