package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/protocol"
)

// A watcher rides out a short bus outage, then gives up.
const (
	watchReconnects    = 10
	watchReconnectWait = time.Second
)

func watchCommand() command {
	return command{
		name:    "watch",
		summary: "print a tab's frames (or every tab's, with --all) as JSON lines until SIGINT or SIGTERM",
		group:   groupPlans,
		details: `Each frame is one line of JSON, written and flushed as it arrives, in the
order the tab published them. Frames published before watch subscribed
are not shown. Once subscribed it logs "watching" on stderr.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, true)
			all := new(bool)
			boolVarP(fs, all, "all", "", "watch every tab on the bus")
			return func(c *cli, args []string) error {
				if len(args) > 0 {
					return usagef("watch: takes no arguments, got %q", args)
				}
				if *all && target.tab != "" {
					return usagef("watch: --tab and --all exclude each other")
				}
				return c.watch(target, *all)
			}
		},
	}
}

func (c *cli) watch(target clientFlags, all bool) error {
	log, _ := newLogger(c.stderr, "info") // "watching" tells scripts the subscription is live
	closed := make(chan struct{})
	cl, err := c.dial(target,
		nats.MaxReconnects(watchReconnects),
		nats.ReconnectWait(watchReconnectWait),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn().Err(err).Msg("disconnected from the bus; reconnecting")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info().Str("bus", nc.ConnectedUrlRedacted()).Msg("reconnected; frames published meanwhile are missed")
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
	)
	if err != nil {
		return err
	}
	defer cl.close()
	subject := cl.subj.AllFrames()
	if !all {
		tab, err := cl.resolveTab(c.ctx, target.tab)
		if err != nil {
			return err
		}
		if err := cl.checkTab(c.ctx, tab); err != nil {
			return err // a tab nobody has would be watched forever
		}
		subject = cl.subj.TabFrames(tab)
	}

	out := bufio.NewWriter(c.stdout)
	var mu sync.Mutex // one callback goroutine per subscription, but keep writes whole regardless
	var line bytes.Buffer
	outputGone, gone := false, make(chan struct{})
	sub, err := cl.nc.Subscribe(subject, func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		line.Reset()
		data := inlineContent(cl.nc, m.Data, log)
		if err := json.Compact(&line, data); err != nil {
			log.Warn().Str("subject", m.Subject).Err(err).Msg("skipping a message that is not JSON")
			return
		}
		line.WriteByte('\n')
		out.Write(line.Bytes())
		if err := out.Flush(); err != nil && !outputGone {
			outputGone = true // stdout closed (watch | head): stop watching
			close(gone)
		}
	})
	if err != nil {
		return protocol.Errorf(protocol.CodeUnavailable, "subscribe to %s: %v", subject, err)
	}
	// Frames are never dropped here for being slow: buffer without limit.
	_ = sub.SetPendingLimits(-1, -1)
	if err := cl.nc.FlushTimeout(connectTimeout); err != nil {
		return errNoNode(err)
	}
	log.Info().Str("subject", subject).Msg("watching")

	select {
	case <-c.ctx.Done():
		_ = sub.Unsubscribe()
		return nil
	case <-gone:
		return nil
	case <-closed:
		return protocol.Errorf(protocol.CodeUnavailable, "lost the bus connection; the node may have stopped")
	}
}

// contentTimeout bounds fetching a frame's content by reference.
const contentTimeout = 10 * time.Second

// inlineContent returns the frame with its content inline when it came by
// reference (too large for one bus message), so watch prints whole frames.
// Anything else, or a fetch that fails (logged), is returned as it came.
func inlineContent(nc *nats.Conn, data []byte, log zerolog.Logger) []byte {
	if !bytes.Contains(data, []byte(`"fullPageRef"`)) {
		return data
	}
	f, err := protocol.DecodeFrame(data)
	if err != nil || f.FullPageRef == nil {
		return data
	}
	content, err := actors.FetchContent(nc, f, contentTimeout)
	if err != nil {
		log.Warn().Err(err).Int64("sequence", f.Sequence).Msg("fetch frame content")
		return data
	}
	f.FullPage, f.FullPageRef = content, nil
	out, err := protocol.Marshal(f)
	if err != nil {
		return data
	}
	return out
}
