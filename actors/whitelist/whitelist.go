// Package whitelist decides which URLs a framebus node may load: the
// domain whitelist that is a security boundary for the browser (every
// document load, enforced in the browser's network layer) and for the HTTP
// resource.
//
// A whitelist is a list of host patterns:
//
//	example.com      exactly that host
//	*.example.com    any subdomain of example.com, at any depth; NOT the
//	                 bare example.com (list it too to allow it)
//	*                any host name, and any address outside the special
//	                 ranges (see below)
//	127.0.0.1, [::1] an IP address, in any form a browser accepts (::1
//	                 without brackets too)
//	10.0.0.0/8       a range of addresses (CIDR), IPv4 or IPv6
//	127.0.0.1:4222   an address at one port only; the one way to allow
//	                 one of the node's own listeners (see Listeners)
//
// A nil whitelist (none configured) allows every host; an empty one denies
// every host. Only http and https URLs (and about:blank) are allowed,
// unless more schemes are configured.
//
// Names are half of it: what a name resolves to is checked too
// (CheckAddrPort, used by the egress Dialer on every address and port it
// is about to connect to, which also keeps the node's own listeners out;
// see Listeners). An address in a special range (loopback, private,
// link-local, unspecified, ...; see specialRanges) is denied unless it or
// a range holding it is an entry itself, so an allowed name whose DNS
// answers 127.0.0.1 or 169.254.169.254 reaches nothing. IP-literal URLs
// follow the same rule: under "*", http://10.1.2.3/ needs 10.1.2.3 or
// its range listed.
//
// Hosts are compared the way a browser resolves them, so a URL cannot
// reach a denied host by spelling it differently: the host is taken as the
// WHATWG URL parser takes it (backslashes are slashes, tabs and newlines
// dropped, user info ignored: http://good.com@evil.com is evil.com),
// percent-decoded, mapped to ASCII with IDNA (punycode, full-width dots),
// lower-cased, its trailing dot dropped, and IPv4 addresses in decimal,
// octal or hex parts (http://2130706433/, http://0x7f.1/) canonicalised.
//
//	wl, err := whitelist.New([]string{"*.example.com", "example.com"}, nil)
//	err = wl.Check("https://mail.example.com/inbox") // nil
//	err = wl.Check("https://evil.test/")             // *DeniedError naming evil.test
package whitelist

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"github.com/framebus/framebus/actors/files"
)

// Whitelist is an immutable set of allowed host patterns and schemes.
type Whitelist struct {
	all      bool // no whitelist configured, or the pattern "*"
	anyAddr  bool // no whitelist configured: no address policy either
	exact    map[string]bool
	suffixes []string       // ".example.com" for "*.example.com"
	addrs    []netip.Prefix // address and range entries, IPv4 unmapped
	// addrPorts are address and port entries (127.0.0.1:4222): that
	// address at that port only, a listener of the node's included.
	addrPorts map[netip.AddrPort]bool
	listeners *Listeners // the node's own, denied unless named (nil: none)
	schemes   map[string]bool
	roots     *files.Roots // where file: URLs may lead (nil: nowhere)
}

// WithFileRoots is the whitelist with file: URLs (when the file scheme is
// allowed) judged by their path against roots: a path that resolves
// outside them, or a file URL with a host, is denied. Without roots
// every file: URL is.
func (w *Whitelist) WithFileRoots(roots *files.Roots) *Whitelist {
	c := *w
	c.roots = roots
	return &c
}

// DefaultSchemes are the schemes allowed unless others are configured.
var DefaultSchemes = []string{"http", "https"}

