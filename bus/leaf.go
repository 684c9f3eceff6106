package bus

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/protocol"
)

// checkLeaf reports what Start would refuse in o.Leaf.
func (o Options) checkLeaf() error {
	l := o.Leaf
	if l == nil {
		return nil
	}
	switch {
	case o.URL != "":
		return fmt.Errorf("%w: Leaf applies to an embedded server only, but URL %q is set", ErrInvalidOptions, redactURL(o.URL))
	case o.Cluster != nil:
		return fmt.Errorf("%w: Leaf and Cluster exclude each other: a node joins a deployment either as a cluster member or as a leaf node", ErrInvalidOptions)
	case o.JetStream != nil:
		return fmt.Errorf("%w: Leaf with JetStream: a leaf node's account uses the hub's JetStream (Leaf.JSDomain), it has none of its own", ErrInvalidOptions)
	case len(l.URLs) == 0:
		return fmt.Errorf("%w: Leaf.URLs: the hub's leaf node URLs (nats://host:port) are missing", ErrInvalidOptions)
	case l.Password != "" && l.User == "":
		return fmt.Errorf("%w: Leaf.Password without Leaf.User", ErrInvalidOptions)
	case l.User != "" && l.CredentialsFile != "":
		return fmt.Errorf("%w: Leaf.User and Leaf.CredentialsFile exclude each other: one login for the hub", ErrInvalidOptions)
	case l.JSDomain != "" && !protocol.ValidTabID(l.JSDomain):
		return fmt.Errorf("%w: Leaf.JSDomain %q: letters, digits, '-' and '_'", ErrInvalidOptions, l.JSDomain)
	}
	for _, u := range l.URLs {
		if _, err := leafURL(u, "", ""); err != nil {
			return err
		}
	}
	return nil
}

// leafURL is a hub URL with the leaf's login in it, as the server dials
// it (its remotes take a user and password from the URL only).
func leafURL(hub, user, password string) (*url.URL, error) {
	u, err := url.Parse(hub)
	if err != nil || u.Hostname() == "" || u.Port() == "" || u.User != nil || (u.Path != "" && u.Path != "/") ||
		(u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") {
		return nil, fmt.Errorf("%w: Leaf.URLs: %q: want nats://host:port of the hub's leaf node listener (no user in it: the login comes from Leaf.User or Leaf.CredentialsFile)", ErrInvalidOptions, redactURL(hub))
	}
	if user != "" {
		u.User = url.UserPassword(user, password)
	}
	return u, nil
}

// leafRemote binds the node's account to the hub: opts gets the remote,
// and with a JetStream domain the mapping of the node account's
// JetStream API to the hub's.
//
// The user administration requests do not cross, either way: each
// leaf's users are its own, so neither a client of the hub nor an admin
// of another leaf changes them (the user requests are answered by every
// node that hears them). Measured: the denied import alone stops both
// ways (the leaf takes no interest of the hub's in them either), the
// denied export alone only the leaf's own; the export is denied too so
// that the outgoing side does not rest on that.
func leafRemote(sopts *server.Options, l *LeafOptions, subj protocol.Subjects) {
	admin := []string{subj.AdminUsers(">")}
	remote := &server.RemoteLeafOpts{LocalAccount: NodeAccount, Credentials: l.CredentialsFile, DenyImports: admin, DenyExports: admin}
	for _, hub := range l.URLs {
		u, _ := leafURL(hub, l.User, l.Password) // checked by withDefaults
		remote.URLs = append(remote.URLs, u)
	}
	sopts.LeafNode.Remotes = []*server.RemoteLeafOpts{remote}
	// Without it, the server keeps every JetStream API subject of a
	// non-system account from crossing a leaf connection.
	if l.JSDomain != "" {
		sopts.JsAccDefaultDomain = map[string]string{NodeAccount: l.JSDomain}
	}
}

// leafServerName is the embedded server's name as a leaf node: the
// bus's Name and a random suffix. A hub replaces a leaf connection by a
// newer one from a server of the same name, so a second node started
// under a taken name would cut the first one off the hub before the
// registry refused it.
func leafServerName(name string) string { return name + "-" + rand.Text()[:6] }

// waitLeaf waits until the leaf connection to the hub is up and, with a
// JetStream domain, the hub's JetStream answers through it; it gives up
// at deadline with the last error the server logged (a refused login,
// an unreachable hub).
func (b *Bus) waitLeaf(slog *serverLogger, deadline time.Time) error {
	hubs := redactURL(strings.Join(b.opts.Leaf.URLs, ","))
	for b.srv.NumLeafNodes() == 0 {
		if time.Now().After(deadline) {
			why := slog.lastError()
			if why == "" {
				why = "nothing answered"
			}
			return fmt.Errorf("%w: no leaf node connection to the hub at %s after %s: %s", ErrServerStart, hubs, b.opts.ReadyTimeout, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
	domain := b.opts.Leaf.JSDomain
	if domain == "" {
		return nil
	}
	nc, err := b.Connect("leaf-check")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// The hub's interest in its domain's API reaches the leaf just after
	// the connection: until then a request finds no responder.
	for {
		left := time.Until(deadline)
		ctx, cancel := context.WithTimeout(context.Background(), max(left, 0)+time.Millisecond)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if left <= 0 {
			return fmt.Errorf("%w: the hub at %s is connected, but its JetStream (domain %q, Leaf.JSDomain) does not answer the node's account through it after %s: %v",
				ErrServerStart, hubs, domain, b.opts.ReadyTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
