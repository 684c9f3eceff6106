package whitelist

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	wl, err := New([]string{"*.example.test", "example.test", "127.0.0.1", "bücher.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url    string
		denied string // the host the error names; "" = allowed; "-" = denied without a host
	}{
		{"https://example.test/", ""},
		{"https://mail.example.test/inbox", ""},
		{"https://a.b.docs.example.test/x", ""},
		{"HTTPS://MAIL.EXAMPLE.TEST/", ""},
		{"https://mail.example.test./", ""},
		{"http://127.0.0.1:8080/", ""},
		{"about:blank", ""},
		{"https://xn--bcher-kva.test/", ""},
		{"https://BÜCHER.test/", ""},
		{"https://evil.test/", "evil.test"},
		{"https://example.test.evil.test/", "example.test.evil.test"},
		{"https://evilexample.test/", "evilexample.test"},
		{"https://example.test@evil.test/", "evil.test"},
		{"https://mail.example.test:443@evil.test/", "evil.test"},
		{`https://evil.test\@example.test/`, "evil.test"},
		{"https://evil.test#@example.test", "evil.test"},
		{"https://evil.test?@example.test", "evil.test"},
		{"https://%65vil.test/", "evil.test"},
		{"https://ｅｖｉｌ.test/", "evil.test"},
		{"https://evil。test/", "evil.test"},
		{"https://ev\til.test/", "evil.test"},
		{"  https://evil.test/  ", "evil.test"},
		{"https:evil.test/", "evil.test"},
		{"https:///evil.test/", "evil.test"},
		{"http://2130706433/", ""},               // 127.0.0.1 in decimal
		{"http://0x7f.1/", ""},                   // 127.0.0.1 in hex and short form
		{"http://0177.0.0.1/", ""},               // octal
		{"http://2130706434/", "127.0.0.2"},      // 127.0.0.2
		{"http://0x7f000002/", "127.0.0.2"},      // hex
		{"http://[::ffff:7f00:2]/", "127.0.0.2"}, // IPv4 in IPv6
		{"http://[::1]/", "[::1]"},
		{"http://localhost/", "localhost"},
		{"file:///etc/passwd", "-"},
		{"javascript:alert(1)", "-"},
		{"data:text/html,<h1>x", "-"},
		{"about:config", "-"},
		{"chrome://settings", "-"},
		{"ftp://example.test/", "-"},
		{"nonsense", "-"},
	}
	for _, tt := range tests {
		err := wl.Check(tt.url)
		var denied *DeniedError
		switch {
		case tt.denied == "" && err != nil:
			t.Errorf("%q denied: %v", tt.url, err)
		case tt.denied != "" && !errors.As(err, &denied):
			t.Errorf("%q allowed, want denied (%s)", tt.url, tt.denied)
		case tt.denied == "-" && denied.Host != "":
			t.Errorf("%q denied for host %q, want for its scheme: %v", tt.url, denied.Host, err)
		case tt.denied != "" && tt.denied != "-" && (denied.Host != tt.denied || !strings.Contains(err.Error(), tt.denied)):
			t.Errorf("%q: %v, want the error to name %s", tt.url, err, tt.denied)
		}
	}
}

func TestNilAndEmpty(t *testing.T) {
	all, _ := New(nil, nil)
	if err := all.Check("https://anything.test/"); err != nil {
		t.Fatalf("no whitelist denied: %v", err)
	}
	if err := all.Check("file:///etc/passwd"); err == nil {
		t.Fatal("no whitelist allowed file:")
	}
	none, _ := New([]string{}, nil)
	for _, u := range []string{"https://example.test/", "http://127.0.0.1/"} {
		if err := none.Check(u); err == nil {
			t.Fatalf("empty whitelist allowed %s", u)
		}
	}
	if err := none.Check("about:blank"); err != nil {
		t.Fatalf("empty whitelist denied about:blank: %v", err)
	}
	star, _ := New([]string{"*"}, nil)
	if err := star.Check("https://x.test/"); err != nil {
		t.Fatal(err)
	}
	withData, _ := New([]string{}, []string{"http", "https", "data"})
	if err := withData.Check("data:text/plain,hi"); err != nil {
		t.Fatalf("configured data: denied: %v", err)
	}
}