// New builds a whitelist. patterns nil allows every host; an empty,
// non-nil slice denies every host. schemes nil means DefaultSchemes.
func New(patterns []string, schemes []string) (*Whitelist, error) {
	w := &Whitelist{exact: map[string]bool{}, schemes: map[string]bool{}, addrPorts: map[netip.AddrPort]bool{},
		all: patterns == nil, anyAddr: patterns == nil}
	if schemes == nil {
		schemes = DefaultSchemes
	}
	for _, s := range schemes {
		s = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), ":"))
		if s == "" {
			return nil, errors.New("whitelist: empty scheme")
		}
		w.schemes[s] = true
	}
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		switch {
		case p == "*":
			w.all = true
		case strings.HasPrefix(p, "*."):
			host, err := canonicalHost(p[2:])
			if err != nil {
				return nil, fmt.Errorf("whitelist: pattern %q: %w", p, err)
			}
			w.suffixes = append(w.suffixes, "."+host)
		case strings.Contains(p, "*"):
			return nil, fmt.Errorf("whitelist: pattern %q: a wildcard may only be a leading \"*.\"", p)
		case strings.Contains(p, "/"):
			r, err := netip.ParsePrefix(p)
			if err != nil {
				return nil, fmt.Errorf("whitelist: pattern %q: not an address range (want CIDR, e.g. 10.0.0.0/8 or fc00::/7): %v", p, err)
			}
			if r.Addr().Is4In6() && r.Bits() >= 96 {
				r = netip.PrefixFrom(r.Addr().Unmap(), r.Bits()-96)
			}
			w.addrs = append(w.addrs, r.Masked())
		default:
			if ap, err := netip.ParseAddrPort(p); err == nil {
				if ap.Port() == 0 || ap.Addr().Zone() != "" {
					return nil, fmt.Errorf("whitelist: pattern %q: want an address and a port 1-65535, e.g. 127.0.0.1:4222 or [::1]:4222", p)
				}
				w.addrPorts[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())] = true
				continue
			}
			if h, _, err := net.SplitHostPort(p); err == nil && h != "" {
				if _, err := netip.ParseAddr(h); err != nil {
					return nil, fmt.Errorf("whitelist: pattern %q: a port goes with an IP address only (e.g. 127.0.0.1:4222): a name is allowed at every port", p)
				}
			}
			if a, err := netip.ParseAddr(p); err == nil && a.Is6() && a.Zone() == "" {
				p = "[" + p + "]" // ::1 as well as [::1]
			}
			host, err := canonicalHost(p)
			if err != nil {
				return nil, fmt.Errorf("whitelist: pattern %q: %w", p, err)
			}
			if a, ok := hostAddr(host); ok {
				w.addrs = append(w.addrs, netip.PrefixFrom(a, a.BitLen()))
				continue
			}
			w.exact[host] = true
		}
	}
	return w, nil
}

// DeniedError says why a URL may not be loaded. Host is the denied host
// (empty when the scheme is what is denied); Addr, when valid, the address
// Host resolved to that the address policy denies; Port, when not 0, the
// port there, one of the node's own listeners (Reason names it);
// Malformed, why the URL could not be checked at all.
type DeniedError struct {
	URL, Host, Scheme string
	Addr              netip.Addr
	Port              uint16
	Reason            string
	Malformed         error
}

func (e *DeniedError) Error() string {
	if e.Addr.IsValid() && e.Port != 0 {
		at := netip.AddrPortFrom(e.Addr, e.Port).String()
		where := at
		if a, ok := hostAddr(e.Host); !ok || a != e.Addr {
			where = e.Host + " at " + at
		}
		return fmt.Sprintf("permission denied: %s is %s, which no page or fetch may reach (list %s in the whitelist to allow it)", where, e.Reason, at)
	}
	if e.Addr.IsValid() {
		allow := e.Addr.String()
		if a, ok := hostAddr(e.Host); ok && a == e.Addr {
			return fmt.Sprintf("permission denied: %s is %s and not in the whitelist (list %s or its range to allow it)", e.Host, e.Reason, allow)
		}
		return fmt.Sprintf("permission denied: %s resolves to %s, %s not in the whitelist (list %s or its range to allow it)", e.Host, e.Addr, e.Reason, allow)
	}
	if e.Host != "" {
		return fmt.Sprintf("permission denied: %s is not in the whitelist", e.Host)
	}
	return "permission denied: " + e.Reason
}

// Check reports whether rawURL may be loaded: nil, or a *DeniedError.
func (w *Whitelist) Check(rawURL string) error {
	u, err := Parse(rawURL)
	if err != nil {
		return &DeniedError{URL: rawURL, Reason: fmt.Sprintf("%q is not a URL this node can check: %v", rawURL, err), Malformed: err}
	}
	if u.Scheme == "about" {
		if u.Opaque == "blank" || rawURL == "about:blank" {
			return nil
		}
		if !w.schemes["about"] {
			return &DeniedError{URL: rawURL, Scheme: u.Scheme, Reason: fmt.Sprintf("%s is not allowed (only about:blank)", rawURL)}
		}
		return nil
	}
	if !w.schemes[u.Scheme] {
		return &DeniedError{URL: rawURL, Scheme: u.Scheme, Reason: fmt.Sprintf("the %s: scheme is not allowed (allowed: %s)", u.Scheme, w.schemeList())}
	}
	if u.Scheme == "file" {
		return w.checkFile(rawURL, u)
	}
	if u.Host == "" {
		if u.Scheme == "http" || u.Scheme == "https" {
			return &DeniedError{URL: rawURL, Reason: fmt.Sprintf("%q has no host", rawURL)}
		}
		return nil // a configured host-less scheme (data:, blob: ...)
	}
	if !w.AllowsHost(u.Host) {
		return &DeniedError{URL: rawURL, Host: u.Host, Scheme: u.Scheme}
	}
	if err := w.checkLiteral(u.Host, u.PortNumber()); err != nil {
		err.URL, err.Scheme = rawURL, u.Scheme
		return err
	}
	return nil
}

