package webfetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"

	"github.com/framebus/framebus/protocol"
)

// follow sends the request and follows its redirects, one hop at a time
// so that each hop's URL is checked before anything is sent to it, and
// reads the final answer (its body apart, as answer gives it).
func (f *Fetcher) follow(ctx context.Context, p prepared) (protocol.FetchReply, []byte, error) {
	if err := f.checkHostHeader(p); err != nil {
		return protocol.FetchReply{}, nil, err
	}
	u, method, body, header := p.url, p.method, p.body, p.header.Clone()
	var hops []protocol.FetchHop
	for {
		where := asking(u, hops)
		if err := f.check(u, where); err != nil {
			return protocol.FetchReply{}, nil, err
		}
		resp, addr, err := f.send(ctx, p, u, method, header, body)
		if err != nil {
			return protocol.FetchReply{}, nil, f.failed(ctx, p, where, err)
		}
		next, isRedirect := redirectTarget(u, resp)
		if !isRedirect || p.maxRedirects < 0 {
			defer resp.Body.Close()
			reply, body, err := f.answer(p, method, resp, addr)
			if err != nil {
				return protocol.FetchReply{}, nil, f.failed(ctx, p, where, err)
			}
			reply.URL, reply.Redirects = u.String(), hops
			return reply, body, nil
		}
		// A short body read to its end lets the connection be kept alive;
		// past that, closing it is cheaper than reading on.
		io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
		hops = append(hops, protocol.FetchHop{URL: u.String(), Status: resp.StatusCode})
		if next == nil {
			return protocol.FetchReply{}, nil, protocol.Errorf(protocol.CodeFetchFailed,
				"fetch %s: redirect %d with a Location that is not a URL: %q", u.Redacted(), resp.StatusCode, resp.Header.Get("Location"))
		}
		if len(hops) > p.maxRedirects {
			return protocol.FetchReply{}, nil, tooManyRedirects(hops, next, p.maxRedirects)
		}
		method, body = redirectedMethod(resp.StatusCode, method, body, header)
		if !sameOrigin(u, next) {
			// Credentials the caller gave were meant for the origin asked:
			// another host, port or scheme (an https token sent on over
			// http) gets none, as browsers and curl do it.
			for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie", "Cookie2"} {
				header.Del(h)
			}
		}
		u = next
	}
}

// asking says which request is made, for errors: the first URL, or
// which redirect of which URL (a password in a URL shown as xxxxx).
func asking(u *url.URL, hops []protocol.FetchHop) string {
	if len(hops) == 0 {
		return "fetch " + u.Redacted()
	}
	return fmt.Sprintf("redirect %d from %s to %s", len(hops), redacted(hops[len(hops)-1].URL), u.Redacted())
}

// redacted is a hop's URL for an error: a password in it shown as xxxxx.
func redacted(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return rawURL
}

// check runs the whitelist on a URL about to be asked: a denied URL is
// permission_denied naming its domain. The URL is given as it will be
// sent (Go's parse of it, written out again), so the check and the
// connection see the same host.
func (f *Fetcher) check(u *url.URL, where string) error {
	if f.o.Check != nil {
		if err := f.o.Check(u.String()); err != nil {
			return protocol.Errorf(protocol.CodePermissionDenied, "%s: %w; nothing was sent to it", where, err)
		}
	}
	if err := checkScheme(u); err != nil {
		return protocol.Errorf(protocol.CodeFetchFailed, "%s: %v", where, err)
	}
	return nil
}

// checkHostHeader runs the whitelist on the host a Host header names: a
// server that hosts many sites (a CDN) answers for the site the header
// names, whatever the URL's host, so a denied site must not be reachable
// through an allowed one (domain fronting).
func (f *Fetcher) checkHostHeader(p prepared) error {
	if p.host == "" || f.o.Check == nil {
		return nil
	}
	if err := f.o.Check(p.url.Scheme + "://" + p.host + "/"); err != nil {
		return protocol.Errorf(protocol.CodePermissionDenied, "fetch %s with Host %s: %w; nothing was sent", p.url.Redacted(), p.host, err)
	}
	return nil
}

// send makes one request to u and returns the answer with the address it
// came from.
func (f *Fetcher) send(ctx context.Context, p prepared, u *url.URL, method string, header http.Header, body []byte) (*http.Response, string, error) {
	var addrMu sync.Mutex
	var addr string
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(c httptrace.GotConnInfo) {
		addrMu.Lock()
		defer addrMu.Unlock()
		addr = c.Conn.RemoteAddr().String()
	}})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, "", err
	}
	req.Header = header.Clone()
	if p.host != "" && sameHost(u, p.url) {
		req.Host = p.host
	}
	if p.cookiesFrom != "" {
		cookies, err := f.o.Cookies(ctx, p.cookiesFrom, u)
		if err != nil {
			return nil, "", fmt.Errorf("the cookies of profile %s for %s: %w", p.cookiesFrom, u.Host, err)
		}
		for _, c := range cookies {
			if c != nil {
				req.AddCookie(c)
			}
		}
	}
	client := http.Client{Transport: f.transport, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // follow does it, hop by hop
	}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	addrMu.Lock()
	defer addrMu.Unlock()
	return resp, addr, nil
}

// redirectTarget says whether resp redirects and where to: a redirect
// without a Location is the final answer, one with a Location that does
// not parse is a redirect to nil.
func redirectTarget(from *url.URL, resp *http.Response) (*url.URL, bool) {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return nil, false
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, false
	}
	next, err := from.Parse(loc)
	if err != nil {
		return nil, true
	}
	if next.Fragment == "" && from.Fragment != "" { // as browsers: the fragment carries over
		next.Fragment = from.Fragment
	}
	return next, true
}

// redirectedMethod is the method and body of the request a redirect
// leads to, as browsers do it (the Fetch standard): 301 and 302 turn a
// POST into a GET, 303 turns anything but GET and HEAD into a GET, each
// dropping the body and the headers that describe it; 307 and 308 keep
// method and body.
func redirectedMethod(status int, method string, body []byte, header http.Header) (string, []byte) {
	toGet := (status == http.StatusMovedPermanently || status == http.StatusFound) && method == http.MethodPost ||
		status == http.StatusSeeOther && method != http.MethodGet && method != http.MethodHead
	if !toGet {
		return method, body
	}
	for _, h := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Content-Language", "Content-Location"} {
		header.Del(h)
	}
	return http.MethodGet, nil
}

func sameHost(a, b *url.URL) bool { return strings.EqualFold(a.Hostname(), b.Hostname()) }

// sameOrigin: the same scheme, host and port (a missing port is the
// scheme's).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && sameHost(a, b) && portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// tooManyRedirects names the chain; a loop is named up to where it
// comes round again.
func tooManyRedirects(hops []protocol.FetchHop, next *url.URL, max int) error {
	urls := make([]string, 0, len(hops)+1)
	for _, h := range hops {
		urls = append(urls, redacted(h.URL))
	}
	urls = append(urls, next.Redacted())
	what, end := "too many redirects", len(urls)
	seen := map[string]bool{}
	for i, u := range urls {
		if seen[u] {
			what, end = "a redirect loop", i+1
			break
		}
		seen[u] = true
	}
	chain := make([]string, 0, end)
	for i, u := range urls[:end] {
		if i < len(hops) {
			u = fmt.Sprintf("%s (%d)", u, hops[i].Status)
		}
		chain = append(chain, u)
	}
	return protocol.Errorf(protocol.CodeFetchFailed, "fetch %s: %s (more than %d): %s",
		urls[0], what, max, strings.Join(chain, " -> "))
}
