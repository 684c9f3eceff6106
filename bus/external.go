package bus

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/nats-io/nats.go"
)

// startExternal checks that the NATS server at Options.URL answers and reads
// its payload limit. The probe connection is closed again: every user of
// the bus gets its own connection from Connect.
func (b *Bus) startExternal() error {
	o := b.opts
	shown := redactURL(o.URL)
	nc, err := nats.Connect(o.URL,
		nats.Name(o.Name+"/probe"),
		nats.Timeout(o.ReadyTimeout),
		nats.NoReconnect(),
	)
	if err != nil {
		return fmt.Errorf("%w at %s: %w", ErrConnect, shown, err)
	}
	defer nc.Close()
	// Connect returns once the server answered CONNECT; flushing proves the
	// round trip works before we report success.
	if err := nc.FlushTimeout(o.ReadyTimeout); err != nil {
		return fmt.Errorf("%w at %s: %w", ErrConnect, shown, err)
	}

	b.maxPayload = nc.MaxPayload()
	b.clientURL = o.URL
	if o.MaxPayload > 0 && b.maxPayload < int64(o.MaxPayload) {
		return fmt.Errorf("%w at %s: the server accepts payloads up to %d bytes, Options.MaxPayload asks for %d; raise max_payload in that server's configuration",
			ErrConnect, shown, b.maxPayload, o.MaxPayload)
	}
	ev := b.log.Info()
	if b.maxPayload < MinMaxPayload {
		ev = b.log.Warn().Str("hint", "set max_payload to at least 8MB in the NATS server configuration; full pages may not fit")
	}
	ev.Str("url", shown).Str("server", nc.ConnectedServerName()).
		Int64("max_payload", b.maxPayload).Msg("connected to external NATS server")
	return nil
}

// redactURL hides credentials in a NATS URL, or comma-separated list of
// URLs, so the URL can go into errors and logs. nats puts tokens in the user
// part, so the whole user info goes, not just the password.
func redactURL(raw string) string {
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		if err != nil {
			if strings.Contains(p, "@") {
				p = "<unparseable URL with credentials>"
			}
			parts[i] = p
			continue
		}
		if u.User != nil {
			u.User = url.User("redacted")
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}
