package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/protocol"
)

// Defaults applied by Connect to zero fields of Options.
const (
	DefaultName           = "framebus-client"
	DefaultConnectTimeout = 5 * time.Second
	DefaultReconnectWait  = 250 * time.Millisecond
)

// Options configure a Client.
type Options struct {
	// URL of the bus (nats://host:port). Default: Credentials.URL.
	URL string
	// Credentials to authenticate with; nil reads CredentialsFile, and
	// with neither the client connects without a user (a bus without
	// authentication, or one reached in-process).
	Credentials *protocol.Credentials
	// CredentialsFile is a credentials file (see protocol.Credentials),
	// read when Credentials is nil.
	CredentialsFile string
	// Prefix is the subject prefix. Default: Credentials.Prefix, else
	// protocol.DefaultPrefix.
	Prefix string
	// Name is the client name the server shows. Default DefaultName.
	Name string
	// ConnectTimeout bounds dialing the bus. Default 5s.
	ConnectTimeout time.Duration
	// ReconnectWait is the pause between reconnect attempts. Default 250ms.
	ReconnectWait time.Duration
	// NoReconnect makes a lost connection final: requests waiting on it
	// fail at once (unavailable), as a one-shot command wants. By
	// default the client reconnects forever; every call stays bounded
	// by its context.
	NoReconnect bool
	// MaxReconnects bounds the attempts to reconnect to each server the
	// client knows (the one it dialled and the cluster's other members,
	// which the server announces), after which the connection is closed
	// for good. 0: no bound.
	MaxReconnects int
	// OnEvent, when set, is told of disconnects, reconnects, the end of
	// the connection and gaps in a watched frame stream. It is called
	// from one goroutine at a time and must not block for long.
	OnEvent func(Event)
	// NATSOptions are appended to the client's own nats options (for
	// instance nats.InProcessServer).
	NATSOptions []nats.Option
}

// EventKind says what an Event reports.
type EventKind string

// The events a Client reports through Options.OnEvent.
const (
	// EventDisconnected: the connection was lost; Err says why. The
	// client is reconnecting (unless NoReconnect).
	EventDisconnected EventKind = "disconnected"
	// EventReconnected: the connection is back, to URL.
	EventReconnected EventKind = "reconnected"
	// EventClosed: the connection is closed for good.
	EventClosed EventKind = "closed"
	// EventGap: a watch found frames missing (From..To of Tab), for
	// instance expired from the history before they were read.
	EventGap EventKind = "gap"
	// EventNodeLost: the node of a watched tab (Tab, Node) is gone or
	// lost its liveness; Err says which (node_unavailable). A watch
	// ends with it, unless it keeps waiting (KeepWaiting).
	EventNodeLost EventKind = "node-lost"
	// EventNodeBack: the node of a watched tab that keeps waiting
	// answers again; the watch goes on after its last frame.
	EventNodeBack EventKind = "node-back"
	// EventTabClosed: a watched tab made its close frame
	// (protocol.FrameClose); the watch ends after delivering it.
	EventTabClosed EventKind = "tab-closed"
)

// Event is something the connection or a watch went through.
type Event struct {
	Kind EventKind
	Err  error
	URL  string // the server, for EventReconnected
	// Tab, From and To name the frames missing, for EventGap.
	Tab      string
	From, To int64
	// Node is the watched tab's node, for EventNodeLost and
	// EventNodeBack.
	Node string
}

// Client is a connection to a framebus bus. It is safe for concurrent use.
type Client struct {
	nc    *nats.Conn
	subj  protocol.Subjects
	creds protocol.Credentials
	opts  Options

	js      jetstream.JetStream
	replies replyInboxes // of direct gets
	// tabNodes: which node listed each tab last.
	tabNodes tabNodes
	perms    permissionWatch
	eventMu  sync.Mutex // OnEvent is called by one goroutine at a time

	mu   sync.Mutex
	up   chan struct{} // closed while connected
	down chan struct{} // closed while disconnected or closed
	done bool          // the connection is closed for good
	// gone is closed when the connection is closed for good.
	gone chan struct{}
	// closedErr is the calls' error once it is (see closeErr).
	closedErr error

	// closing is set by Close: the end the caller asked for is no event.
	closing atomic.Bool
	// reconnectedAt is when the connection last came back (UnixNano; 0:
	// never lost).
	reconnectedAt atomic.Int64
}

// ReadCredentials reads a credentials file.
func ReadCredentials(path string) (protocol.Credentials, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return protocol.Credentials{}, err
	}
	var creds protocol.Credentials
	if err := json.Unmarshal(data, &creds); err != nil {
		return protocol.Credentials{}, fmt.Errorf("credentials file %s: %w", path, err)
	}
	return creds, nil
}