// checkLiteral applies the address policy to a host that is an IP
// address (allowed by name under "*") at port (0: not known here; an
// address that an address and port entry names is then left to the
// check that knows the port); a name's addresses are checked where it is
// resolved.
func (w *Whitelist) checkLiteral(host string, port uint16) *DeniedError {
	a, ok := hostAddr(host)
	if !ok {
		return nil
	}
	err := w.CheckAddr(host, a)
	switch {
	case port != 0:
		err = w.CheckAddrPort(host, netip.AddrPortFrom(a, port))
	case w.namesAddr(a):
		err = nil
	}
	var denied *DeniedError
	if errors.As(err, &denied) {
		return denied
	}
	return nil
}

// checkFile judges a file: URL by the path the browser would read.
func (w *Whitelist) checkFile(rawURL string, u URL) error {
	if u.Host != "" {
		return &DeniedError{URL: rawURL, Scheme: u.Scheme, Reason: fmt.Sprintf("%s names a file on another machine (%s); only file:///path URLs, under %s, are allowed", rawURL, u.Host, files.Setting)}
	}
	if _, err := w.roots.Resolve(u.Path); err != nil {
		reason := strings.TrimPrefix(err.Error(), "permission denied: ")
		var missing *files.NotFoundError
		if errors.As(err, &missing) {
			reason = fmt.Sprintf("%s: %v", rawURL, err)
		}
		return &DeniedError{URL: rawURL, Scheme: u.Scheme, Reason: reason}
	}
	return nil
}

