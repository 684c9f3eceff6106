package webfetch

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/framebus/framebus/protocol"
)

// DefaultTimeout bounds a fetch whose request and options name none, and
// MaxTimeout is the longest a request may ask for.
const (
	DefaultTimeout = 30 * time.Second
	MaxTimeout     = protocol.MaxResourceTimeout
)

// DefaultUserAgent is sent when neither the options nor the request's
// headers name one.
const DefaultUserAgent = "framebus-fetch/1"

// maxHeaderBytes bounds an answer's status line and header block.
const maxHeaderBytes = 256 << 10

// Options configure a Fetcher; the zero value fetches anything, directly.
type Options struct {
	// Dialer connects; the node passes Node.Dialer() (actors/egress.Dialer:
	// it resolves a host and refuses, with *egress.DeniedError, any address
	// the whitelist does not allow). nil: a plain net.Dialer.
	Dialer interface {
		DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	}
	// Check is the whitelist's URL check (whitelist.Whitelist.Check), run on
	// the first URL and on every redirect hop before anything is sent to
	// it. nil: every http and https URL is allowed.
	Check func(rawURL string) error
	// MaxBytes caps the body kept; 0: protocol.DefaultFetchMaxBytes. A
	// request may ask for less, never more.
	MaxBytes int
	// MaxRedirects bounds the redirects followed; 0:
	// protocol.DefaultFetchMaxRedirects. A request may ask for fewer,
	// never more.
	MaxRedirects int
	// Timeout bounds a fetch whose request gives none; 0: DefaultTimeout.
	Timeout time.Duration
	// Cookies gives a profile's cookies for a URL (FetchRequest.CookiesFrom,
	// opt-in); it is asked once per hop, for that hop's URL. nil: a request
	// naming CookiesFrom is refused with bad_request.
	Cookies func(ctx context.Context, profile string, u *url.URL) ([]*http.Cookie, error)
	// UserAgent is sent unless the request sets User-Agent; "":
	// DefaultUserAgent.
	UserAgent string
}

// Fetcher does http fetches; it is safe for concurrent use and keeps
// connections alive between fetches, so make one and share it.
type Fetcher struct {
	o         Options
	transport *http.Transport
}

// New makes a Fetcher.
func New(o Options) *Fetcher {
	if o.Dialer == nil {
		o.Dialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = protocol.DefaultFetchMaxBytes
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = protocol.DefaultFetchMaxRedirects
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	return &Fetcher{o: o, transport: &http.Transport{
		// Never a proxy from the environment: the Dialer is the one way
		// out, and it checks every address it connects to.
		Proxy:                 nil,
		DialContext:           o.Dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64, // the benchmark's 64 concurrent fetches to one host
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// A browser's bound (Chromium's 256 KiB), not net/http's 10 MiB: a
		// hostile server's header block, and each redirect's Location,
		// would otherwise cost that much memory and reply per hop.
		MaxResponseHeaderBytes: maxHeaderBytes,
	}}
}

// Close drops the Fetcher's idle connections.
func (f *Fetcher) Close() { f.transport.CloseIdleConnections() }

// Fetch sends req and answers with what came back. Every error is a
// *protocol.Error: bad_request naming the field, permission_denied naming
// the domain (no request went to it), timeout, or fetch_failed.
func (f *Fetcher) Fetch(ctx context.Context, req protocol.FetchRequest) (protocol.FetchReply, error) {
	start := time.Now()
	p, err := f.plan(req)
	if err != nil {
		return protocol.FetchReply{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	reply, err := f.follow(ctx, p)
	if err != nil {
		return protocol.FetchReply{}, err
	}
	if ctx.Err() != nil {
		// The answer came, but its reader view ran past the deadline.
		return protocol.FetchReply{}, f.failed(ctx, p, "fetch "+reply.URL, ctx.Err())
	}
	reply.OK = true
	reply.Took = protocol.Duration(time.Since(start))
	return reply, nil
}
