package bus

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/protocol"
)

// Size limits for message payloads.
const (
	// MinMaxPayload is the smallest MaxPayload a Bus accepts: full pages
	// travel as single frames and must fit in one message.
	MinMaxPayload = 8 << 20
	// DefaultMaxPayload is the MaxPayload used when Options leaves it zero.
	// nats-server's own default (1 MiB) is too small for full pages.
	DefaultMaxPayload = 16 << 20
)

// Defaults applied by Start to zero fields of Options.
const (
	DefaultHost         = "127.0.0.1"
	DefaultName         = "framebus"
	DefaultReadyTimeout = 10 * time.Second
	DefaultDrainTimeout = 5 * time.Second
)

// defaultMaxPending is nats-server's default per-client outbound buffer
// (MAX_PENDING_SIZE). The server refuses a MaxPayload above MaxPending.
const defaultMaxPending = 64 << 20

// maxTracedMsgLen caps how much of a payload the server writes to the log at
// trace level; without it a traced full-page frame would log megabytes.
const maxTracedMsgLen = 1024

// Options configure a Bus. The zero value embeds a server with a loopback TCP
// listener on a random port.
type Options struct {
	// URL, when set, means: do not embed; connect to this existing NATS
	// server (nats://host:port, or a comma-separated list of such URLs).
	URL string
	// NoListen (embedded only) opens no TCP listener at all: only
	// in-process connections from Connect reach the server.
	NoListen bool
	// Host is the TCP listen host, default "127.0.0.1". It must be a
	// loopback address (or localhost) unless AllowRemote is set: every
	// connection logs in, but without TLS (see LoopbackOnly, IsLoopback).
	Host string
	// AllowRemote lets Host and WebSocket be addresses other machines
	// reach. Passwords and frames then cross the network in clear text.
	AllowRemote bool
	// WebSocket (embedded only), "host:port", also listens for NATS over
	// WebSocket (browser-based clients), with the same users; port 0 picks
	// a free one (WebSocketURL says which). Loopback unless AllowRemote,
	// as Host; no TLS. "" listens for none.
	WebSocket string
	// WebSocketOrigins are the web pages' origins (scheme://host[:port],
	// e.g. http://127.0.0.1:8080) that may use the WebSocket listener. A
	// browser sends its page's origin with every WebSocket: with none
	// listed, no web page may connect (so a page the node's browser or
	// anyone's browser visits cannot even try a password); clients that
	// are no browser send none and are not affected.
	WebSocketOrigins []string
	// Users (embedded only) may log in over TCP and WebSocket, each with
	// its role's permissions under Prefix. Authentication is always on:
	// with no users, nobody logs in over the network. The node's own
	// in-process connections (Connect) use an internal identity.
	Users []User
	// Prefix is the subject prefix the roles' permissions are for
	// (protocol.DefaultPrefix when "").
	Prefix string
	// Port is the TCP port. 0 (or -1, as in nats-server) means a random free
	// port; read it back with ClientURL. There is no silent 4222.
	Port int
	// MaxPayload is the largest message the embedded server accepts,
	// default 16 MiB, at least MinMaxPayload. With URL set the server's own
	// limit applies; a non-zero MaxPayload then makes Start fail when that
	// server's limit is lower.
	MaxPayload int32
	// Name is the server name and the prefix of client names, default
	// "framebus". It may not contain spaces.
	Name string
	// Logger receives the embedded server's log, at matching levels, with
	// component=nats-server. Default zerolog.Nop().
	Logger zerolog.Logger
	// ReadyTimeout bounds how long Start waits for the embedded server to
	// accept connections, or for the external server to answer. Default 10s.
	ReadyTimeout time.Duration
	// DrainTimeout bounds how long Close lets each connection drain before
	// closing it outright. Default 5s.
	DrainTimeout time.Duration
	// Cluster, when set, makes the embedded server a member of a NATS
	// cluster with other framebus buses (or nats-servers) configured
	// alike: frames, requests and the history reach every member.
	Cluster *ClusterOptions
	// JetStream, when set, enables JetStream in the embedded server (an
	// external server has it or not as it is configured). It carries the
	// node's frame history.
	JetStream *JetStreamOptions
	// Leaf, when set, connects the embedded server to an existing NATS
	// deployment (the hub) as a leaf node: the node's account there is
	// the account the hub logs the leaf connection in to. The server
	// keeps its own listeners and users for local clients.
	Leaf *LeafOptions
}

