package actors

import (
	"context"
	"errors"
	"os"
	"strings"
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
	_, err = n.dialer.Resolve(ctx, u.Host, u.PortNumber())
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

// ownListeners are the bus's listeners (an external bus's too, when it
// runs on this machine), which no page or fetch may reach (see
// whitelist.Listeners); the egress proxy is added when it starts.
func (n *Node) ownListeners() *whitelist.Listeners {
	own := &whitelist.Listeners{}
	urls := []struct{ what, url string }{
		{"the bus's WebSocket port", n.bus.WebSocketURL()},
		{"the bus's cluster port", n.bus.ClusterURL()},
	}
	for _, u := range strings.Split(n.bus.ClientURL(), ",") {
		urls = append(urls, struct{ what, url string }{"the bus's client port", strings.TrimSpace(u)})
	}
	for _, l := range urls {
		if l.url == "" {
			continue
		}
		if err := own.Add(l.what, l.url); err != nil {
			// An external server's URL may leave NATS's port out.
			if err = own.Add(l.what, strings.TrimSuffix(l.url, "/")+":4222"); err != nil {
				n.log.Warn().Err(err).Msg("a listener of the bus is not kept from pages and fetches")
			}
		}
	}
	return own
}
