package whitelist

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// The node's own listeners (the bus's client, WebSocket and cluster
// ports, the egress proxy) are never a page's or a fetch's destination:
// allowed to reach 127.0.0.1, a fetch got the bus's INFO banner back
// inside its error, and a page could open the bus's ports. So an address
// of this machine at one of their ports is denied, whatever else the
// whitelist allows, unless an entry names that address and port
// (127.0.0.1:4222): the one way to mean it.

// Listeners is the set of the node's own listeners, filled as they open
// (Add); a whitelist given it (WithListeners) denies them. Safe for
// concurrent use.
type Listeners struct {
	mu    sync.Mutex
	ports map[uint16]string // what listens there, as an error names it
	// bound are listeners known to be bound to one address (AddBound):
	// another address of the machine at their port is another socket.
	bound map[netip.AddrPort]string
}

// Add records a listener, named what ("the bus's client port"), at addr:
// a URL (nats://127.0.0.1:4222, ws://..., nats-route://...) or host:port.
// An address without a port is an error.
func (l *Listeners) Add(what, addr string) error {
	hostport := addr
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		hostport = u.Host
	}
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("whitelist: listener %s at %q: %w", what, addr, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 {
		return fmt.Errorf("whitelist: listener %s at %q: want a port 1-65535", what, addr)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ports == nil {
		l.ports = map[uint16]string{}
	}
	l.ports[uint16(port)] = what
	return nil
}

// AddBound records a listener, named what, that this process bound to
// addr (host:port) itself, so knows where it listens: one bound to an
// address of its own (127.0.0.1:3128) is reached there alone, and at the
// unspecified address (a connection to 0.0.0.0 reaches loopback); one
// bound to the unspecified address, or whose address is not an IP, is
// taken as Add takes it.
func (l *Listeners) AddBound(what, addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Addr().IsUnspecified() || ap.Port() == 0 {
		return l.Add(what, addr)
	}
	ap = netip.AddrPortFrom(ap.Addr().WithZone("").Unmap(), ap.Port())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bound == nil {
		l.bound = map[netip.AddrPort]string{}
	}
	l.bound[ap] = what
	return nil
}

// at names the listener to reaches, "" for none: to's port is one of
// them and its address is this machine's (loopback, unspecified, or an
// interface's), which reaches a listener on that port whatever address
// it is bound to; or to is where a bound listener listens (AddBound).
func (l *Listeners) at(to netip.AddrPort) string {
	if l == nil {
		return ""
	}
	a := to.Addr()
	l.mu.Lock()
	what := l.ports[to.Port()]
	if what == "" {
		what = l.bound[to]
	}
	if what == "" && (thisNetwork.Contains(a) || a == netip.IPv6Unspecified()) {
		for ap, w := range l.bound {
			if ap.Port() == to.Port() && ap.Addr().IsLoopback() {
				what = w
			}
		}
	}
	l.mu.Unlock()
	if what == "" {
		return ""
	}
	if a.IsLoopback() || thisNetwork.Contains(a) || a == netip.IPv6Unspecified() || ownAddrs.holds(a) {
		return what
	}
	return ""
}

// thisNetwork is 0.0.0.0/8: a connection to 0.0.0.0 reaches this machine.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// WithListeners is the whitelist that also denies the node's own
// listeners (see Listeners) to every address check with a port
// (CheckAddrPort, and Check for an IP-literal URL).
func (w *Whitelist) WithListeners(l *Listeners) *Whitelist {
	c := *w
	c.listeners = l
	return &c
}

// CheckAddrPort reports whether host may be reached at to, an address
// and port: nil, or a *DeniedError. An entry naming that address and
// port allows it; else one of the node's own listeners is denied (see
// Listeners), and any other port is judged by its address (CheckAddr).
func (w *Whitelist) CheckAddrPort(host string, to netip.AddrPort) error {
	to = netip.AddrPortFrom(to.Addr().WithZone("").Unmap(), to.Port())
	if w.addrPorts[to] {
		return nil
	}
	if what := w.listeners.at(to); what != "" {
		return &DeniedError{Host: strings.Trim(host, "[]"), Addr: to.Addr(), Port: to.Port(), Reason: what}
	}
	return w.CheckAddr(host, to.Addr())
}

// namesAddr reports whether an address and port entry names addr.
func (w *Whitelist) namesAddr(addr netip.Addr) bool {
	for ap := range w.addrPorts {
		if ap.Addr() == addr {
			return true
		}
	}
	return false
}

// DefaultPort is the port a URL of scheme reaches when it names none, 0
// for a scheme with no default.
func DefaultPort(scheme string) uint16 {
	switch scheme {
	case "http", "ws":
		return 80
	case "https", "wss":
		return 443
	case "ftp":
		return 21
	}
	return 0
}

// PortNumber is the port u reaches: its own, or its scheme's default; 0
// when it has neither or its port is no number.
func (u URL) PortNumber() uint16 {
	if u.Port == "" {
		return DefaultPort(u.Scheme)
	}
	p, err := strconv.ParseUint(u.Port, 10, 16)
	if err != nil {
		return 0
	}
	return uint16(p)
}
