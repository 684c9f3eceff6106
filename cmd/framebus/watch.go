package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
)

func watchCommand() command {
	return command{
		name:    "watch",
		summary: "print a tab's frames (or every tab's, with --all) as JSON lines until SIGINT or SIGTERM",
		group:   groupPlans,
		details: `Each frame is one line of JSON, written and flushed as it arrives, in the
order the tab published them, large content inlined. Without --from or
--last it prints the frames made from now on; --from N replays the tab's
stored frames from N, then follows live ones, with no gap and no frame twice;
--last starts at the tab's current frame (with --all, each tab's). Once
subscribed it logs "watching" on stderr. watch reconnects by itself and
logs each disconnect and reconnect on stderr; frames made meanwhile come
from the history (a gap in it is logged too).

A watch of one tab ends when the tab does. After the tab's close frame
(action "close", its last) it logs "tab closed" and exits 0. When the
tab's node is gone (stopped, died) or lost its liveness (frozen or cut
off: the node registry forgot it), it logs "the tab's node is not live"
and exits 1 with the node_unavailable reply; with --keep-waiting it goes
on instead, logs "the tab's node answers again" if it comes back (a node
restarted with its state brings its tabs back), and prints the frames
made meanwhile from the history, none lost.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, true)
			all, last := new(bool), new(bool)
			boolVarP(fs, all, "all", "", "watch every tab on the bus")
			boolVarP(fs, last, "last", "", "start at the current frame")
			keep := new(bool)
			boolVarP(fs, keep, "keep-waiting", "", "when the tab's node is gone or not live, keep waiting for it to come back instead of exiting")
			from := fs.Int64("from", 0, "replay the tab's stored frames from sequence `N`, then follow")
			return func(c *cli, args []string) error {
				switch {
				case len(args) > 0:
					return usagef("watch: takes no arguments, got %q", args)
				case *all && target.tab != "":
					return usagef("watch: --tab and --all exclude each other")
				case fs.Changed("from") && *from < 1:
					return usagef("watch --from %d: frame sequences start at 1", *from)
				case fs.Changed("from") && *last:
					return usagef("watch: --from and --last exclude each other")
				case fs.Changed("from") && *all:
					return usagef("watch --all: --from names one tab's frame; give --tab")
				case *keep && *all:
					return usagef("watch --all follows every tab whatever their nodes do; --keep-waiting is for one tab (--tab)")
				}
				start := busclient.FromNext
				switch {
				case fs.Changed("from"):
					start = *from
				case *last:
					start = 0
				}
				return c.watch(target, *all, start, *keep)
			}
		},
	}
}

func framesCommand() command {
	return command{
		name:    "frames",
		summary: "print a tab's stored frames (the node's frame history) as JSON lines and exit",
		group:   groupPlans,
		details: `Prints the frames of --tab kept in the node's history, from --from (default:
the first kept) to --to (default: the last one now), one JSON line each,
large content inlined; a closed tab's frames stay until they expire.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, true)
			from := fs.Int64("from", 0, "the first frame `N` (default: the first kept)")
			to := fs.Int64("to", 0, "the last frame `M` (default: the last kept)")
			return func(c *cli, args []string) error {
				switch {
				case len(args) > 0:
					return usagef("frames: takes no arguments, got %q", args)
				case fs.Changed("from") && *from < 1, fs.Changed("to") && *to < 1:
					return usagef("frames: frame sequences start at 1")
				case fs.Changed("to") && *to < *from:
					return usagef("frames: --to %d is before --from %d", *to, *from)
				}
				return c.frames(target, *from, *to)
			}
		},
	}
}

