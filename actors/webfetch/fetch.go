package webfetch

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"sync"
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
	reply, body, err := f.fetch(ctx, req, nil)
	if reply.Encoding == "base64" {
		reply.Body = base64.StdEncoding.EncodeToString(body)
	} else {
		reply.Body = noCopyString(body) // read for this reply alone
	}
	return reply, err
}

// FetchBytes is Fetch with the body apart, as bytes, for a caller that
// sends it on at once (the node's replies with the body outside the
// JSON): the reply's Body is "", body is the text in UTF-8 or, with
// Encoding base64, the bytes received. body lies in a buffer that later
// fetches reuse once release is called: call it once done with body
// (never calling it is safe, only slower). A 100 KB page is then no new
// 100 KB for the node's garbage collector.
func (f *Fetcher) FetchBytes(ctx context.Context, req protocol.FetchRequest) (reply protocol.FetchReply, body []byte, release func(), err error) {
	buf, _ := bodyBuffers.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	var once sync.Once
	release = func() { once.Do(func() { bodyBuffers.Put(buf) }) }
	reply, body, err = f.fetch(ctx, req, buf)
	if err != nil {
		release()
		return reply, nil, func() {}, err
	}
	return reply, body, release, nil
}

// bodyBuffers are the buffers FetchBytes reads bodies into. A buffer is
// as large as the largest body it held (at most the cap); the pool lets
// those no fetch asks for again go at the next garbage collections.
var bodyBuffers sync.Pool // of *[]byte

// fetch is Fetch with the body apart (see answer), read into *buffer
// when given.
func (f *Fetcher) fetch(ctx context.Context, req protocol.FetchRequest, buffer *[]byte) (protocol.FetchReply, []byte, error) {
	start := time.Now()
	p, err := f.plan(req)
	if err != nil {
		return protocol.FetchReply{}, nil, err
	}
	p.buffer = buffer
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	reply, body, err := f.follow(ctx, p)
	if err != nil {
		return protocol.FetchReply{}, nil, err
	}
	if ctx.Err() != nil {
		// The answer came, but its reader view ran past the deadline.
		return protocol.FetchReply{}, nil, f.failed(ctx, p, "fetch "+reply.URL, ctx.Err())
	}
	reply.OK = true
	reply.Took = protocol.Duration(time.Since(start))
	return reply, body, nil
}
