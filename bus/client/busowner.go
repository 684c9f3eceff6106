package client

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/internal/sockowner"
)

// A client sends its password in the clear in its first line (CONNECT)
// to whatever answers at the bus's address. On this machine, that can be
// anyone: when the node stops (killed, restarting), its port is free,
// any local user can listen on it, and every client reconnecting by
// itself hands over its password, which the node, started again with its
// kept credentials, still takes. So before a connection to a listener on
// this machine is used, the client asks the kernel whose it is (the
// owner of the socket at the other end, see internal/sockowner), and
// goes on only with the node's account: the one its credentials name
// (BusUID), its own or root's. Any other is dropped before a byte is sent,
// as a bus that did not answer: the client keeps trying, and finds the
// node when it is back. A listener on another host is not in this
// machine's tables and is dialled as before. Credentials that name no
// account (a URL's login for an external bus, which may run as any
// account; a file written before busUid was) are not checked.

// StrangerBusError is a listener on this machine, at the bus's address,
// of an account that does not run the node: nothing was sent to it.
type StrangerBusError struct {
	Addr string
	UID  int
}

func (e *StrangerBusError) Error() string {
	return fmt.Sprintf("the listener at %s belongs to uid %d, not to the node's account: it is not the bus (another local user holds the node's port?), and no password was sent to it", e.Addr, e.UID)
}

// busOwnerWait bounds how long a connection's other end may take to
// show in the kernel's tables (on loopback it is there when the dial
// returns: the listener's pending connection is listed under its owner).
const busOwnerWait = time.Second

// busOwners makes every connection the nats client dials go through
// checkBusOwner first, whatever dialer the options chose (it must be the
// last option).
func busOwners(credsUID int) nats.Option {
	return func(o *nats.Options) error {
		inner := o.CustomDialer
		if inner == nil {
			d := o.Dialer
			if d == nil {
				d = &net.Dialer{Timeout: o.Timeout}
			}
			inner = d
		}
		o.CustomDialer = &ownerDialer{inner: inner, uids: trustedUIDs(credsUID)}
		return nil
	}
}

// trustedUIDs are the accounts a bus on this machine may run as.
func trustedUIDs(credsUID int) []int {
	return []int{os.Geteuid(), 0, credsUID}
}

type ownerDialer struct {
	inner nats.CustomDialer
	uids  []int
}

func (d *ownerDialer) Dial(network, address string) (net.Conn, error) {
	c, err := d.inner.Dial(network, address)
	if err != nil {
		return nil, err
	}
	if err := checkBusOwner(c, d.uids); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// SkipTLSHandshake passes on the inner dialer's choice (see nats).
func (d *ownerDialer) SkipTLSHandshake() bool {
	s, ok := d.inner.(interface{ SkipTLSHandshake() bool })
	return ok && s.SkipTLSHandshake()
}

// checkBusOwner returns a *StrangerBusError when c's other end is a
// socket of this machine owned by none of uids. A loopback address must
// be found in the tables; any other may be another host's.
func checkBusOwner(c net.Conn, uids []int) error {
	remote, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return nil // not TCP: nothing the kernel's tables list
	}
	deadline := time.Now().Add(busOwnerWait)
	for {
		uid, err := sockowner.Peer(c)
		if err == nil {
			for _, ok := range uids {
				if uid == ok {
					return nil
				}
			}
			return &StrangerBusError{Addr: remote.String(), UID: uid}
		}
		if !errors.Is(err, sockowner.ErrNotListed) {
			return fmt.Errorf("whose is the listener at %s: %w", remote, err)
		}
		if !remote.IP.IsLoopback() {
			return nil // another host's
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("whose is the listener at %s: %w", remote, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
