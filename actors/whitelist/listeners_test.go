package whitelist

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// The node's own listeners are denied at every address of this machine,
// whatever the whitelist allows, unless an entry names the address and
// port; other ports of an allowed address are not affected.
func TestOwnListenersNeedTheirPortNamed(t *testing.T) {
	own := &Listeners{}
	for what, addr := range map[string]string{"the bus's client port": "nats://127.0.0.1:4222", "the node's egress proxy": "127.0.0.1:3128"} {
		if err := own.Add(what, addr); err != nil {
			t.Fatal(err)
		}
	}
	if err := own.Add("no port", "nats://127.0.0.1"); err == nil {
		t.Error("a listener without a port was taken")
	}
	machine := []string{"127.0.0.1", "127.0.0.2", "::1", "0.0.0.0", "::", "::ffff:127.0.0.1"}
	if addrs := interfaceAddrs(); len(addrs) > 0 {
		machine = append(machine, addrs[0].String())
	}
	for _, patterns := range [][]string{{"127.0.0.1", "::1", "0.0.0.0/8", "::/128", "*", "rebind.test"}, nil} {
		wl, err := New(patterns, nil)
		if err != nil {
			t.Fatal(err)
		}
		wl = wl.WithListeners(own)
		for _, a := range machine {
			for _, port := range []uint16{4222, 3128} {
				to := netip.AddrPortFrom(netip.MustParseAddr(a), port)
				err := wl.CheckAddrPort("rebind.test", to)
				var denied *DeniedError
				if !errors.As(err, &denied) || denied.Port != port || !strings.Contains(err.Error(), "which no page or fetch may reach") {
					t.Errorf("whitelist %v: %s: %v, want denied as the node's own", patterns, to, err)
				}
			}
		}
		// Another port of the machine, and the listener's port elsewhere.
		if err := wl.CheckAddrPort("rebind.test", netip.MustParseAddrPort("127.0.0.1:8080")); err != nil {
			t.Errorf("whitelist %v: 127.0.0.1:8080: %v", patterns, err)
		}
		if err := wl.CheckAddrPort("example.com", netip.MustParseAddrPort("93.184.216.34:4222")); err != nil {
			t.Errorf("whitelist %v: a public address at port 4222: %v", patterns, err)
		}
	}
	wl, _ := New([]string{"127.0.0.1"}, nil)
	wl = wl.WithListeners(own)
	for _, u := range []string{"http://127.0.0.1:4222/", "http://2130706433:4222/", "https://[::ffff:7f00:1]:3128/"} {
		if err := wl.Check(u); err == nil || !strings.Contains(err.Error(), "127.0.0.1:") {
			t.Errorf("Check %s: %v, want denied naming the address and port", u, err)
		}
	}
	if err := wl.Check("http://127.0.0.1:8080/"); err != nil {
		t.Errorf("Check of another port: %v", err)
	}

	// Named explicitly: that address at that port, nothing more.
	named, err := New([]string{"127.0.0.1:4222", "[::1]:3128"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	named = named.WithListeners(own)
	for _, ok := range []string{"127.0.0.1:4222", "[::1]:3128", "[::ffff:127.0.0.1]:4222"} {
		if err := named.CheckAddrPort("x.test", netip.MustParseAddrPort(ok)); err != nil {
			t.Errorf("named %s: %v", ok, err)
		}
	}
	for _, no := range []string{"127.0.0.1:3128", "127.0.0.2:4222", "127.0.0.1:80", "[::1]:4222"} {
		if err := named.CheckAddrPort("x.test", netip.MustParseAddrPort(no)); err == nil {
			t.Errorf("named 127.0.0.1:4222 and [::1]:3128 allowed %s", no)
		}
	}
	if err := named.Check("http://127.0.0.1:4222/"); err != nil {
		t.Errorf("Check of the named listener: %v", err)
	}
	if err := named.Check("http://127.0.0.1/"); err == nil {
		t.Error("127.0.0.1:4222 allowed 127.0.0.1 at port 80")
	}
	if err := named.CheckHost("127.0.0.1"); err != nil {
		t.Errorf("CheckHost (no port: the connection's check judges it): %v", err)
	}
	for _, bad := range []string{"localhost:4222", "127.0.0.1:0", "127.0.0.1:99999", "[fe80::1%eth0]:80"} {
		if _, err := New([]string{bad}, nil); err == nil {
			t.Errorf("pattern %q was taken", bad)
		}
	}
}

// A listener this process bound to one address itself (the egress proxy
// at 127.0.0.1:P) is denied there, and at 0.0.0.0:P, which reaches it;
// another loopback address at that port (a site at 127.0.0.2:P) is
// another socket and is judged as any other. (A test site at 127.0.0.2
// was refused as the node's egress proxy when their ports matched.) One
// bound to the unspecified address is denied at every address of the
// machine.
func TestBoundListenerIsDeniedWhereItListens(t *testing.T) {
	own := &Listeners{}
	if err := own.AddBound("the node's egress proxy", "127.0.0.1:3128"); err != nil {
		t.Fatal(err)
	}
	if err := own.AddBound("all of them", "0.0.0.0:4222"); err != nil {
		t.Fatal(err)
	}
	wl, err := New([]string{"127.0.0.1", "127.0.0.2", "0.0.0.0/8", "::1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wl = wl.WithListeners(own)
	for addr, denied := range map[string]bool{
		"127.0.0.1:3128": true, "0.0.0.0:3128": true, "127.0.0.2:3128": false, "[::1]:3128": false,
		"127.0.0.1:4222": true, "127.0.0.2:4222": true, "0.0.0.0:4222": true, "[::1]:4222": true,
		"127.0.0.1:8080": false,
	} {
		err := wl.CheckAddrPort("x.test", netip.MustParseAddrPort(addr))
		if got := err != nil; got != denied {
			t.Errorf("%s: %v, want denied %v", addr, err, denied)
		}
	}
}
