package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/framebus/framebus/internal/sockowner"
)

// Who may use the proxy: only the node's browsers. Every other process of
// the machine can reach a loopback port too, and would get through the
// proxy to whitelisted hosts (and, from the proxy's side, look like the
// browser). The browser runs as an account of its own (the node's own
// when the node is not root), so the proxy takes a connection only from a
// process of an account it was told (Allow), and learns the account from
// the kernel: the owner of the other end of the TCP connection, in
// /proc/net/tcp (see internal/sockowner).
//
// Why not a password: Chromium takes no credentials in --proxy-server;
// answering its challenge over CDP (Fetch.authRequired) reaches only the
// requests the Fetch domain sees, not WebSockets, and every new browser
// context starts without the answer. Why not a unix socket: Chromium's
// HTTP proxies are host:port only. The owner of a socket is what the
// kernel says it is, whatever the process sends.

// StrangerError is the proxy's refusal of a connection from a process
// of an account other than the browsers'.
type StrangerError struct {
	UID int // -1: the other end was not found (it closed, or is not local)
}

func (e *StrangerError) Error() string {
	if e.UID < 0 {
		return "egress proxy: only the node's browser may use this proxy (the connection's owner is unknown)"
	}
	return fmt.Sprintf("egress proxy: only the node's browser may use this proxy (the connection is uid %d's)", e.UID)
}

// peerKey is the context key of a connection's peer.
type peerKey struct{}

// peer is the other end of one connection to the proxy; its owner is
// looked up once, when its first request asks.
type peer struct {
	local, remote net.Addr
	once          sync.Once
	uid           int
	err           error
}

func (c *peer) owner() (int, error) {
	c.once.Do(func() { c.uid, c.err = sockowner.Owner(c.remote, c.local) })
	return c.uid, c.err
}

// withPeer is the proxy server's ConnContext: each connection carries
// its peer, looked up when asked.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, &peer{local: c.LocalAddr(), remote: c.RemoteAddr()})
}

// Allow lets the processes of account uid use the proxy: the node calls
// it with the account each browser it launches runs as. No one else's
// connections are taken (403).
func (p *Proxy) Allow(uid int) {
	p.uidsMu.Lock()
	defer p.uidsMu.Unlock()
	p.uids[uid] = true
}

// fromBrowser answers a request of a connection whose owner is not an
// allowed account with 403, and says whether it may go on.
func (p *Proxy) fromBrowser(w http.ResponseWriter, r *http.Request) bool {
	uid, err := -1, errNoPeer
	if c, ok := r.Context().Value(peerKey{}).(*peer); ok {
		uid, err = c.owner()
	}
	if err != nil {
		uid = -1
	} else if p.takes(uid) {
		return true
	}
	p.strangers.Add(1)
	refusal := &StrangerError{UID: uid}
	p.log.Warn().Err(err).Int("uid", uid).Str("from", r.RemoteAddr).Msg("egress proxy: refused a process that is not the node's browser")
	w.Header().Set("Connection", "close")
	http.Error(w, refusal.Error(), http.StatusForbidden)
	return false
}

// errNoPeer: a request without its connection's peer (never, from the
// proxy's own server).
var errNoPeer = errors.New("no peer")

// takes reports whether uid is an allowed account.
func (p *Proxy) takes(uid int) bool {
	p.uidsMu.Lock()
	defer p.uidsMu.Unlock()
	return p.uids[uid]
}

// Strangers counts the connections' requests the proxy refused because
// they did not come from the node's browsers.
func (p *Proxy) Strangers() int64 { return p.strangers.Load() }