func TestBadPatterns(t *testing.T) {
	for _, p := range []string{"ex*ample.test", "*example.test", "a.*.test", "[::1", "exa mple.test"} {
		if _, err := New([]string{p}, nil); err == nil {
			t.Errorf("pattern %q accepted", p)
		}
	}
}

// The address policy, from the attacker's side: every address a name
// could resolve to that reaches this machine or its networks, in every
// form that leads there, is denied unless the whitelist lists it.
func TestCheckAddr(t *testing.T) {
	wl, err := New([]string{"*", "127.0.0.2", "10.1.0.0/16", "::1", "[fd00::7]", "::ffff:192.168.7.0/120"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr string
		kind string // a word of the error; "" = allowed
	}{
		{"93.184.215.14", ""},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"127.0.0.2", ""},                 // listed
		{"::ffff:127.0.0.2", ""},          // the same address, mapped
		{"::ffff:127.0.0.1", "loopback"},  // IPv4-mapped IPv6
		{"::1", ""},                       // listed without brackets
		{"0.0.0.0", "unspecified"},        // reaches this machine on Linux
		{"0.1.2.3", "unspecified"},        // 0/8
		{"::", "unspecified"},             // likewise
		{"10.0.0.1", "private"},           // RFC 1918, outside the listed /16
		{"10.1.200.3", ""},                // inside it
		{"172.16.0.1", "private"},         // RFC 1918
		{"172.31.255.255", "private"},     // RFC 1918
		{"172.32.0.1", ""},                // just outside
		{"192.168.1.1", "private"},        // RFC 1918
		{"192.168.7.9", ""},               // listed as a mapped range
		{"169.254.169.254", "link-local"}, // cloud metadata
		{"::ffff:169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fd00::1", "private"}, // ULA
		{"fd00::7", ""},        // listed in brackets
		{"fc00::1", "private"},
		{"fec0::1", "private"},       // site-local
		{"100.64.0.1", "CGNAT"},      // shared address space
		{"100.127.255.254", "CGNAT"}, //
		{"224.0.0.1", "multicast"},   //
		{"ff02::1", "multicast"},     //
		{"255.255.255.255", "broadcast"},
		{"::7f00:1", "IPv4-compatible"},      // ::127.0.0.1
		{"64:ff9b::7f00:1", "loopback"},      // NAT64 to 127.0.0.1
		{"64:ff9b::a9fe:a9fe", "link-local"}, // NAT64 to the metadata address
		{"64:ff9b::5db8:d70e", ""},           // NAT64 to a public address
		{"2002:7f00:1::1", "loopback"},       // 6to4 of 127.0.0.1
		{"2002:c0a8:101::1", "private"},      // 6to4 of 192.168.1.1
		{"2001:0:4136:e378::1", "Teredo"},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		err := wl.CheckAddr("rebind.test", a)
		var denied *DeniedError
		switch {
		case tt.kind == "" && err != nil:
			t.Errorf("%s denied: %v", tt.addr, err)
		case tt.kind != "" && !errors.As(err, &denied):
			t.Errorf("%s allowed, want denied (%s)", tt.addr, tt.kind)
		case tt.kind != "" && (!strings.Contains(err.Error(), tt.kind) || !strings.Contains(err.Error(), "rebind.test") || !strings.Contains(err.Error(), a.WithZone("").Unmap().String())):
			t.Errorf("%s: %v, want it to say %s and name rebind.test and the address", tt.addr, err, tt.kind)
		}
	}
	// No whitelist configured: no address policy either.
	all, _ := New(nil, nil)
	if err := all.CheckAddr("x.test", netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("no whitelist: %v", err)
	}
}

