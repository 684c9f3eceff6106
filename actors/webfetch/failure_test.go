package webfetch

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// rawServer listens on the allowed address and hands every connection,
// once its request has been read, to answer.
func rawServer(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(allowedAddr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				answer(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// A server that never answers, or stops in the middle of its body, is a
// timeout within the request's deadline (or the Fetcher's, when the
// request gives none), with the timeout code.
func TestServerNeverAnswers(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	silent := rawServer(t, func(c net.Conn) { <-hold })
	stalls := rawServer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nthe first bytes")
		<-hold
	})
	f := newFetcher(t, Options{Timeout: 300 * time.Millisecond})
	_, err := fetch(t, f, protocol.FetchRequest{URL: silent, Timeout: protocol.Duration(200 * time.Millisecond)})
	wantCode(t, err, protocol.CodeTimeout, silent, "200ms")
	_, err = fetch(t, f, protocol.FetchRequest{URL: silent})
	wantCode(t, err, protocol.CodeTimeout, "300ms")
	_, err = fetch(t, f, protocol.FetchRequest{URL: stalls, Timeout: protocol.Duration(200 * time.Millisecond)})
	wantCode(t, err, protocol.CodeTimeout, stalls)
}

// A caller that gives up gets cancelled, not a timeout: the fetch stops
// when its context does.
func TestCallerCancels(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	asked := make(chan struct{}, 1)
	silent := rawServer(t, func(c net.Conn) {
		asked <- struct{}{}
		<-hold
	})
	f := newFetcher(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := f.Fetch(ctx, protocol.FetchRequest{URL: silent})
		done <- err
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the request never reached the server")
	}
	cancel()
	select {
	case err := <-done:
		wantCode(t, err, protocol.CodeCancelled, silent)
	case <-time.After(30 * time.Second):
		t.Fatal("the fetch went on after its caller cancelled")
	}
}

// A server that closes the connection early (before its status line, in
// the middle of its body), that does not speak HTTP, or is not there,
// gets fetch_failed saying what happened.
func TestServerClosesEarly(t *testing.T) {
	// Hijacked from a real net/http server: the connection closed before
	// anything was written, and after half the body.
	srv := serveOn(t, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		if r.URL.Path == "/mid-body" {
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n" + strings.Repeat("x", 500))
			buf.Flush()
		}
	}))
	notHTTP := rawServer(t, func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n\r\n") })
	ln, err := net.Listen("tcp", net.JoinHostPort(allowedAddr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/"
	ln.Close()

	f := newFetcher(t, Options{})
	_, err = fetch(t, f, protocol.FetchRequest{URL: srv.URL + "/before-status"})
	wantCode(t, err, protocol.CodeFetchFailed, srv.URL+"/before-status", "closed the connection")
	_, err = fetch(t, f, protocol.FetchRequest{URL: srv.URL + "/mid-body"})
	wantCode(t, err, protocol.CodeFetchFailed, srv.URL+"/mid-body", "closed the connection", "500 bytes in")
	_, err = fetch(t, f, protocol.FetchRequest{URL: notHTTP})
	wantCode(t, err, protocol.CodeFetchFailed, notHTTP, "malformed HTTP")
	_, err = fetch(t, f, protocol.FetchRequest{URL: refused})
	wantCode(t, err, protocol.CodeFetchFailed, refused, "refused")
	// A password in the URL is not repeated in the error.
	withPassword := strings.Replace(refused, "http://", "http://user:s3cret@", 1)
	_, err = fetch(t, f, protocol.FetchRequest{URL: withPassword})
	wantCode(t, err, protocol.CodeFetchFailed, "user:xxxxx@", "refused")
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the password: %v", err)
	}
}

// Bad input gets bad_request naming the field, and nothing is sent.
func TestBadRequests(t *testing.T) {
	var hits atomic.Int64
	srv := serveOn(t, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	f := newFetcher(t, Options{})
	cases := []struct {
		req   protocol.FetchRequest
		field string
	}{
		{protocol.FetchRequest{}, "url: missing"},
		{protocol.FetchRequest{URL: "  "}, "url: missing"},
		{protocol.FetchRequest{URL: "example.test/page"}, "url:"},
		{protocol.FetchRequest{URL: "ftp://example.test/file"}, "url:"},
		{protocol.FetchRequest{URL: "file:///etc/passwd"}, "url:"},
		{protocol.FetchRequest{URL: "http://"}, "url:"},
		{protocol.FetchRequest{URL: "http://exa mple.test/"}, "url:"},
		{protocol.FetchRequest{URL: "http://[::1/"}, "url:"},
		{protocol.FetchRequest{URL: srv.URL, Method: "FETCH"}, "method:"},
		{protocol.FetchRequest{URL: srv.URL, Method: "CONNECT"}, "method:"},
		{protocol.FetchRequest{URL: srv.URL, Headers: map[string]string{"Bad Header": "x"}}, "headers: \"Bad Header\""},
		{protocol.FetchRequest{URL: srv.URL, Headers: map[string]string{"": "x"}}, "headers:"},
		{protocol.FetchRequest{URL: srv.URL, Headers: map[string]string{"X-Split": "a\r\nInjected: yes"}}, "headers: the value of X-Split"},
		{protocol.FetchRequest{URL: srv.URL, Body: "not base64!", BodyBase64: true}, "body:"},
		{protocol.FetchRequest{URL: srv.URL, MaxBytes: -1}, "maxBytes:"},
		{protocol.FetchRequest{URL: srv.URL, MaxRedirects: -1}, "maxRedirects:"},
		{protocol.FetchRequest{URL: srv.URL, Timeout: -1}, "timeout:"},
		{protocol.FetchRequest{URL: srv.URL, CookiesFrom: "work"}, "cookiesFrom: no profile cookies here"},
	}
	for _, c := range cases {
		_, err := fetch(t, f, c.req)
		wantCode(t, err, protocol.CodeBadRequest, c.field)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
}
