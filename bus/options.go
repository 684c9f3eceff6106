package bus

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/rs/zerolog"
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
	// loopback address (or localhost): the bus has no authentication yet,
	// and whoever reaches it drives the browser (see IsLoopback).
	Host string
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
	// JetStream, when set, enables JetStream in the embedded server (an
	// external server has it or not as it is configured). It carries the
	// node's frame history.
	JetStream *JetStreamOptions
}

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

// withDefaults returns a copy of o with defaults filled in, or an error that
// names the offending field.
func (o Options) withDefaults() (Options, error) {
	if o.URL != "" && o.NoListen {
		return o, fmt.Errorf("%w: NoListen applies to an embedded server only, but URL %q is set", ErrInvalidOptions, redactURL(o.URL))
	}
	if o.Host == "" {
		o.Host = DefaultHost
	}
	if o.URL == "" && !o.NoListen && !IsLoopback(o.Host) {
		return o, fmt.Errorf("%w: Host %q is not a loopback address: %s", ErrInvalidOptions, o.Host, LoopbackOnly)
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

// maxPending is the server's per-client outbound buffer for a given
// MaxPayload: never below nats-server's default, and room for a few
// maximum-size messages in flight to one slow client.
func maxPending(maxPayload int32) int64 {
	return max(defaultMaxPending, 4*int64(maxPayload))
}

// LoopbackOnly says why the embedded server listens on loopback only.
const LoopbackOnly = "the bus has no authentication yet, so anyone who can reach its port could drive the browser; " +
	"listen on loopback (127.0.0.1, ::1 or localhost) and reach it from elsewhere through an SSH tunnel"

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
