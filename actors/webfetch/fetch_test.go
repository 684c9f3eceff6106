package webfetch

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// echoed is what the echo handler saw of a request.
type echoed struct {
	Method string
	Host   string
	Path   string
	Header http.Header
	Body   string
}

// echo answers with what it saw, as JSON, and sets a header in lower
// case (written as is, so the reply's canonical name is the Fetcher's
// doing) and one with two values.
func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header()["x-lower-case"] = []string{"yes"}
	w.Header().Add("X-Two", "one")
	w.Header().Add("X-Two", "two")
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(echoed{Method: r.Method, Host: r.Host, Path: r.URL.Path, Header: r.Header, Body: string(body)})
}

// Every method reaches the server as itself, with its body; HEAD gets the
// headers and no body.
func TestEveryMethod(t *testing.T) {
	srv := serveOn(t, allowedAddr, http.HandlerFunc(echo))
	f := newFetcher(t, Options{})
	for _, method := range protocol.FetchMethods {
		t.Run(method, func(t *testing.T) {
			r := mustFetch(t, f, protocol.FetchRequest{URL: srv.URL + "/m", Method: method, Body: "body of " + method})
			if r.Status != 200 || r.StatusText != "OK" || !r.OK {
				t.Fatalf("status %d %q ok %v", r.Status, r.StatusText, r.OK)
			}
			if method == http.MethodHead {
				if r.Body != "" || r.Bytes != 0 || r.Headers["Content-Type"][0] != "application/json" {
					t.Fatalf("HEAD: body %q, bytes %d, headers %v", r.Body, r.Bytes, r.Headers)
				}
				return
			}
			var e echoed
			if err := json.Unmarshal([]byte(r.Body), &e); err != nil {
				t.Fatalf("body %q: %v", r.Body, err)
			}
			if e.Method != method || e.Body != "body of "+method {
				t.Fatalf("the server saw %s with %q", e.Method, e.Body)
			}
		})
	}
	// A method in lower case is the method.
	r := mustFetch(t, f, protocol.FetchRequest{URL: srv.URL, Method: "patch"})
	if !strings.Contains(r.Body, `"Method":"PATCH"`) {
		t.Fatalf("lower-case patch: %s", r.Body)
	}
}

// Headers go out as given and come back with canonical names; a text body
// round-trips unchanged; the reply says where the answer came from and
// how big it was.
func TestHeadersAndBodyRoundTrip(t *testing.T) {
	var mu sync.Mutex
	var seen []string // the paths asked
	srv := serveOn(t, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		echo(w, r)
	}))
	f := newFetcher(t, Options{UserAgent: "fetch-test/1"})
	body := "grüße, 日本語, \"quotes\"\nand a second line"
	r := mustFetch(t, f, protocol.FetchRequest{
		URL: srv.URL + "/echo", Method: "POST", Body: body,
		Headers: map[string]string{"x-request-id": "r-1", "Content-Type": "text/plain; charset=utf-8", "Accept": "application/json"},
	})
	var e echoed
	if err := json.Unmarshal([]byte(r.Body), &e); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	if e.Body != body {
		t.Errorf("the server got body %q, want %q", e.Body, body)
	}
	for name, want := range map[string]string{"X-Request-Id": "r-1", "Content-Type": "text/plain; charset=utf-8", "Accept": "application/json", "User-Agent": "fetch-test/1"} {
		if got := e.Header.Get(name); got != want {
			t.Errorf("the server got %s %q, want %q", name, got, want)
		}
	}
	if got := r.Headers["X-Lower-Case"]; len(got) != 1 || got[0] != "yes" {
		t.Errorf("reply header X-Lower-Case %q (headers %v)", got, r.Headers)
	}
	if got := r.Headers["X-Two"]; strings.Join(got, ",") != "one,two" {
		t.Errorf("reply header X-Two %q", got)
	}
	if r.Encoding != "text" || r.Charset != "utf-8" || r.Bytes != int64(len(r.Body)) || r.Truncated {
		t.Errorf("encoding %q charset %q bytes %d (body %d) truncated %v", r.Encoding, r.Charset, r.Bytes, len(r.Body), r.Truncated)
	}
	if r.Address != srv.Listener.Addr().String() || r.URL != srv.URL+"/echo" || r.Took <= 0 {
		t.Errorf("address %q url %q took %s, want %s and %s", r.Address, r.URL, r.Took.Std(), srv.Listener.Addr(), srv.URL+"/echo")
	}
	// A Host header names the virtual host at the URL's server.
	r = mustFetch(t, f, protocol.FetchRequest{URL: srv.URL + "/vhost", Headers: map[string]string{"host": "virtual.example.test"}})
	if !strings.Contains(r.Body, `"Path":"/vhost"`) || !strings.Contains(r.Body, `"Host":"virtual.example.test"`) {
		t.Errorf("Host header: the server saw %s", r.Body)
	}
	// ... and is checked as a URL's host is: no fronting a denied site
	// through an allowed server.
	_, err := fetch(t, f, protocol.FetchRequest{URL: srv.URL + "/fronted", Headers: map[string]string{"Host": "denied.test"}})
	wantCode(t, err, protocol.CodePermissionDenied, "denied.test")
	mu.Lock()
	if slices.Contains(seen, "/fronted") {
		t.Errorf("the server was asked for /fronted")
	}
	mu.Unlock()
	// The request's User-Agent wins over the Fetcher's.
	r = mustFetch(t, f, protocol.FetchRequest{URL: srv.URL, Headers: map[string]string{"User-Agent": "mine"}})
	if !strings.Contains(r.Body, `"User-Agent":["mine"]`) {
		t.Errorf("own user agent: %s", r.Body)
	}
}

