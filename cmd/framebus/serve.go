package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/protocol"
)

// startTimeout bounds starting a node: the bus, Chromium and the first tab.
const startTimeout = 2 * time.Minute

type serveOptions struct {
	headed   bool
	listen   string
	busURL   string
	prefix   string
	startURL string
	logLevel string
	// dialogTimeout: how long a JavaScript dialog waits for a dialog
	// action; dialogDefault answers it then.
	dialogTimeout time.Duration
	dialogDefault string
	// fullPage and fullPagePolicy: what content frames carry, and when.
	fullPage       string
	fullPagePolicy string
	// whitelist: comma-separated host patterns; set means enforced (an
	// empty value denies every host).
	whitelist    string
	whitelistSet bool
	schemes      string
}

func serveCommand() command {
	return command{
		name:    "serve",
		summary: "start a node (NATS bus, Chromium, one tab) and run it until SIGINT or SIGTERM",
		group:   groupNode,
		details: `Prints one JSON line, {"ok":true,"bus":"nats://127.0.0.1:PORT","prefix":...,"pid":...,"tabs":[...]},
and writes it to the state file ($` + envState + `, default ` + defaultStateHint() + `)
so other framebus commands find the node. Logs go to stderr.
On SIGINT or SIGTERM it closes the tabs, stops Chromium (removing its
temporary profile) and the bus, removes the state file and exits 0.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var o serveOptions
			fs.BoolVar(&o.headed, "headed", false, "show the browser window (default: headless)")
			fs.StringVar(&o.listen, "listen", "127.0.0.1:0", "`host:port` of the embedded NATS server's listener; port 0 picks a free port")
			fs.StringVar(&o.busURL, "bus-url", "", "use the NATS server at this `URL` (nats://host:port) instead of embedding one")
			fs.StringVar(&o.prefix, "prefix", protocol.DefaultPrefix, "subject `prefix`")
			fs.StringVar(&o.startURL, "start-url", "about:blank", "`URL` the first tab opens")
			fs.StringVar(&o.logLevel, "log-level", "info", "log `level` on stderr: trace, debug, info, warn, error")
			fs.DurationVar(&o.dialogTimeout, "dialog-timeout", actors.DefaultDialogTimeout, "how long a JavaScript dialog stays open for a `dialog` action before the default answers it; 0 answers at once")
			fs.StringVar(&o.dialogDefault, "dialog-default", "accept", "the automatic answer to a JavaScript dialog: accept or dismiss")
			fs.StringVar(&o.fullPage, "full-page", string(frames.DefaultFormat), "the content frames carry: snapshot, html, text or none")
			fs.StringVar(&o.whitelist, "whitelist", "", "comma-separated `hosts` the browser may load (*.example.com for subdomains); enforced for every request; given empty, nothing is allowed; not given, every host is")
			fs.StringVar(&o.schemes, "schemes", "http,https", "comma-separated URL `schemes` the browser may load besides about:blank")
			fs.StringVar(&o.fullPagePolicy, "full-page-policy", string(frames.PolicyURLChange), "when frames carry it: url-change, document-change or always")
			return func(c *cli, args []string) error {
				if len(args) > 0 {
					return usagef("serve: takes no arguments, got %q", args)
				}
				if o.dialogDefault != "accept" && o.dialogDefault != "dismiss" {
					return usagef("serve: --dialog-default: %q is not accept or dismiss", o.dialogDefault)
				}
				if _, err := frames.ParseFormat(o.fullPage); err != nil {
					return usagef("serve: --full-page: %v", err)
				}
				if _, err := frames.ParsePolicy(o.fullPagePolicy); err != nil {
					return usagef("serve: --full-page-policy: %v", err)
				}
				o.whitelistSet = fs.Changed("whitelist")
				if _, err := o.buildWhitelist(); err != nil {
					return usagef("serve: %v", err)
				}
				if o.dialogTimeout < 0 {
					return usagef("serve: --dialog-timeout: must not be negative")
				}
				if fs.Changed("listen") && o.busURL != "" {
					return usagef("serve: --listen and --bus-url exclude each other: --listen is for the embedded server")
				}
				return c.serve(o)
			}
		},
	}
}

func (c *cli) serve(o serveOptions) error {
	log, err := newLogger(c.stderr, o.logLevel)
	if err != nil {
		return err
	}
	if _, err := protocol.NewSubjects(o.prefix); err != nil {
		return usagef("--prefix: %v", err)
	}
	busOpts := bus.Options{URL: o.busURL}
	if o.busURL == "" {
		host, port, err := splitListen(o.listen)
		if err != nil {
			return err
		}
		busOpts.Host, busOpts.Port = host, port
	}
	path, err := c.statePath()
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "%v", err)
	}
	if st, err := readState(path); err == nil && st.PID != os.Getpid() && processAlive(st.PID) {
		log.Warn().Int("pid", st.PID).Str("state", path).
			Msg("another framebus node is registered in the state file; this one replaces it as the default")
	}

	// Find the browser before starting anything: the commonest failure on
	// a fresh machine, answered with how to install it.
	chromium, err := cdpdriver.FindChromium()
	if err != nil {
		return startError(c.ctx, err)
	}

	wl, err := o.buildWhitelist()
	if err != nil {
		return usagef("serve: %v", err)
	}
	ctx, cancel := context.WithTimeout(c.ctx, startTimeout)
	node, err := actors.StartNode(ctx, actors.NodeOptions{
		Bus:      busOpts,
		Launch:   cdpdriver.LaunchOptions{Headless: !o.headed, Binary: chromium},
		Prefix:   o.prefix,
		StartURL: o.startURL,
		Logger:   log,
		// The node's zero means "the default"; the flag's zero, at once.
		DialogTimeout: cmp.Or(o.dialogTimeout, -1),
		DialogDefault: o.dialogDefault,
		Frames:        frames.Options{Format: frames.Format(o.fullPage), Policy: frames.Policy(o.fullPagePolicy)},
		Whitelist:     wl,
	})
	cancel()
	if err != nil {
		return startError(c.ctx, err)
	}

	// Ready means reachable: the node answers on the bus.
	nc, err := node.Bus().Connect("serve")
	if err == nil {
		_, err = awaitTabs(c.ctx, nc, node.Subjects())
		nc.Close()
	}
	if err != nil {
		node.Close()
		return startError(c.ctx, err)
	}
	st := nodeState{OK: true, Bus: node.Bus().ClientURL(), Prefix: node.Subjects().Prefix, PID: os.Getpid(), Tabs: node.Tabs()}
	if err := writeState(path, st); err != nil {
		node.Close()
		return protocol.Errorf(protocol.CodeInternal, "write state file %s: %v", path, err)
	}
	c.printJSON(st)
	log.Info().Str("bus", st.Bus).Str("tabs", describeTabs(st.Tabs)).Str("state", path).
		Msg("node ready; stop it with Ctrl-C or SIGTERM")

	var stopErr error
	select {
	case <-c.ctx.Done():
		log.Info().Msg("shutting down (a second signal ends the process at once)")
	case <-node.Browser().Process().Done():
		log.Error().Msg("chromium exited; shutting the node down")
		stopErr = protocol.Errorf(protocol.CodeBrowserNotRunning, "chromium exited while the node was running; start it again with: framebus serve")
	}
	c.stopSignals()
	start := time.Now()
	closeErr := node.Close()
	if err := removeState(path, os.Getpid()); err != nil {
		log.Warn().Err(err).Msg("remove state file")
	}
	if closeErr != nil {
		log.Error().Err(closeErr).Msg("shutdown")
		return errors.Join(stopErr, protocol.Errorf(protocol.CodeInternal, "shutdown: %v", closeErr))
	}
	log.Info().Dur("took", time.Since(start)).Msg("node stopped")
	return stopErr
}

// splitListen parses --listen host:port; port 0 means a free port.
func splitListen(listen string) (string, int, error) {
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, usagef("--listen %q: want host:port, e.g. 127.0.0.1:4222 or 127.0.0.1:0", listen)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, usagef("--listen %q: port must be 0-65535 (0 picks a free port)", listen)
	}
	return host, port, nil
}

// startError gives a failed node start its code: a missing browser says
// how to install one, a bus problem is unavailable.
func startError(ctx context.Context, err error) error {
	var code protocol.Code
	switch {
	case ctx.Err() != nil:
		return protocol.Errorf(protocol.CodeUnavailable, "interrupted while the node was starting")
	case errors.Is(err, cdpdriver.ErrChromiumNotFound):
		code = protocol.CodeBrowserNotRunning
	case errors.Is(err, bus.ErrInvalidOptions):
		return usagef("%v", err)
	case errors.Is(err, bus.ErrServerStart), errors.Is(err, bus.ErrConnect):
		code = protocol.CodeUnavailable
	default:
		code = protocol.CodeOf(err)
	}
	return &protocol.Error{Code: code, Message: "start node: " + err.Error(), Err: err}
}

// newLogger is the console logger on stderr. Colour only on a terminal.
func newLogger(w io.Writer, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), usagef("--log-level %q: want trace, debug, info, warn, error or disabled", level)
	}
	out := zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !isTerminal(w)}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}

// isTerminal reports whether v (a reader or writer) is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// quietLogger is the logger of short-lived client commands: warnings only.
func quietLogger(w io.Writer) zerolog.Logger {
	log, _ := newLogger(w, "warn")
	return log
}

// buildWhitelist makes the node's whitelist from --whitelist and
// --schemes: nil when --whitelist was not given and the schemes are the
// default (every http(s) host allowed).
func (o serveOptions) buildWhitelist() (*whitelist.Whitelist, error) {
	schemes := splitList(o.schemes)
	if !o.whitelistSet {
		if o.schemes == "http,https" {
			return nil, nil
		}
		return whitelist.New([]string{"*"}, schemes)
	}
	return whitelist.New(splitList(o.whitelist), schemes)
}

// splitList splits a comma-separated flag value; "" is an empty list.
func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
