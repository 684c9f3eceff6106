// Package sockowner tells which account owns the other end of a TCP
// connection between two processes of this machine, as the kernel lists
// it in /proc/net/tcp and /proc/net/tcp6: whatever a process sends, the
// owner of its socket is what the kernel says it is.
//
// The egress proxy takes connections only from the browser's account
// (Peer); a framebus client sends its password only to a bus listener of
// the node's account (Server).
package sockowner

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// ErrNotListed: no socket of this machine has those addresses (the other
// end is on another host, or closed already).
var ErrNotListed = errors.New("no such socket on this machine")

// Peer is the uid owning the socket at the other end of c, a connection
// this process accepted or dialed: the socket whose own address is c's
// remote address and whose peer is c's local one.
func Peer(c net.Conn) (int, error) {
	return Owner(c.RemoteAddr(), c.LocalAddr())
}

// Owner is the uid owning the TCP socket whose own address is addr and
// whose peer is peer, from /proc/net/tcp (IPv4) or /proc/net/tcp6 (IPv6,
// IPv4-mapped too). A connection the server has not accepted yet is
// listed too, under its listener's owner.
func Owner(addr, peer net.Addr) (int, error) {
	a, err1 := netip.ParseAddrPort(addr.String())
	p, err2 := netip.ParseAddrPort(peer.String())
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	var errs []error
	for _, table := range []struct {
		file string
		v6   bool
	}{{"/proc/net/tcp", false}, {"/proc/net/tcp6", true}} {
		own, ok1 := procAddr(a, table.v6)
		other, ok2 := procAddr(p, table.v6)
		if !ok1 || !ok2 {
			continue
		}
		uid, err := findSocket(table.file, own, other)
		if err == nil {
			return uid, nil
		}
		if !errors.Is(err, ErrNotListed) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return 0, fmt.Errorf("the socket %s -> %s: %w", addr, peer, ErrNotListed)
	}
	return 0, fmt.Errorf("the socket %s -> %s: %w", addr, peer, errors.Join(errs...))
}

// findSocket reads a /proc/net/tcp table for the socket with the given
// local and remote addresses (as the table writes them) and returns its
// uid.
func findSocket(file, local, remote string) (int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[1] != local || fields[2] != remote {
			continue
		}
		return strconv.Atoi(fields[7])
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, ErrNotListed
}

// procAddr writes an address and port as /proc/net/tcp does: the
// address's 32-bit words in hex as the machine stores them, a colon, the
// port in hex. An IPv4 address is written in tcp6 as IPv4-mapped.
func procAddr(ap netip.AddrPort, v6 bool) (string, bool) {
	a := ap.Addr().Unmap()
	var b []byte
	switch {
	case v6:
		b16 := a.As16() // an IPv4 address as ::ffff:a.b.c.d
		b = b16[:]
	case a.Is4():
		b4 := a.As4()
		b = b4[:]
	default:
		return "", false
	}
	var s strings.Builder
	for i := 0; i < len(b); i += 4 {
		fmt.Fprintf(&s, "%08X", binary.NativeEndian.Uint32(b[i:i+4]))
	}
	fmt.Fprintf(&s, ":%04X", ap.Port())
	return s.String(), true
}
