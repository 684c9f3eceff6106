package actors

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/framebus/framebus/actors/egress"
	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/cdpdriver"
)

// resolveTimeout bounds the request filter's lookup of a host.
const resolveTimeout = 10 * time.Second

// checkRequest is the browser's request filter under a whitelist: the
// URL's host by name, then the addresses it resolves to, as the egress
// proxy will connect to them (the same Dialer, so the same pinned answer).
// The proxy checks again when it connects, whatever the filter saw; the
// filter is what makes a refused navigation permission_denied naming the
// host and the address, as a denied name is.
func (n *Node) checkRequest(rawURL string) error {
	if err := n.opts.Whitelist.Check(rawURL); err != nil {
		return err
	}
	u, err := whitelist.Parse(rawURL)
	if err != nil || u.Host == "" || !networkSchemes[u.Scheme] {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	_, err = n.dialer.Resolve(ctx, u.Host)
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		return denied
	}
	return nil // a failed lookup: the proxy cannot connect either, and says so
}

// networkSchemes are those whose URLs the browser sends to their host
// (through the proxy).
var networkSchemes = map[string]bool{"http": true, "https": true, "ws": true, "wss": true}

// Dialer is the node's way out to the network for anything it fetches
// itself: it connects only to addresses the whitelist allows (see
// egress.Dialer), with the pinned answers the browser's proxy uses.
func (n *Node) Dialer() *egress.Dialer { return n.dialer }

// browserUID is the account a launched browser runs as: its own when
// the node is root, else the node's.
func browserUID(proc *cdpdriver.Process) int {
	if u := proc.User(); u != nil {
		return u.UID
	}
	return os.Getuid()
}
