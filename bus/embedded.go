package bus

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// startEmbedded creates and starts the in-process nats-server and waits until
// it accepts connections.
func (b *Bus) startEmbedded() error {
	o := b.opts
	sopts := &server.Options{
		ServerName: o.Name,
		Host:       o.Host,
		Port:       o.Port, // -1 (random) after withDefaults, never 0 (4222)
		DontListen: o.NoListen,
		MaxPayload: o.MaxPayload,
		MaxPending: maxPending(o.MaxPayload),
		// The embedding program owns signals; a library must not trap them.
		NoSigs:          true,
		MaxTracedMsgLen: maxTracedMsgLen,
	}
	// The node's account, and what it offers the accounts of agents and
	// observers.
	nodeAcc, err := nodeAccount(sopts, o.JetStream != nil)
	if err != nil {
		return err
	}
	if err := exportToUsers(nodeAcc, b.subjects); err != nil {
		return err
	}
	// Authentication, always: the users, and the node's internal identity
	// for in-process connections only (an nkey: a nonce to sign).
	internal, err := newInternalUser()
	if err != nil {
		return fmt.Errorf("%w: internal user: %w", ErrServerStart, err)
	}
	b.internal = internal
	unknown, err := unknownUserHash()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrServerStart, err)
	}
	auth := &authenticator{internal: internal, unknown: unknown, users: map[string]*authUser{}}
	sopts.CustomClientAuthentication, sopts.AlwaysEnableNonce = auth, true
	if o.WebSocket != "" {
		host, port, _ := splitHostPort("WebSocket", o.WebSocket, o.AllowRemote) // checked by withDefaults
		// No TLS: loopback, or a remote listener the options opted in to.
		sopts.Websocket = server.WebsocketOpts{Host: host, Port: port, NoTLS: true}
		// Web pages only from the listed origins; with none, from none.
		for _, origin := range o.WebSocketOrigins {
			sopts.Websocket.AllowedOrigins = append(sopts.Websocket.AllowedOrigins, strings.TrimSuffix(origin, "/"))
		}
		if len(o.WebSocketOrigins) == 0 {
			refuseEveryOrigin(&sopts.Websocket)
		}
	}
	if c := o.Cluster; c != nil {
		host, port, _ := splitHostPort("Cluster.Listen", c.Listen, o.AllowRemote) // checked by withDefaults
		sopts.Cluster = server.ClusterOpts{
			Name: cmp.Or(c.Name, DefaultClusterName), Host: host, Port: port,
			Username: routeUser, Password: c.Secret,
		}
		for _, r := range c.Routes {
			u, _ := routeURL(r, c.Secret) // checked by withDefaults
			sopts.Routes = append(sopts.Routes, u)
		}
	}
	if o.Leaf != nil {
		leafRemote(sopts, o.Leaf, b.subjects)
		sopts.ServerName = leafServerName(o.Name)
	}
	if js := o.JetStream; js != nil {
		dir := js.StoreDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "framebus-jetstream-")
			if err != nil {
				return fmt.Errorf("%w: JetStream store: %w", ErrServerStart, err)
			}
			b.tmpStore, dir = tmp, tmp
		}
		sopts.JetStream, sopts.StoreDir = true, dir
		sopts.JetStreamMaxMemory = cmp.Or(js.MaxMemory, sopts.JetStreamMaxMemory)
		if js.MaxStore != 0 {
			sopts.JetStreamMaxStore = js.MaxStore
		}
		sopts.DisableJetStreamBanner = true
	}
	where := net.JoinHostPort(o.Host, strconv.Itoa(o.Port))
	if o.Port == -1 {
		where = o.Host + " (random port)"
	}
	if o.NoListen {
		where = "in-process only (NoListen)"
	}

	srv, err := server.NewServer(sopts)
	if err != nil {
		return fmt.Errorf("%w on %s: %w", ErrServerStart, where, err)
	}
	// The users, in their accounts, before anyone can connect.
	if auth.node, err = srv.LookupAccount(NodeAccount); err != nil {
		return fmt.Errorf("%w: node account: %w", ErrServerStart, err)
	}
	for _, u := range o.Users {
		au, err := auth.register(srv, b.subjects, u)
		if err != nil {
			return err
		}
		auth.users[u.Name] = au
	}
	// A cluster member's users of the registry, as it last followed them.
	for _, u := range b.keptUsers() {
		au, err := auth.register(srv, b.subjects, u)
		if err != nil {
			b.log.Warn().Err(err).Str("user", u.Name).Msg("users registry: a kept user not taken")
			continue
		}
		auth.users[u.Name] = au
	}
	if kept := b.keptUsersPath(); kept != "" {
		b.log.Debug().Str("file", kept).Int("users", len(auth.users)).Msg("users registry: kept users loaded")
	}
	b.auth = auth
	slog := newServerLogger(o.Logger)
	srv.SetLoggerV2(slog,
		enabled(o.Logger, zerolog.DebugLevel),
		enabled(o.Logger, zerolog.TraceLevel),
		false)

	// Start opens the client listener before it returns; a taken port shows
	// up as a Fatalf, which our logger records instead of exiting.
	started := time.Now()
	srv.Start()
	if err := b.waitReady(srv, slog, where); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return err
	}

	b.srv = srv
	b.nameClash = slog.nameClash
	b.maxPayload = int64(o.MaxPayload)
	if o.WebSocket != "" {
		b.wsURL = srv.WebsocketURL()
	}
	if o.Cluster != nil {
		b.clusterURL = srv.ClusterAddr().String()
	}
	if !o.NoListen {
		addr, ok := srv.Addr().(*net.TCPAddr)
		if !ok {
			srv.Shutdown()
			srv.WaitForShutdown()
			return fmt.Errorf("%w on %s: server reports no TCP listener", ErrServerStart, where)
		}
		b.clientURL = clientURL(o.Host, addr.Port)
	}
	if o.Leaf != nil {
		if err := b.waitLeaf(slog, started.Add(o.ReadyTimeout)); err != nil {
			srv.Shutdown()
			srv.WaitForShutdown()
			return err
		}
	}
	if o.Cluster != nil && o.JetStream != nil {
		if err := b.startRegistry(min(3, max(1, len(o.Cluster.Routes)))); err != nil {
			srv.Shutdown()
			srv.WaitForShutdown()
			return fmt.Errorf("%w: the cluster's users: %w", ErrServerStart, err)
		}
	}
	b.log.Info().Str("url", b.clientURL).Str("websocket", b.wsURL).Bool("listen", !o.NoListen).Int("users", len(o.Users)).
		Int32("max_payload", o.MaxPayload).Msg("embedded NATS server ready")
	return nil
}

