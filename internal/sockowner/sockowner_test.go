package sockowner

import (
	"errors"
	"net"
	"os"
	"testing"
)

// The owner of either end of a connection on this machine is found, on
// IPv4, IPv6 and a dual-stack listener's IPv4-mapped addresses, from both
// sides; an address no socket has is ErrNotListed.
func TestOwnerOfEachEnd(t *testing.T) {
	for _, c := range []struct{ name, listen, dial string }{
		{"ipv4", "tcp4", "127.0.0.1"},
		{"ipv6", "tcp6", "::1"},
		{"v4-mapped", "tcp", "127.0.0.1"}, // a listener on [::] sees ::ffff:127.0.0.1
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0", "tcp": "[::]:0"}[c.listen]
			ln, err := net.Listen(c.listen, addr)
			if err != nil {
				t.Fatalf("no %s listener: %v", c.name, err)
			}
			defer ln.Close()
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			dialed, err := net.Dial("tcp", net.JoinHostPort(c.dial, port))
			if err != nil {
				t.Fatal(err)
			}
			defer dialed.Close()
			accepted, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer accepted.Close()
			for side, conn := range map[string]net.Conn{"the dialer's": dialed, "the listener's": accepted} {
				uid, err := Peer(conn)
				if err != nil || uid != os.Geteuid() {
					t.Errorf("%s peer (%s -> %s): uid %d, %v; want %d", side, conn.LocalAddr(), conn.RemoteAddr(), uid, err, os.Geteuid())
				}
			}
		})
	}
	gone := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	if _, err := Owner(gone, gone); !errors.Is(err, ErrNotListed) {
		t.Errorf("no such socket: %v, want ErrNotListed", err)
	}
}
