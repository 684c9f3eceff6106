package main

import (
	"math/rand/v2"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// A long-lived client of a node (framebus mcp) must outlive the node's
// restarts. nats reconnects to the address it was given, with the
// password it was given, and after a second refused login on a server it
// closes the connection for good: every later call said "the bus
// connection is closed" until the client itself was restarted. A node
// restarted without a fixed --listen port is at another port, and one
// whose credentials were rotated has another password. So a client that
// found the node through the state file follows the node: it dials the
// bus the state file names now, logs in with its credentials file as the
// file is now, and keeps trying through refusals (each call stays bounded
// by its own deadline).

// followNode is the nats options of a client that follows the node f
// leads to (see above). The URL and credentials themselves are dial's.
func (c *cli) followNode(f clientFlags) []nats.Option {
	opts := []nats.Option{nats.IgnoreAuthErrorAbort(), nats.CustomReconnectDelay(reconnectDelay)}
	url := f.bus
	if url == "" {
		url = c.getenv(envURL)
	}
	// As dial finds the bus: named, else the credentials file's, else
	// the state file's.
	var follow *stateDialer
	if url == "" && f.creds == "" && c.getenv(envCreds) == "" {
		if path, err := c.statePath(); err == nil {
			if st, err := serving.ReadState(path); err == nil {
				url = st.Bus
				if u, err := neturl.Parse(firstURL(st.Bus)); err == nil && u.Port() != "" {
					follow = &stateDialer{path: path, host: u.Hostname(), port: u.Port(), d: net.Dialer{Timeout: connectTimeout}}
				}
			}
		}
	}
	if follow != nil {
		opts = append(opts, nats.SetCustomDialer(follow))
	}
	if urlUser(url) != "" {
		return opts // the URL logs in, not the credentials file
	}
	if path, _, err := c.credsPath(f.creds, f.defaultCreds()); err == nil {
		if creds, err := serving.ReadCredentials(path); err == nil {
			opts = append(opts, loginFrom(path, creds))
		}
	}
	return opts
}

// reconnectDelay is the pause after the bus's addresses were all tried
// attempts times in a row: as busclient's at first, then 2 s, for a node
// gone a while (a refused login costs the server a bcrypt comparison;
// a client that keeps trying should not keep a core busy). The jitter
// keeps many clients from coming back at one instant.
func reconnectDelay(attempts int) time.Duration {
	d := busclient.DefaultReconnectWait
	if attempts > 8 {
		d = 2 * time.Second
	}
	return d + rand.N(100*time.Millisecond)
}

// loginFrom logs in with the credentials file at path as it is at each
// connect, so a reconnect takes up a rotated password. A file that cannot
// be read, or names another user (the client's inboxes are its user's),
// leaves the last password read.
func loginFrom(path string, first protocol.Credentials) nats.Option {
	var mu sync.Mutex
	last := first
	login := func() (string, string) {
		mu.Lock()
		defer mu.Unlock()
		if creds, err := serving.ReadCredentials(path); err == nil && creds.User == last.User {
			last = creds
		}
		return last.User, last.Password
	}
	return func(o *nats.Options) error {
		// nats refuses a user and password beside a handler.
		o.User, o.Password = "", ""
		o.UserInfo = login
		return nil
	}
}

// stateDialer dials the node's bus where the state file says it is now.
// An address other than the node's first one (another member of its
// cluster, which INFO added) is dialed as it is, and so is the first one
// while the state file names no bus (the node is not back yet).
type stateDialer struct {
	path       string // the state file
	host, port string // the node's address when the client connected
	d          net.Dialer
}

func (s *stateDialer) Dial(network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	// nats dials a host name's addresses, not the name.
	ours := err == nil && port == s.port && (host == s.host || net.ParseIP(s.host) == nil)
	if ours {
		if st, err := serving.ReadState(s.path); err == nil {
			if u, err := neturl.Parse(firstURL(st.Bus)); err == nil && u.Host != "" {
				address = u.Host
			}
		}
	}
	return s.d.Dial(network, address)
}

// firstURL is the first of a comma-separated list of URLs.
func firstURL(urls string) string {
	first, _, _ := strings.Cut(urls, ",")
	return strings.TrimSpace(first)
}