// waitReady waits up to ReadyTimeout for srv to accept connections, giving up
// at once if the server logged a fatal error.
func (b *Bus) waitReady(srv *server.Server, slog *serverLogger, where string) error {
	deadline := time.Now().Add(b.opts.ReadyTimeout)
	for {
		if msg := slog.firstFatal(); msg != "" {
			return fmt.Errorf("%w on %s: %s", ErrServerStart, where, msg)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w on %s: not ready for connections after %s", ErrServerStart, where, b.opts.ReadyTimeout)
		}
		// Check in short slices so a fatal error logged meanwhile ends the
		// wait early. ReadyForConnections polls internally.
		if srv.ReadyForConnections(min(left, 100*time.Millisecond)) {
			// A fatal error can be logged while the listener is up (e.g. a
			// later subsystem failing), so look once more.
			if msg := slog.firstFatal(); msg != "" {
				return fmt.Errorf("%w on %s: %s", ErrServerStart, where, msg)
			}
			return nil
		}
	}
}

// clientURL builds the nats:// URL for a listener on host:port. A wildcard
// listen host is not something to dial, so it becomes loopback.
func clientURL(host string, port int) string {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	u := url.URL{Scheme: "nats", Host: net.JoinHostPort(host, strconv.Itoa(port))}
	return u.String()
}