// LeafOptions make the embedded server a leaf node of a hub.
//
// Only the node's account (NodeAccount) is bound to the hub: its
// subjects cross the connection both ways, as far as the other side has
// interest; the local users' accounts and the system account do not.
// The node's account then has no JetStream of its own: with JSDomain,
// its JetStream API ($JS.API, $KV, $OBJ) is the hub's, through the leaf
// connection (nats-server's default_js_domain), so the history and the
// registries of every node that is a leaf of the hub are one.
type LeafOptions struct {
	// URLs are the hub's leaf node listeners (nats://host:port,
	// tls://host:port); the server tries them in turn. No user or
	// password in them: they come from User and Password, or
	// CredentialsFile.
	URLs []string
	// User and Password log the leaf connection in to the hub.
	User, Password string
	// CredentialsFile is a NATS credentials file (a user JWT and its
	// nkey seed, as nsc writes it) for a hub in operator mode; the
	// server reads it itself. Not with User.
	CredentialsFile string
	// JSDomain is the JetStream domain of the hub (its jetstream {
	// domain: ... }), where the node's JetStream calls go. "": the
	// node's account has no JetStream (no history, no registry).
	JSDomain string
}

// ClusterOptions make the embedded server a cluster member.
type ClusterOptions struct {
	// Name is the cluster's name, the same on every member (default
	// DefaultClusterName).
	Name string
	// Listen is host:port where the other members connect (routes);
	// loopback unless Options.AllowRemote, port 0 picks a free one
	// (ClusterURL says which).
	Listen string
	// Routes are the other members' cluster URLs (nats-route://host:port
	// or nats://host:port); a member may list itself, and the members
	// find each other's other routes by themselves.
	Routes []string
	// Secret is the password every member's routes log in with, the same
	// on every member: without it nobody joins the cluster (a route sees
	// every account's messages). At least 16 characters.
	Secret string
}

// DefaultClusterName is ClusterOptions.Name when "".
const DefaultClusterName = "framebus"

// routeUser is the name routes log in with; ClusterOptions.Secret is the
// password.
const routeUser = "framebus-route"

// JetStreamOptions configure the embedded server's JetStream.
type JetStreamOptions struct {
	// StoreDir is where file-backed streams live. "" keeps every stream
	// in memory: the server gets a private temporary directory (it wants
	// one even then), removed by Close, and no file storage.
	StoreDir string
	// MaxMemory and MaxStore bound the memory and file storage of all
	// streams, in bytes; 0 lets the server choose (a share of the
	// machine's memory and disk).
	MaxMemory, MaxStore int64
}

// Validate reports what Start would refuse in o, without starting
// anything: an error wrapping ErrInvalidOptions that names the field.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

