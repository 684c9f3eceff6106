package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resolver looks a host name up; *net.Resolver is one. Tests give the
// Dialer one that answers what they need, differently each time.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// AddrCheck decides whether host may be reached at to, an address and
// port: nil allows it. whitelist.(*Whitelist).CheckAddrPort is the
// node's (which also keeps the node's own listeners out).
type AddrCheck func(host string, to netip.AddrPort) error

// DefaultPin is how long a Dialer keeps using the addresses it checked for
// a name before it looks the name up again.
const DefaultPin = 30 * time.Second

// Dialer connects only to addresses it checked: it resolves names itself,
// checks every address of the answer, and dials those addresses, never the
// name, so a name cannot resolve to one address for the check and another
// for the connection (DNS rebinding). It is the one way out for anything
// the node fetches on a page's or a plan's behalf: the egress proxy dials
// with it, and the browser's request filter asks it (Resolve) so that a
// denied address fails a navigation as permission_denied.
//
//	d := egress.NewDialer(wl.CheckAddrPort, nil)
//	conn, err := d.DialContext(ctx, "tcp", "example.com:443")
//	// err wraps a *whitelist.DeniedError when example.com resolves to,
//	// say, 127.0.0.1 and the whitelist does not list it.
type Dialer struct {
	check    AddrCheck
	resolver Resolver
	pin      time.Duration
	timeout  time.Duration

	mu   sync.Mutex
	pins map[string]pinned // by host, lower case
}

// pinned is a checked answer and when it stops being used.
type pinned struct {
	addrs []netip.Addr
	until time.Time
}

// NewDialer makes a Dialer that checks addresses with check and looks
// names up with r (nil: the machine's resolver). A name's checked answer
// is pinned for DefaultPin: the browser's filter and the proxy then judge
// a request by the same answer, and a page's requests do not each wait
// for DNS twice.
func NewDialer(check AddrCheck, r Resolver) *Dialer {
	if r == nil {
		r = net.DefaultResolver
	}
	return &Dialer{check: check, resolver: r, pin: DefaultPin, timeout: dialTimeout, pins: map[string]pinned{}}
}

// PinFor sets how long a checked answer is used; 0 looks every name up
// again on every call (each check and each connection).
func (d *Dialer) PinFor(pin time.Duration) *Dialer {
	d.pin = pin
	return d
}

// DeniedError is a Dialer's refusal: host resolved to an address the
// check denied at Port. Err is the check's error (a
// *whitelist.DeniedError for the node's).
type DeniedError struct {
	Host string
	Addr netip.Addr
	Port uint16
	Err  error
}

func (e *DeniedError) Error() string { return e.Err.Error() }
func (e *DeniedError) Unwrap() error { return e.Err }

// Resolve returns host's addresses, every one of them checked at port:
// an IP address is checked as it is; a name is looked up (or its pinned
// answer used, checked again for this port) and refused whole, as a
// *DeniedError, when any address of the answer is denied (an answer
// mixing a public and an internal address is a rebinding trick too). A
// failed lookup is returned as it is.
func (d *Dialer) Resolve(ctx context.Context, host string, port uint16) ([]netip.Addr, error) {
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		if err := d.checkAll(host, []netip.Addr{a}, port); err != nil {
			return nil, err
		}
		return []netip.Addr{a.WithZone("").Unmap()}, nil
	}
	if addrs, ok := d.pinned(host); ok {
		if err := d.checkAll(host, addrs, port); err != nil {
			return nil, err
		}
		return addrs, nil
	}
	addrs, err := d.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("look up %s: no address", host)
	}
	for i, a := range addrs {
		addrs[i] = a.WithZone("").Unmap()
	}
	if err := d.checkAll(host, addrs, port); err != nil {
		return nil, err
	}
	d.pinAnswer(host, addrs)
	return addrs, nil
}

func (d *Dialer) checkAll(host string, addrs []netip.Addr, port uint16) error {
	for _, a := range addrs {
		if err := d.check(host, netip.AddrPortFrom(a, port)); err != nil {
			return &DeniedError{Host: host, Addr: a, Port: port, Err: err}
		}
	}
	return nil
}

func (d *Dialer) pinned(host string) ([]netip.Addr, bool) {
	if d.pin <= 0 {
		return nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.pins[host]
	if !ok || time.Now().After(p.until) {
		delete(d.pins, host)
		return nil, false
	}
	return slices.Clone(p.addrs), true
}

func (d *Dialer) pinAnswer(host string, addrs []netip.Addr) {
	if d.pin <= 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	for h, p := range d.pins { // drop the expired, so the map stays small
		if now.After(p.until) {
			delete(d.pins, h)
		}
	}
	d.pins[host] = pinned{addrs: addrs, until: now.Add(d.pin)}
}

// DialContext connects to addr (host:port) at one of host's checked
// addresses, trying them in order. Its signature is net.Dialer's, so an
// http.Transport can use it. A refusal wraps a *DeniedError.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	portNum, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("egress: %s: the port is no number 0-65535", addr)
	}
	addrs, err := d.Resolve(ctx, host, uint16(portNum))
	if err != nil {
		return nil, err
	}
	nd := net.Dialer{Timeout: d.timeout}
	var errs []error
	for _, a := range addrs {
		c, err := nd.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("egress: connect to %s: %w", addr, errors.Join(errs...))
}