// Binary bodies go both ways as base64, byte for byte.
func TestBinaryBodies(t *testing.T) {
	var sent []byte
	for i := range 1024 {
		sent = append(sent, byte(i*7))
	}
	var got []byte
	srv := serveOn(t, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(got)
	}))
	f := newFetcher(t, Options{})
	r := mustFetch(t, f, protocol.FetchRequest{URL: srv.URL, Method: "PUT", Body: base64.StdEncoding.EncodeToString(sent), BodyBase64: true})
	if !bytes.Equal(got, sent) {
		t.Fatalf("the server got %d bytes, not the %d sent", len(got), len(sent))
	}
	if r.Encoding != "base64" || r.Charset != "" {
		t.Fatalf("encoding %q charset %q, want base64", r.Encoding, r.Charset)
	}
	back, err := base64.StdEncoding.DecodeString(r.Body)
	if err != nil || !bytes.Equal(back, sent) || r.Bytes != int64(len(sent)) {
		t.Fatalf("the reply's body: %d bytes (%v), bytes %d, want the %d sent", len(back), err, r.Bytes, len(sent))
	}
}

// A body over the cap is cut at the cap: the request's cap, never above
// the Fetcher's. A body with no end (no Content-Length, never finished)
// comes back cut at the cap too, so it was not read whole.
func TestBodyOverTheCap(t *testing.T) {
	page := strings.Repeat("0123456789", 10_000) // 100,000 bytes
	srv := serveOn(t, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sized":
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			io.WriteString(w, page)
		case "/chunked":
			io.WriteString(w, page) // no Content-Length: chunked
		case "/endless":
			w.Header().Set("Content-Type", "text/plain")
			for r.Context().Err() == nil {
				if _, err := io.WriteString(w, page); err != nil {
					return
				}
			}
		}
	}))
	f := newFetcher(t, Options{MaxBytes: 50_000})
	cases := []struct {
		path      string
		maxBytes  int
		wantBody  int
		wantBytes int64
		truncated bool
	}{
		{"/sized", 1000, 1000, 100_000, true},
		{"/chunked", 1000, 1000, 1000, true},
		{"/sized", 0, 50_000, 100_000, true},       // the Fetcher's cap
		{"/sized", 1 << 30, 50_000, 100_000, true}, // asking for more gets the Fetcher's cap
		{"/sized", 100_000, 50_000, 100_000, true},
		{"/endless", 2000, 2000, 2000, true},
	}
	for _, c := range cases {
		r := mustFetch(t, f, protocol.FetchRequest{URL: srv.URL + c.path, MaxBytes: c.maxBytes})
		if len(r.Body) != c.wantBody || r.Bytes != c.wantBytes || r.Truncated != c.truncated || r.Body != page[:c.wantBody] {
			t.Errorf("%s maxBytes %d: body %d bytes, bytes %d, truncated %v; want %d, %d, %v",
				c.path, c.maxBytes, len(r.Body), r.Bytes, r.Truncated, c.wantBody, c.wantBytes, c.truncated)
		}
	}
	small := newFetcher(t, Options{MaxBytes: 200_000})
	r := mustFetch(t, small, protocol.FetchRequest{URL: srv.URL + "/sized"})
	if r.Truncated || r.Body != page || r.Bytes != 100_000 {
		t.Errorf("under the cap: truncated %v, body %d, bytes %d", r.Truncated, len(r.Body), r.Bytes)
	}
	// One byte over: net/http gives the last bytes with io.EOF.
	r = mustFetch(t, small, protocol.FetchRequest{URL: srv.URL + "/sized", MaxBytes: len(page) - 1})
	if !r.Truncated || r.Body != page[:len(page)-1] || r.Bytes != 100_000 {
		t.Errorf("one byte over the cap: truncated %v, body %d, bytes %d", r.Truncated, len(r.Body), r.Bytes)
	}
}