// withDefaults returns a copy of o with defaults filled in, or an error that
// names the offending field.
func (o Options) withDefaults() (Options, error) {
	if o.URL != "" && o.NoListen {
		return o, fmt.Errorf("%w: NoListen applies to an embedded server only, but URL %q is set", ErrInvalidOptions, redactURL(o.URL))
	}
	if o.Host == "" {
		o.Host = DefaultHost
	}
	if o.URL == "" && !o.NoListen {
		if err := listenHostOK("Host", o.Host, o.AllowRemote); err != nil {
			return o, err
		}
	}
	if o.URL != "" && (len(o.Users) > 0 || o.WebSocket != "") {
		return o, fmt.Errorf("%w: Users and WebSocket apply to an embedded server only, but URL %q is set", ErrInvalidOptions, redactURL(o.URL))
	}
	if o.WebSocket != "" {
		if _, _, err := splitHostPort("WebSocket", o.WebSocket, o.AllowRemote); err != nil {
			return o, err
		}
	}
	if c := o.Cluster; c != nil {
		if o.URL != "" {
			return o, fmt.Errorf("%w: Cluster applies to an embedded server only, but URL %q is set", ErrInvalidOptions, redactURL(o.URL))
		}
		if _, _, err := splitHostPort("Cluster.Listen", c.Listen, o.AllowRemote); err != nil {
			return o, err
		}
		if len(c.Secret) < 16 {
			return o, fmt.Errorf("%w: Cluster.Secret must be at least 16 characters, the same on every member: routes log in with it", ErrInvalidOptions)
		}
		for _, r := range c.Routes {
			if _, err := routeURL(r, c.Secret); err != nil {
				return o, err
			}
		}
		if c.Name != "" && !protocol.ValidTabID(c.Name) {
			return o, fmt.Errorf("%w: Cluster.Name %q: letters, digits, '-' and '_'", ErrInvalidOptions, c.Name)
		}
	}
	if err := o.checkLeaf(); err != nil {
		return o, err
	}
	for _, origin := range o.WebSocketOrigins {
		if err := checkOrigin(origin); err != nil {
			return o, err
		}
	}
	if len(o.WebSocketOrigins) > 0 && o.WebSocket == "" {
		return o, fmt.Errorf("%w: WebSocketOrigins %v are given without a WebSocket listener", ErrInvalidOptions, o.WebSocketOrigins)
	}
	if err := checkUsers(o.Users); err != nil {
		return o, err
	}
	if _, err := protocol.NewSubjects(o.Prefix); err != nil {
		return o, fmt.Errorf("%w: Prefix: %v", ErrInvalidOptions, err)
	}
	switch {
	case o.Port == 0, o.Port == -1:
		o.Port = -1 // nats-server's RANDOM_PORT; its 0 would mean 4222
	case o.Port < 0 || o.Port > 65535:
		return o, fmt.Errorf("%w: Port %d is out of range; use 1-65535, or 0 for a random port", ErrInvalidOptions, o.Port)
	}
	if o.URL == "" {
		if o.MaxPayload == 0 {
			o.MaxPayload = DefaultMaxPayload
		}
		if o.MaxPayload < MinMaxPayload {
			return o, fmt.Errorf("%w: MaxPayload %d is below the minimum %d (8 MiB): full pages travel as single frames", ErrInvalidOptions, o.MaxPayload, MinMaxPayload)
		}
	} else if o.MaxPayload < 0 {
		return o, fmt.Errorf("%w: MaxPayload %d is negative", ErrInvalidOptions, o.MaxPayload)
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if strings.ContainsAny(o.Name, " \t\r\n") {
		return o, fmt.Errorf("%w: Name %q contains whitespace", ErrInvalidOptions, o.Name)
	}
	if o.ReadyTimeout < 0 {
		return o, fmt.Errorf("%w: ReadyTimeout %s is negative", ErrInvalidOptions, o.ReadyTimeout)
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.DrainTimeout < 0 {
		return o, fmt.Errorf("%w: DrainTimeout %s is negative", ErrInvalidOptions, o.DrainTimeout)
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	return o, nil
}

// routeURL is a member's route URL with the route user and secret in
// it, as the server dials it.
func routeURL(route, secret string) (*url.URL, error) {
	u, err := url.Parse(route)
	if err != nil || (u.Scheme != "nats-route" && u.Scheme != "nats") || u.Hostname() == "" || u.Port() == "" || u.User != nil || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("%w: Cluster.Routes: %q: want nats-route://host:port (no user: the secret logs in)", ErrInvalidOptions, route)
	}
	u.Scheme, u.User = "nats-route", url.UserPassword(routeUser, secret)
	return u, nil
}

// checkOrigin checks a web origin as a browser sends it: http or https,
// a host, an optional port, nothing else.
func checkOrigin(origin string) error {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%w: WebSocket origin %q: want scheme://host[:port], e.g. http://127.0.0.1:8080", ErrInvalidOptions, origin)
	}
	return nil
}

// maxPending is the server's per-client outbound buffer for a given
// MaxPayload: never below nats-server's default, and room for a few
// maximum-size messages in flight to one slow client.
func maxPending(maxPayload int32) int64 {
	return max(defaultMaxPending, 4*int64(maxPayload))
}

// splitHostPort reads a "host:port" listen address; port 0 (or -1) is
// nats-server's random port, -1.
func splitHostPort(what, addr string, allowRemote bool) (string, int, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %s %q: want host:port, e.g. 127.0.0.1:8080 (port 0 picks a free one)", ErrInvalidOptions, what, addr)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < -1 || port > 65535 {
		return "", 0, fmt.Errorf("%w: %s %q: the port must be 0-65535 (0 picks a free one)", ErrInvalidOptions, what, addr)
	}
	if host == "" {
		host = DefaultHost
	}
	if err := listenHostOK(what, host, allowRemote); err != nil {
		return "", 0, err
	}
	if port == 0 {
		port = -1
	}
	return host, port, nil
}

// IsLoopback reports whether host, a listen host, is loopback only:
// localhost, an address in 127.0.0.0/8 or ::1 (IPv4-mapped too). "" and
// the unspecified addresses (every interface), LAN addresses and other
// names are not.
func IsLoopback(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}