// An address of this machine is denied like loopback, public or not: it
// reaches the machine's services bound to every interface. Checked with
// the interfaces this machine has, and with a public address given as
// one of them (this machine may have none).
func TestCheckAddrOfThisMachine(t *testing.T) {
	wl, err := New([]string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	own := interfaceAddrs()
	if len(own) == 0 {
		t.Fatal("no interface addresses read (loopback at least is expected)")
	}
	for _, a := range own {
		if err := wl.CheckAddr("rebind.test", a); err == nil {
			t.Errorf("%s, an address of this machine, allowed", a)
		}
	}
	public := netip.MustParseAddr("203.0.113.7")
	if err := wl.CheckAddr("rebind.test", public); err != nil {
		t.Fatalf("%s before it is this machine's: %v", public, err)
	}
	saved := ownAddrs
	defer func() { ownAddrs = saved }()
	ownAddrs = &machineAddrs{read: func() []netip.Addr { return append(interfaceAddrs(), public) }}
	for _, form := range []string{"203.0.113.7", "::ffff:203.0.113.7"} {
		err := wl.CheckAddr("rebind.test", netip.MustParseAddr(form))
		if err == nil || !strings.Contains(err.Error(), "an address of this machine") {
			t.Errorf("%s as this machine's: %v, want denied as an address of this machine", form, err)
		}
	}
	listed, _ := New([]string{"*", "203.0.113.7"}, nil)
	if err := listed.CheckAddr("rebind.test", public); err != nil {
		t.Errorf("listed: %v", err)
	}
}

// IP-literal URLs follow the address policy, in every form a browser
// reads them, even under "*".
func TestCheckLiteralAddresses(t *testing.T) {
	star, err := New([]string{"*", "10.0.0.0/8"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ url, addr string }{
		{"http://127.0.0.1/", "127.0.0.1"},
		{"http://2130706433/", "127.0.0.1"},
		{"http://0x7f.1/", "127.0.0.1"},
		{"http://0177.0.0.1/", "127.0.0.1"},
		{"http://[::1]/", "::1"},
		{"http://[::ffff:7f00:1]/", "127.0.0.1"},
		{"http://0/", "0.0.0.0"},
		{"http://[::]/", "::"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254"},
		{"http://0xa9fea9fe/", "169.254.169.254"},
		{"http://192.168.0.1/", "192.168.0.1"},
		{"http://[fd00::1]/", "fd00::1"},
	} {
		err := star.Check(tt.url)
		var denied *DeniedError
		if !errors.As(err, &denied) || denied.Addr.String() != tt.addr || !strings.Contains(err.Error(), tt.addr) {
			t.Errorf("%s: %v, want denied naming %s", tt.url, err, tt.addr)
		}
		if err := star.CheckHost(strings.SplitN(tt.url, "/", 4)[2]); err == nil {
			t.Errorf("CheckHost of %s allowed", tt.url)
		}
	}
	for _, u := range []string{"http://10.2.3.4/", "http://012.1/", "http://93.184.215.14/", "http://example.test/"} {
		if err := star.Check(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	// An address entry allows the address as a host, in any form, and a
	// range entry every host address in it; names still need their entry.
	wl, err := New([]string{"example.test", "127.0.0.1", "10.0.0.0/8"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://127.0.0.1:8080/", "http://2130706433/", "http://[::ffff:127.0.0.1]/", "http://10.9.8.7/"} {
		if err := wl.Check(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, u := range []string{"http://127.0.0.2/", "http://11.0.0.1/", "http://evil.test/"} {
		if err := wl.Check(u); err == nil {
			t.Errorf("%s allowed", u)
		}
	}
}

func TestAddressPatterns(t *testing.T) {
	for _, p := range []string{"10.0.0.0/8", "fc00::/7", "::1", "[::1]", "127.0.0.1", "::ffff:10.0.0.0/104"} {
		if _, err := New([]string{p}, nil); err != nil {
			t.Errorf("pattern %q: %v", p, err)
		}
	}
	for _, p := range []string{"10.0.0.0/33", "10.0.0/8", "fc00::/129", "example.test/8", "::1/"} {
		if _, err := New([]string{p}, nil); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("pattern %q: %v, want an error naming it", p, err)
		}
	}
}
