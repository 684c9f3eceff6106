package whitelist

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// The address policy: where an allowed host may actually be reached.
// Checking names alone lets an allowed name whose DNS answers an internal
// address (DNS rebinding, or any domain whose DNS an attacker controls)
// reach loopback, the LAN or a cloud metadata service, framebus's own bus
// and egress proxy included. So every address a connection goes to is
// checked, and the special ranges below need an entry of their own.

// specialRange is a range of addresses no allowed name may resolve to
// unless the whitelist lists it (or an address in it).
type specialRange struct {
	prefix netip.Prefix
	kind   string // "a loopback address", as the error says it
}

// specialRanges are checked in order; the first that holds an address
// names it. Public unicast addresses are in none of them. Chosen: what
// reaches this machine or its networks without a route through the
// internet (unspecified, loopback, RFC 1918 and ULA, link-local with the
// metadata address 169.254.169.254, CGNAT's shared space, which carriers
// and cloud VPCs use internally), what is not one host (multicast,
// broadcast), and IPv6 forms that carry or tunnel to an IPv4 address
// (IPv4-compatible, NAT64 local use, Teredo); NAT64's well-known prefix
// and 6to4 are judged by the IPv4 address inside (see embeddedIPv4).
var specialRanges = func() []specialRange {
	var out []specialRange
	for _, r := range []struct{ prefix, kind string }{
		{"0.0.0.0/8", "an unspecified address"},
		{"127.0.0.0/8", "a loopback address"},
		{"10.0.0.0/8", "a private address"},
		{"172.16.0.0/12", "a private address"},
		{"192.168.0.0/16", "a private address"},
		{"100.64.0.0/10", "a shared (CGNAT) address"},
		{"169.254.0.0/16", "a link-local address"},
		{"224.0.0.0/4", "a multicast address"},
		{"240.0.0.0/4", "a reserved or broadcast address"},
		{"::/128", "an unspecified address"},
		{"::1/128", "a loopback address"},
		{"::/96", "an IPv4-compatible address"},
		{"fc00::/7", "a private (unique local) address"},
		{"fec0::/10", "a private (site-local) address"},
		{"fe80::/10", "a link-local address"},
		{"ff00::/8", "a multicast address"},
		{"64:ff9b:1::/48", "a private (local NAT64) address"},
		{"2001::/32", "a Teredo address"},
	} {
		out = append(out, specialRange{netip.MustParsePrefix(r.prefix), r.kind})
	}
	return out
}()

// CheckAddr reports whether host (as Parse canonicalises it, or as a
// caller names it) may be reached at addr: nil, or a *DeniedError naming
// both. An address in a special range is denied unless an address or
// range entry holds it; any other address is allowed (the name was
// checked already). With no whitelist configured every address is.
func (w *Whitelist) CheckAddr(host string, addr netip.Addr) error {
	addr = addr.WithZone("").Unmap()
	if w.anyAddr || w.listsAddr(addr) {
		return nil
	}
	if kind := specialKind(addr); kind != "" {
		return &DeniedError{Host: strings.Trim(host, "[]"), Addr: addr, Reason: kind}
	}
	return nil
}

// specialKind names the special range addr is in, "" for none. An
// address of this machine's own interfaces counts as one, public or not:
// it reaches the machine's services bound to every interface (0.0.0.0)
// from inside, past any firewall in front of it.
func specialKind(addr netip.Addr) string {
	for _, r := range specialRanges {
		if r.prefix.Contains(addr) {
			return r.kind
		}
	}
	if ownAddrs.holds(addr) {
		return "an address of this machine"
	}
	if v4, ok := embeddedIPv4(addr); ok {
		if kind := specialKind(v4); kind != "" {
			return kind + " (" + v4.String() + " inside IPv6)"
		}
	}
	return ""
}

// nat64 and sixToFour are IPv6 prefixes whose addresses are forwarded to
// the IPv4 address they carry.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 is the IPv4 address a NAT64 (last 32 bits) or 6to4 (bits
// 16 to 48) address leads to.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	b := addr.As16()
	switch {
	case !addr.Is6():
		return netip.Addr{}, false
	case nat64.Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// listsAddr reports whether an address or range entry holds addr.
func (w *Whitelist) listsAddr(addr netip.Addr) bool {
	for _, r := range w.addrs {
		if r.Contains(addr) {
			return true
		}
	}
	return false
}

// hostAddr is the address a canonical host names, if it is an IP address
// ("127.0.0.1", "[::1]"); IPv4-mapped IPv6 is its IPv4 address.
func hostAddr(host string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// ownAddrs are the addresses of this machine's interfaces, read again when
// older than a few seconds (interfaces come and go; a check must not ask
// the kernel for each request).
var ownAddrs = &machineAddrs{read: interfaceAddrs}

type machineAddrs struct {
	read func() []netip.Addr // the interfaces' addresses now

	mu    sync.Mutex
	addrs []netip.Addr
	at    time.Time
}

const machineAddrsFresh = 5 * time.Second

func (m *machineAddrs) holds(addr netip.Addr) bool {
	m.mu.Lock()
	if time.Since(m.at) > machineAddrsFresh {
		m.addrs, m.at = m.read(), time.Now()
	}
	addrs := m.addrs
	m.mu.Unlock()
	for _, a := range addrs {
		if a == addr {
			return true
		}
	}
	return false
}

// interfaceAddrs lists the addresses of every interface, unmapped and
// without zones; none when the kernel will not say.
func interfaceAddrs() []netip.Addr {
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, ia := range ifaddrs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil {
			out = append(out, p.Addr().WithZone("").Unmap())
		}
	}
	return out
}