// credentialsError is the error of a credentials file that could not be
// read (err), as the CLI says it: permission_denied only when the system
// refused it; a missing file (its node not started yet, or elsewhere) is
// unavailable, and one that is no credentials file bad_request.
func credentialsError(err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return protocol.Errorf(protocol.CodePermissionDenied, "read credentials: %w (it is readable by the user that runs the node only)", err)
	case errors.Is(err, fs.ErrNotExist):
		return protocol.Errorf(protocol.CodeUnavailable, "read credentials: %w (a node writes its credentials file when it starts)", err)
	}
	return protocol.Errorf(protocol.CodeBadRequest, "read credentials: %w", err)
}

// Connect dials the bus. It fails at once when the bus does not answer
// (unavailable) or refuses the credentials (permission_denied); once
// connected, the client reconnects by itself (see Options.NoReconnect).
func Connect(ctx context.Context, opts Options) (*Client, error) {
	var creds protocol.Credentials
	switch {
	case opts.Credentials != nil:
		creds = *opts.Credentials
	case opts.CredentialsFile != "":
		var err error
		if creds, err = ReadCredentials(opts.CredentialsFile); err != nil {
			return nil, credentialsError(err)
		}
	}
	url := cmp.Or(opts.URL, creds.URL)
	subj, err := protocol.NewSubjects(cmp.Or(opts.Prefix, creds.Prefix))
	if err != nil {
		return nil, err
	}
	opts.Name = cmp.Or(opts.Name, DefaultName)
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.ReconnectWait <= 0 {
		opts.ReconnectWait = DefaultReconnectWait
	}
	c := &Client{subj: subj, creds: creds, opts: opts, up: make(chan struct{}), down: make(chan struct{}), gone: make(chan struct{})}
	close(c.up)
	c.perms.init()

	nopts := []nats.Option{
		nats.Name(opts.Name),
		nats.Timeout(opts.ConnectTimeout),
		nats.ReconnectWait(opts.ReconnectWait),
		nats.DisconnectErrHandler(c.disconnected),
		nats.ReconnectHandler(c.reconnected),
		nats.ClosedHandler(c.closed),
		nats.ErrorHandler(c.asyncError),
	}
	switch {
	case opts.NoReconnect:
		nopts = append(nopts, nats.NoReconnect())
	case opts.MaxReconnects > 0:
		nopts = append(nopts, nats.MaxReconnects(opts.MaxReconnects))
	default:
		nopts = append(nopts, nats.MaxReconnects(-1))
	}
	if creds.User != "" {
		nopts = append(nopts, nats.UserInfo(creds.User, creds.Password))
	}
	if inbox := cmp.Or(creds.InboxPrefix, inboxFor(creds.User)); inbox != "" {
		nopts = append(nopts, nats.CustomInboxPrefix(inbox))
	}
	nopts = append(nopts, opts.NATSOptions...)
	// Last: whatever dialer the options chose, a listener on this
	// machine gets the password only if it is the node's (busowner.go).
	if creds.BusUID != nil {
		nopts = append(nopts, busOwners(*creds.BusUID))
	}

	type dialed struct {
		nc  *nats.Conn
		err error
	}
	res := make(chan dialed, 1)
	go func() {
		nc, err := nats.Connect(url, nopts...)
		res <- dialed{nc, err}
	}()
	var d dialed
	select {
	case d = <-res:
	case <-ctx.Done():
		go func() {
			if d := <-res; d.nc != nil {
				d.nc.Close()
			}
		}()
		return nil, protocol.Errorf(protocol.CodeTimeout, "connect to the bus at %s: %w", url, ctx.Err())
	}
	if d.err != nil {
		refused := errors.Is(d.err, nats.ErrAuthorization) || errors.Is(d.err, nats.ErrAuthExpired) || errors.Is(d.err, nats.ErrAuthRevoked)
		if refused && creds.User == "" {
			return nil, protocol.Errorf(protocol.CodePermissionDenied,
				"the bus at %s refused to log in without credentials: %w (give a credentials file, or make one with: framebus creds add)", url, d.err)
		}
		if refused {
			return nil, protocol.Errorf(protocol.CodePermissionDenied,
				"the bus at %s refused user %q: %w (check the credentials file, or make one with: framebus creds add)", url, creds.User, d.err)
		}
		return nil, &protocol.Error{Code: protocol.CodeUnavailable,
			Message: fmt.Sprintf("no framebus bus answers at %s: %v", url, d.err), Err: d.err}
	}
	c.nc = d.nc
	js, err := jetstream.New(c.nc)
	if creds.JSAPIPrefix != "" { // an agent's or observer's account reaches the node's API there
		js, err = jetstream.NewWithAPIPrefix(c.nc, creds.JSAPIPrefix)
	}
	if err != nil {
		c.nc.Close()
		return nil, protocol.Errorf(protocol.CodeInternal, "jetstream: %w", err)
	}
	c.js = js
	return c, nil
}