func (c *cli) watch(target clientFlags, all bool, from int64, keepWaiting bool) error {
	log, _ := newLogger(c.stderr, "info") // "watching" tells scripts the subscription is live
	cl, err := c.dial(target, busclient.Options{OnEvent: logEvent(log, keepWaiting)})
	if err != nil {
		return err
	}
	defer cl.close()
	var w *busclient.Watcher
	subject := cl.subj.AllFrames()
	if all {
		w, err = cl.bc.WatchAll(c.ctx, from == 0)
	} else {
		tab, err := cl.resolveTab(c.ctx, target.tab)
		if err != nil {
			return err
		}
		if err := cl.checkTab(c.ctx, tab); err != nil && (from == busclient.FromNext || !cl.hasHistory(c.ctx, tab)) {
			return err // a tab nobody has, nor had, would be watched forever
		}
		subject = cl.subj.TabFrames(tab)
		var opts []busclient.WatchOption
		if keepWaiting {
			opts = append(opts, busclient.KeepWaiting())
		}
		w, err = cl.bc.Watch(c.ctx, tab, from, opts...)
		if err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	defer w.Stop()
	log.Info().Str("subject", subject).Msg("watching")
	out := newFrameWriter(c.stdout, log)
	for f := range w.Frames() {
		if !out.write(f) {
			return nil // stdout closed (watch | head): stop watching
		}
	}
	if c.ctx.Err() != nil {
		return nil
	}
	if err := w.Err(); protocol.CodeOf(err) != protocol.CodeTabClosed {
		return err
	}
	return nil // the tab's close frame was its last: the watch is complete
}

func (c *cli) frames(target clientFlags, from, to int64) error {
	cl, err := c.connect(target)
	if err != nil {
		return err
	}
	defer cl.close()
	tab, err := cl.resolveTab(c.ctx, target.tab)
	if err != nil {
		return err
	}
	log := quietLogger(c.stderr)
	out := newFrameWriter(c.stdout, log)
	return cl.bc.Frames(c.ctx, tab, from, to, func(f busclient.Frame) error {
		if !out.write(f) {
			return c.ctx.Err()
		}
		return nil
	})
}

// hasHistory reports whether frames of tab are stored: a closed tab's
// history can be replayed.
func (cl *client) hasHistory(ctx context.Context, tab string) bool {
	_, err := cl.bc.Current(ctx, tab)
	return err == nil
}

// logEvent logs what the bus connection and a watch go through.
func logEvent(log zerolog.Logger, keepWaiting bool) func(busclient.Event) {
	return func(e busclient.Event) {
		switch e.Kind {
		case busclient.EventNodeLost:
			then := "the watch ends"
			if keepWaiting {
				then = "waiting for it to come back (--keep-waiting)"
			}
			log.Warn().Str("tab", e.Tab).Str("node", e.Node).Str("code", string(protocol.CodeOf(e.Err))).Err(e.Err).Msg("the tab's node is not live; " + then)
		case busclient.EventNodeBack:
			log.Info().Str("tab", e.Tab).Str("node", e.Node).Msg("the tab's node answers again; resuming after the last frame printed")
		case busclient.EventTabClosed:
			log.Info().Str("tab", e.Tab).Str("node", e.Node).Msg("tab closed: its close frame was its last; the watch ends")
		case busclient.EventDisconnected:
			log.Warn().Err(e.Err).Msg("disconnected from the bus; reconnecting")
		case busclient.EventReconnected:
			log.Info().Str("bus", e.URL).Msg("reconnected; resuming after the last frame printed")
		case busclient.EventGap:
			log.Warn().Str("tab", e.Tab).Int64("from", e.From).Int64("to", e.To).Msg("frames missing: no longer in the history")
		case busclient.EventClosed:
			log.Warn().Msg("the bus connection is closed")
		}
	}
}

// frameWriter prints frames as JSON lines, each flushed as it comes.
type frameWriter struct {
	out  *bufio.Writer
	log  zerolog.Logger
	line bytes.Buffer
}

func newFrameWriter(w io.Writer, log zerolog.Logger) *frameWriter {
	return &frameWriter{out: bufio.NewWriter(w), log: log}
}

// write prints a frame; false when the output is gone.
func (w *frameWriter) write(f busclient.Frame) bool {
	if f.ContentErr != nil {
		w.log.Warn().Err(f.ContentErr).Int64("sequence", f.Sequence).Msg("fetch frame content")
	}
	w.line.Reset()
	if err := json.Compact(&w.line, f.Data); err != nil {
		w.log.Warn().Str("tab", f.Tab).Err(err).Msg("skipping a message that is not JSON")
		return true
	}
	w.line.WriteByte('\n')
	w.out.Write(w.line.Bytes())
	return w.out.Flush() == nil
}