// AllowsHost reports whether a canonical host (as Parse gives it) is
// allowed by name: an IP address host by an address or range entry (or
// "*"). Where it may connect is CheckAddr's to say.
func (w *Whitelist) AllowsHost(host string) bool {
	if w.all || w.exact[host] {
		return true
	}
	if a, ok := hostAddr(host); ok {
		return w.listsAddr(a) || w.namesAddr(a)
	}
	for _, s := range w.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

func (w *Whitelist) schemeList() string {
	var s []string
	for _, k := range DefaultSchemes {
		if w.schemes[k] {
			s = append(s, k)
		}
	}
	for k := range w.schemes {
		if k != "http" && k != "https" {
			s = append(s, k)
		}
	}
	return strings.Join(s, ", ")
}

// URL is a parsed URL with its host in canonical form (no port).
type URL struct {
	Scheme string
	Host   string // canonical: IDNA ASCII, lower case, no trailing dot; IPv6 in brackets
	Port   string
	Opaque string // for schemes without "//" (about:blank)
	// Path is a file: URL's path as the browser reads it from disk:
	// percent-decoded, dot segments removed.
	Path string
}

// special are the WHATWG "special" schemes, whose URLs always have a host
// and in which a backslash is a slash.
var special = map[string]bool{"http": true, "https": true, "ws": true, "wss": true, "ftp": true, "file": true}

// dropTabsAndNewlines is made once: a Replacer builds its tables on first
// use, 6 KB for every URL checked when made per call.
var dropTabsAndNewlines = strings.NewReplacer("\t", "", "\n", "", "\r", "")

// Parse takes rawURL apart the way a browser does, as far as the scheme
// and the host are concerned.
func Parse(rawURL string) (URL, error) {
	// WHATWG: leading and trailing C0 controls and spaces are trimmed,
	// tabs and newlines anywhere removed.
	s := strings.TrimFunc(rawURL, func(r rune) bool { return r <= ' ' })
	s = dropTabsAndNewlines.Replace(s)
	colon := strings.IndexByte(s, ':')
	if colon <= 0 {
		return URL{}, errors.New("no scheme")
	}
	scheme := strings.ToLower(s[:colon])
	for i, r := range scheme {
		if !(r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return URL{}, fmt.Errorf("bad scheme %q", scheme)
		}
	}
	rest := s[colon+1:]
	if scheme == "file" {
		return parseFile(rest)
	}
	if !special[scheme] {
		if !strings.HasPrefix(rest, "//") {
			return URL{Scheme: scheme, Opaque: rest}, nil
		}
	} else {
		rest = strings.ReplaceAll(rest, `\`, "/")
	}
	// For special schemes any number of slashes starts the authority.
	rest = strings.TrimLeft(rest, "/")
	end := strings.IndexAny(rest, "/?#")
	authority := rest
	if end >= 0 {
		authority = rest[:end]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = authority[at+1:] // user info is not the host
	}
	hostport := authority
	port := ""
	if strings.HasPrefix(hostport, "[") {
		close := strings.IndexByte(hostport, ']')
		if close < 0 {
			return URL{}, errors.New("unclosed IPv6 address")
		}
		if rem := hostport[close+1:]; strings.HasPrefix(rem, ":") {
			port = rem[1:]
		}
		hostport = hostport[:close+1]
	} else if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		hostport, port = hostport[:i], hostport[i+1:]
	}
	if hostport == "" {
		if special[scheme] && scheme != "file" {
			return URL{}, errors.New("empty host")
		}
		return URL{Scheme: scheme}, nil
	}
	host, err := canonicalHost(hostport)
	if err != nil {
		return URL{}, err
	}
	return URL{Scheme: scheme, Host: host, Port: port}, nil
}

// parseFile takes a file URL apart as a browser does: file:///etc/passwd
// has no host and the path /etc/passwd (it is not a host named etc); a
// host of localhost is none.
func parseFile(rest string) (URL, error) {
	rest = strings.ReplaceAll(rest, `\`, "/")
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	host := ""
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
		end := strings.IndexByte(rest, '/')
		if end < 0 {
			end = len(rest)
		}
		host, rest = rest[:end], rest[end:]
	}
	if host != "" {
		h, err := canonicalHost(host)
		if err != nil {
			return URL{}, err
		}
		if h == "localhost" {
			h = ""
		}
		host = h
	}
	// The browser refuses an encoded slash or NUL in a file path: they
	// would make the path judged here another than the one it reads.
	if lower := strings.ToLower(rest); strings.Contains(lower, "%2f") || strings.Contains(lower, "%00") {
		return URL{}, errors.New("an encoded slash or NUL in a file path")
	}
	p, err := url.PathUnescape(rest)
	if err != nil {
		return URL{}, fmt.Errorf("bad percent-encoding in path %q", rest)
	}
	return URL{Scheme: "file", Host: host, Path: path.Clean("/" + p)}, nil
}

// canonicalHost is the WHATWG host parser's result for a special URL's
// host: percent-decoded, IDNA-mapped, IPv4/IPv6 canonical.
func canonicalHost(h string) (string, error) {
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return "", errors.New("unclosed IPv6 address")
		}
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() {
			return "", fmt.Errorf("bad IPv6 address %s", h)
		}
		if a.Is4In6() {
			return a.Unmap().String(), nil
		}
		return "[" + a.String() + "]", nil
	}
	dec, err := url.PathUnescape(h)
	if err != nil {
		return "", fmt.Errorf("bad percent-encoding in host %q", h)
	}
	ascii, err := idna.Lookup.ToASCII(dec)
	if err != nil {
		// Browsers refuse such hosts too; refusing here is the safe side.
		// (idna's own wording names runes and code points, not the fault.)
		return "", fmt.Errorf("%q is not a valid host name", h)
	}
	ascii = strings.TrimSuffix(strings.ToLower(ascii), ".")
	if ascii == "" {
		return "", errors.New("empty host")
	}
	if strings.ContainsAny(ascii, " #%/:<>?@[\\]^|") {
		return "", fmt.Errorf("forbidden character in host %q", h)
	}
	if ip, ok, err := parseIPv4(ascii); err != nil {
		return "", err
	} else if ok {
		return ip, nil
	}
	return ascii, nil
}

// parseIPv4 is the WHATWG IPv4 parser: a host whose last label is a number
// is an IPv4 address, written with 1 to 4 parts, each decimal, octal (0)
// or hex (0x), the last filling the remaining bytes.
func parseIPv4(host string) (string, bool, error) {
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if _, ok := ipv4Number(last); !ok {
		return "", false, nil // not an IPv4 address: a domain
	}
	if len(parts) > 4 {
		return "", false, fmt.Errorf("bad IPv4 address %q", host)
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return "", false, fmt.Errorf("bad IPv4 address %q", host)
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", false, fmt.Errorf("bad IPv4 address %q", host)
		}
	}
	lastMax := uint64(1) << (8 * (5 - len(nums)))
	if nums[len(nums)-1] >= lastMax {
		return "", false, fmt.Errorf("bad IPv4 address %q", host)
	}
	v := nums[len(nums)-1]
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	if v > math.MaxUint32 {
		return "", false, fmt.Errorf("bad IPv4 address %q", host)
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String(), true, nil
}

func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

// CheckHost reports whether a host (a name or an IP address, IPv6 with or
// without brackets, no port) may be connected to: nil, or a *DeniedError.
// It canonicalises the host as Check does.
func (w *Whitelist) CheckHost(host string) error {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	u, err := Parse("http://" + host + "/")
	if err != nil {
		return &DeniedError{Reason: fmt.Sprintf("%q is not a host this node can check: %v", host, err)}
	}
	if !w.AllowsHost(u.Host) {
		return &DeniedError{Host: u.Host}
	}
	if err := w.checkLiteral(u.Host, 0); err != nil {
		return err
	}
	return nil
}
