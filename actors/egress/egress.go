// Package egress is the whitelist's last line in the network: a forward
// proxy on loopback that the browser sends all its traffic through and
// that connects only to allowed hosts.
//
// The browser-level request filter (cdpdriver, Fetch domain) sees every
// HTTP request but not WebSocket connections, which Chromium opens in its
// network stack without a Fetch stage, and Network.setBlockedURLs does
// not stop them either (measured on Chromium 156). Behind this proxy, a
// WebSocket to a denied host is a CONNECT the proxy refuses. HTTP
// requests the filter let through pass the same check here.
//
// Chromium reaches it with --proxy-server and --proxy-bypass-list=<-loopback>
// (without which it would reach loopback hosts directly); see Flags.
//
// It serves the node's browsers only: a connection from a process of
// any other account (Allow names the browsers') is refused, by the
// kernel's word on who owns its other end (see peer.go).
//
// The proxy checks a host's name (Check), then connects through a Dialer,
// which resolves the name itself, checks every address, and dials the
// address it checked: an allowed name that resolves to loopback or an
// internal address reaches nothing (see Dialer).
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Check decides whether the proxy may connect to host (a host name or an
// IP address, as the browser canonicalised it; no port): nil allows it.
type Check func(host string) error

// dialTimeout bounds connecting to an upstream host.
const dialTimeout = 30 * time.Second

// Proxy is a running egress proxy.
type Proxy struct {
	ln      net.Listener
	srv     *http.Server
	check   Check
	dialer  *Dialer
	log     zerolog.Logger
	denied  atomic.Int64
	tunnels sync.WaitGroup
	closing chan struct{}
	// tunnelsMu orders a new tunnel's Add before Close's Wait (a
	// WaitGroup may not grow while it is waited on); closed says Close
	// has begun, after which no tunnel starts.
	tunnelsMu sync.Mutex
	closed    bool

	uidsMu    sync.Mutex
	uids      map[int]bool // the accounts whose processes may connect (Allow)
	strangers atomic.Int64
}

// Start listens on a free loopback port and serves until Close. It
// connects to hosts check allows, through dialer (which checks their
// addresses), for the processes of the accounts Allow names only.
func Start(check Check, dialer *Dialer, log zerolog.Logger) (*Proxy, error) {
	if check == nil || dialer == nil {
		return nil, errors.New("egress proxy: a name check and a dialer are both required")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &Proxy{ln: ln, check: check, dialer: dialer, log: log, closing: make(chan struct{}), uids: map[int]bool{}}
	forward := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) {}, // the request's absolute URL is its target
		FlushInterval: -1,                                // event streams and long polls as they come
		Transport: &http.Transport{
			Proxy:              nil,
			DialContext:        dialer.DialContext,
			DisableCompression: true,
			IdleConnTimeout:    90 * time.Second,
		},
	}
	forward.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if errors.Is(err, context.Canceled) {
			return // the browser went away (a navigation ended a long poll)
		}
		if p.refused(w, err) {
			return
		}
		p.log.Debug().Err(err).Str("url", r.URL.String()).Msg("egress proxy: upstream failed")
		w.WriteHeader(http.StatusBadGateway)
	}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !p.fromBrowser(w, r) {
				return
			}
			if r.Method == http.MethodConnect {
				p.tunnel(w, r)
				return
			}
			if r.URL.Host == "" {
				http.Error(w, "egress proxy: want an absolute URL or CONNECT", http.StatusBadRequest)
				return
			}
			if !p.allowed(w, r.URL.Hostname()) {
				return
			}
			forward.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: dialTimeout,
		ConnContext:       withPeer,
	}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Addr is where the proxy listens, 127.0.0.1:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Flags are the Chromium flags that send all its traffic through p.
// WebRTC does not follow --proxy-server on its own: ICE sends UDP (STUN,
// TURN, connectivity checks to remote candidates) straight to any address.
// The IP handling policy disable_non_proxied_udp makes Chromium use no UDP
// at all and reach TURN over TCP only through the proxy, which checks the
// TURN host like any other.
func (p *Proxy) Flags() []string {
	return []string{
		"--proxy-server=http://" + p.Addr(),
		"--proxy-bypass-list=<-loopback>",
		"--webrtc-ip-handling-policy=disable_non_proxied_udp",
	}
}

// Denied counts the connections the proxy refused.
func (p *Proxy) Denied() int64 { return p.denied.Load() }

// Close stops the proxy and ends its tunnels.
func (p *Proxy) Close() error {
	p.tunnelsMu.Lock()
	p.closed = true
	p.tunnelsMu.Unlock()
	close(p.closing)
	err := p.srv.Close()
	p.tunnels.Wait()
	return err
}

func (p *Proxy) allowed(w http.ResponseWriter, host string) bool {
	if err := p.check(host); err != nil {
		p.deny(w, err)
		return false
	}
	return true
}

// refused answers a connection the dialer refused for its address, as a
// denied name is answered; false for any other error.
func (p *Proxy) refused(w http.ResponseWriter, err error) bool {
	var denied *DeniedError
	if !errors.As(err, &denied) {
		return false
	}
	p.deny(w, denied)
	return true
}

func (p *Proxy) deny(w http.ResponseWriter, err error) {
	p.denied.Add(1)
	p.log.Debug().Err(err).Msg("egress proxy refused a connection")
	http.Error(w, err.Error(), http.StatusForbidden)
}

// tunnel serves CONNECT host:port: a byte stream to the host (TLS, a
// WebSocket), once the host is allowed.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		http.Error(w, "egress proxy: CONNECT wants host:port", http.StatusBadRequest)
		return
	}
	if !p.allowed(w, host) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), dialTimeout)
	up, err := p.dialer.DialContext(ctx, "tcp", r.Host)
	cancel()
	if p.refused(w, err) {
		return
	}
	if err != nil {
		http.Error(w, "egress proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		up.Close()
		down.Close()
		return
	}
	p.tunnelsMu.Lock()
	if p.closed {
		p.tunnelsMu.Unlock()
		up.Close()
		down.Close()
		return
	}
	p.tunnels.Add(1)
	p.tunnelsMu.Unlock()
	go func() {
		defer p.tunnels.Done()
		p.pipe(up, down, buf.Reader)
	}()
}

// pipe copies both ways until either side ends or the proxy closes.
func (p *Proxy) pipe(up, down net.Conn, pending io.Reader) {
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, io.MultiReader(pending, down)); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	finished := 0
	select {
	case <-done:
		finished++
	case <-p.closing:
	}
	up.Close()
	down.Close()
	for ; finished < 2; finished++ {
		<-done // each copy ends once both sides are closed
	}
}
