package bus

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/protocol"
)

// Bus is one NATS server as seen by this process: either a nats-server
// embedded here, or an external one reached by URL. Connect hands out client
// connections to it; Close takes them and the embedded server down.
//
// A Bus is safe for concurrent use.
type Bus struct {
	opts Options // with defaults applied
	log  zerolog.Logger

	srv        *server.Server // nil for an external bus
	tmpStore   string         // the JetStream store dir Start made, removed by Close
	clientURL  string
	maxPayload int64

	conns conns

	internal   *internalUser // the identity of in-process connections; nil external
	subjects   protocol.Subjects
	wsURL      string
	clusterURL string // host:port of the cluster listener; "" without
	nameClash  <-chan struct{}

	auth     *authenticator // who may log in; nil external
	registry *usersRegistry // a cluster's shared users; nil otherwise
	// usersChanged is told when another member changed the users.
	usersChanged atomic.Pointer[func()]

	closeOnce sync.Once
	closeErr  error
}

// Start embeds a nats-server, or, when opts.URL is set, checks that the NATS
// server there answers. It returns when clients can connect.
func Start(opts Options) (*Bus, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Bus{opts: o, log: o.Logger.With().Str("component", "bus").Logger()}
	b.subjects, _ = protocol.NewSubjects(o.Prefix) // checked by withDefaults
	if o.URL != "" {
		err = b.startExternal()
	} else {
		err = b.startEmbedded()
	}
	if err != nil {
		if b.tmpStore != "" {
			os.RemoveAll(b.tmpStore)
		}
		return nil, err
	}
	return b, nil
}

// Connect returns a new client connection: in-process (nats.InProcessServer)
// when embedded, dialing Options.URL otherwise. name is the client name,
// shown by the server as "<Options.Name>/<name>". Extra nats options are
// appended, so they override the defaults here; a nats.ClosedHandler among
// them is kept and chained (do not replace it later with SetClosedHandler,
// or Close will wait DrainTimeout for that connection).
//
// Close drains every connection that is still open; closing one earlier
// yourself is fine.
func (b *Bus) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	if b.conns.isClosed() {
		return nil, ErrClosed
	}
	clientName := b.opts.Name
	if name != "" {
		clientName += "/" + name
	}
	all := make([]nats.Option, 0, len(opts)+3)
	all = append(all, nats.Name(clientName))
	url := b.opts.URL
	if b.srv != nil {
		all = append(all, nats.InProcessServer(b.srv), b.internal.option())
		url = "" // unused: the in-process provider replaces dialing
	}
	all = append(all, opts...)
	watchOpt, done := b.conns.watch()
	all = append(all, watchOpt) // last, so it wraps the caller's ClosedCB

	nc, err := nats.Connect(url, all...)
	if err != nil {
		if b.srv != nil {
			return nil, fmt.Errorf("bus: connect %q in-process: %w", clientName, err)
		}
		return nil, fmt.Errorf("%w at %s: %w", ErrConnect, redactURL(b.opts.URL), err)
	}
	if !b.conns.add(nc, done) {
		nc.Close()
		return nil, ErrClosed
	}
	return nc, nil
}

// ClientURL is the URL other processes use to reach this bus. Embedded, it is
// nats://HOST:PORT with the port actually chosen (an unspecified listen host
// such as 0.0.0.0 is given as 127.0.0.1), or "" with NoListen. External, it
// is Options.URL.
func (b *Bus) ClientURL() string { return b.clientURL }

// ClusterURL is nats-route://HOST:PORT of the cluster listener (what
// other members put in their ClusterOptions.Routes), "" without one.
func (b *Bus) ClusterURL() string {
	if b.clusterURL == "" {
		return ""
	}
	return "nats-route://" + b.clusterURL
}

// NameClash is closed when another server of the cluster turns out to
// have this one's name (Options.Name, the node's): the cluster refuses
// the routes between them, and JetStream cannot tell them apart, so
// what this server asks of JetStream may never be answered. Never
// closed on an external bus or without a cluster.
func (b *Bus) NameClash() <-chan struct{} { return b.nameClash }

// WebSocketURL is ws://HOST:PORT of the WebSocket listener, "" without one.
func (b *Bus) WebSocketURL() string { return b.wsURL }

// JetStream reports whether the embedded server runs JetStream (always
// false for an external bus: ask that server).
func (b *Bus) JetStream() bool { return b.srv != nil && b.srv.JetStreamEnabled() }

// Subjects are the subjects under Options.Prefix, whose roles' permissions
// the users have.
func (b *Bus) Subjects() protocol.Subjects { return b.subjects }

// Embedded reports whether this Bus runs its own nats-server.
func (b *Bus) Embedded() bool { return b.srv != nil }

// MaxPayload is the largest message, in bytes, the server accepts: the
// configured value when embedded, the one the server announced in its INFO
// when external.
func (b *Bus) MaxPayload() int64 { return b.maxPayload }

// Server returns the embedded nats-server, or nil for an external bus. It is
// there for what this package does not wrap (monitoring, accounts); do not
// shut it down directly, call Close.
func (b *Bus) Server() *server.Server { return b.srv }

// Close drains and closes every connection Connect handed out that is still
// open, then shuts the embedded server down and waits for it. It returns an
// error wrapping ErrDrainTimeout if some connection had to be closed before
// it finished draining. Calling Close again returns the same result.
func (b *Bus) Close() error {
	b.closeOnce.Do(func() {
		if b.registry != nil {
			b.registry.stop()
		}
		err := b.conns.closeAll(b.opts.DrainTimeout)
		if b.srv != nil {
			b.srv.Shutdown()
			b.srv.WaitForShutdown()
		}
		if b.tmpStore != "" {
			os.RemoveAll(b.tmpStore)
		}
		b.closeErr = err
		b.log.Debug().Err(err).Msg("bus closed")
	})
	return b.closeErr
}