// inboxFor is the inbox prefix a user must use ("" without a user).
func inboxFor(user string) string {
	if user == "" {
		return ""
	}
	return protocol.InboxPrefix(user)
}

// Conn is the underlying NATS connection, for what this package does not
// wrap. Do not close it directly: call Close.
func (c *Client) Conn() *nats.Conn { return c.nc }

// JetStream is the client's JetStream context, under the credentials'
// API prefix (protocol.Credentials.JSAPIPrefix) when they name one. An
// agent or observer may use only the stream info and direct gets of the
// frame stream and the content bucket through it (no consumers, so no
// ObjectStore.Get either).
func (c *Client) JetStream() jetstream.JetStream { return c.js }

// Subjects is the subject scheme of the bus.
func (c *Client) Subjects() protocol.Subjects { return c.subj }

// User and Role are those of the credentials ("" without).
func (c *Client) User() string { return c.creds.User }

// Role is the role the credentials claim ("" without).
func (c *Client) Role() string { return c.creds.Role }

// Closed reports whether the connection is closed for good.
func (c *Client) Closed() bool { return c.nc.IsClosed() }

// Close closes the connection; calls waiting on it fail.
func (c *Client) Close() {
	c.closing.Store(true)
	c.nc.Close()
}

func (c *Client) emit(e Event) {
	if c.opts.OnEvent == nil || (c.closing.Load() && e.Kind != EventGap) {
		return
	}
	c.eventMu.Lock()
	defer c.eventMu.Unlock()
	c.opts.OnEvent(e)
}

func (c *Client) disconnected(_ *nats.Conn, err error) {
	c.mu.Lock()
	select {
	case <-c.up:
		c.up = make(chan struct{})
		close(c.down)
	default:
	}
	c.mu.Unlock()
	c.emit(Event{Kind: EventDisconnected, Err: err})
}

func (c *Client) reconnected(nc *nats.Conn) {
	c.reconnectedAt.Store(time.Now().UnixNano())
	c.mu.Lock()
	if !c.done {
		select {
		case <-c.up:
		default:
			c.down = make(chan struct{})
			close(c.up)
		}
	}
	c.mu.Unlock()
	c.emit(Event{Kind: EventReconnected, URL: nc.ConnectedUrlRedacted()})
}

func (c *Client) closed(nc *nats.Conn) {
	c.mu.Lock()
	if !c.done {
		c.closedErr = closedBy(nc.LastError(), c.creds.User)
		close(c.gone)
	}
	c.done = true
	select {
	case <-c.down:
	default:
		c.up = make(chan struct{})
		close(c.down)
	}
	c.mu.Unlock()
	c.perms.failAll(c.closeErr())
	c.emit(Event{Kind: EventClosed})
}

// state returns the channels of the connection's current state: up is
// closed while connected, down once that connection is lost.
func (c *Client) state() (up, down <-chan struct{}, closed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.up, c.down, c.done
}

// errClosed is the error of a call the closed connection ends.
var errClosed = &protocol.Error{Code: protocol.CodeUnavailable,
	Message: "the bus connection is closed (the node may have stopped)", Err: nats.ErrConnectionClosed}

// closedBy is the calls' error of a connection nats closed after last:
// a login refused on reconnect (nats gives up after the second) is
// permission_denied, as at Connect; trying again would not help.
func closedBy(last error, user string) error {
	if errors.Is(last, nats.ErrAuthorization) || errors.Is(last, nats.ErrAuthExpired) || errors.Is(last, nats.ErrAuthRevoked) {
		return protocol.Errorf(protocol.CodePermissionDenied,
			"the bus refused user %q when the client reconnected, and the connection is closed: %w (its password was rotated, serve --rotate-credentials, or the user removed: take the node's current credentials file)", user, last)
	}
	return errClosed
}

// closeErr is the error of a call the closed connection ends: errClosed,
// or the refusal that closed it.
func (c *Client) closeErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closedErr != nil {
		return c.closedErr
	}
	return errClosed
}

// awaitConnected returns once the client is connected, or with ctx's
// error, or errClosed.
func (c *Client) awaitConnected(ctx context.Context, waitingFor string) (down <-chan struct{}, err error) {
	for {
		up, down, closed := c.state()
		if closed {
			return nil, c.closeErr()
		}
		select {
		case <-up:
			return down, nil // down belongs to the same connection as up
		default:
		}
		select {
		case <-up: // look again: down is the new connection's
		case <-c.gone:
			return nil, c.closeErr()
		case <-ctx.Done():
			return nil, protocol.Errorf(protocol.CodeUnavailable,
				"the bus connection is down and did not come back in time for %s: %w", waitingFor, ctx.Err())
		}
	}
}
