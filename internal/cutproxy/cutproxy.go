// Package cutproxy is a TCP proxy for tests that cut a client's
// connection to a server when they choose: every connection through it
// at once (Cut), or from now on (SetDown).
package cutproxy

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// Proxy forwards connections on a loopback port to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []net.Conn
	down  bool
}

// New starts a proxy to target (host:port, or nats://host:port); the
// test's cleanup stops it.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: strings.TrimPrefix(target, "nats://")}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go p.serve()
	return p
}

// URL is nats://host:port of the proxy.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go pipe(in, out)
		go pipe(out, in)
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// Cut closes every connection through the proxy.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// SetDown makes the proxy refuse new connections (and cut those it
// has), or pass them again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
	if down {
		p.Cut()
	}
}
