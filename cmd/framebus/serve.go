package main

import (
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// serveOptions is what serve runs with: the effective configuration.
type serveOptions struct {
	cfg config
	// rotate makes the node's own credentials new instead of keeping
	// those of its last start (--rotate-credentials).
	rotate bool
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
temporary profile) and the bus, removes the state file and exits 0.
Its own credentials (` + serving.AgentCredsFile + `, ` + serving.OperatorCredsFile + `, ` + serving.AdminCredsFile + ` beside the state file) are kept
for its next start, so clients reconnect by themselves; --rotate-credentials
makes new ones (every client logged in with the old ones is refused).`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			configFile := declareServeFlags(fs)
			rotate := fs.Bool("rotate-credentials", false, "make new passwords for the node's own agent and admin users instead of keeping those of its last start (clients using the old ones are refused)")
			return func(c *cli, args []string) error {
				if len(args) > 0 {
					return usagef("serve: takes no arguments, got %q", args)
				}
				if fs.Changed("listen") && fs.Changed("bus-url") {
					return usagef("serve: --listen and --bus-url exclude each other: --listen is for the embedded server")
				}
				cfg, _, err := c.loadConfig(*configFile)
				if err != nil {
					return err
				}
				cfg.applyFlags(fs)
				if err := cfg.validate(); err != nil {
					return err
				}
				return c.serve(serveOptions{cfg: cfg, rotate: *rotate})
			}
		},
	}
}

func (c *cli) serve(o serveOptions) error {
	log, err := newLogger(c.stderr, o.cfg.LogLevel)
	if err != nil {
		return err
	}
	sn, err := c.startServing(o.cfg, log, o.rotate)
	if err != nil {
		return err
	}
	// The state file (0600) keeps an external bus's login; what is
	// printed and logged, which others may read, does not.
	shown := sn.State()
	shown.Bus = withoutPassword(shown.Bus)
	c.printJSON(shown)
	log.Info().Str("bus", shown.Bus).Str("tabs", describeTabs(shown.Tabs)).Str("state", sn.path).
		Msg("node ready; stop it with Ctrl-C or SIGTERM")

	// A browser that exits on its own leaves the node running without
	// one (status says so; launch starts it again), as close does.
	<-c.ctx.Done()
	return sn.stop(c)
}

// servedNode is a node this process runs and has registered in the
// state file, for serve and for mcp when no node runs.
type servedNode struct {
	*serving.Node
	path string // the state file
	log  zerolog.Logger
}

// startServing starts a node as cfg says, its users and its state file;
// rotate makes the node's own credentials new.
func (c *cli) startServing(cfg config, log zerolog.Logger, rotate bool) (*servedNode, error) {
	path, err := c.statePath()
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "%v", err)
	}
	o, err := c.servingOptions(cfg, path, log)
	if err != nil {
		return nil, err
	}
	o.RotateCredentials = rotate
	n, err := serving.Start(c.ctx, o)
	if err != nil {
		return nil, err
	}
	return &servedNode{Node: n, path: path, log: log}, nil
}

// servingOptions are the node's options as cfg says, with its state file
// at path.
func (c *cli) servingOptions(cfg config, path string, log zerolog.Logger) (serving.Options, error) {
	busOpts := bus.Options{URL: cfg.Bus.URL}
	var users []bus.User
	if cfg.Bus.URL == "" {
		host, port, err := splitListen(cfg.Bus.Listen, cfg.Bus.AllowRemote)
		if err != nil {
			return serving.Options{}, err
		}
		busOpts.Host, busOpts.Port, busOpts.AllowRemote = host, port, cfg.Bus.AllowRemote
		busOpts.WebSocket, busOpts.WebSocketOrigins = cfg.Bus.WebSocket, cfg.Bus.WebSocketOrigins
		if busOpts.Cluster, err = cfg.clusterOptions(); err != nil {
			return serving.Options{}, err
		}
		if busOpts.Leaf, err = cfg.leafOptions(); err != nil {
			return serving.Options{}, err
		}
		for _, u := range cfg.Bus.Users {
			users = append(users, bus.User{Name: u.Name, PasswordHash: u.Password, Role: u.Role})
		}
	}
	wl, err := cfg.whitelist()
	if err != nil {
		return serving.Options{}, usagef("whitelist: %v", err)
	}
	roots, err := cfg.fileRoots()
	if err != nil {
		return serving.Options{}, usagef("%v", err)
	}
	account, err := cfg.browserUser()
	if err != nil {
		return serving.Options{}, err
	}
	launch := cdpdriver.LaunchOptions{Headless: cfg.Browser.Headless, Binary: cfg.Browser.Binary, UserDataDir: cfg.profileDir(), User: cfg.Browser.User}
	var browserHome string
	if account != nil {
		browserHome = account.Home
	}
	viewport, err := cfg.viewport()
	if err != nil {
		return serving.Options{}, usagef("viewport: %v", err)
	}
	history, err := cfg.historyOptions(filepath.Dir(path))
	if err != nil {
		return serving.Options{}, err
	}
	httpOpts, err := cfg.httpOptions()
	if err != nil {
		return serving.Options{}, err
	}
	searchOpts, err := cfg.searchOptions()
	if err != nil {
		return serving.Options{}, err
	}
	return serving.Options{
		StatePath: path,
		Node: actors.NodeOptions{
			Name:          cfg.Node.Name,
			Bus:           busOpts,
			Launch:        launch,
			Prefix:        cfg.Bus.Prefix,
			StartURL:      cfg.Browser.StartURL,
			Logger:        log,
			ActionTimeout: cfg.timeout(),
			DialogTimeout: cfg.dialogTimeout(),
			DialogDefault: cfg.Browser.DialogDefault,
			Frames:        cfg.framesOptions(),
			SettleTimeout: cfg.settleTimeout(),
			Whitelist:     wl,
			Viewport:      &viewport,
			Profiles:      cfg.profiles(),
			ProfileDir:    cfg.profilesDir(c.getenv, browserHome),
			FileRoots:     roots,
			History:       history,
			MaxTabs:       cfg.Node.MaxTabs,
			HTTP:          httpOpts,
			Search:        searchOpts,

			MaxStagedBytes: cfg.Files.MaxStagedBytes,
		},
		Users:          users,
		BrowserAccount: account,
	}, nil
}

// stop closes the node (a second signal kills its browser at once) and
// removes the state file.
func (sn *servedNode) stop(c *cli) error {
	log := sn.log
	log.Info().Msg("shutting down (a second signal kills the browser at once)")
	hurry := make(chan os.Signal, 1)
	signal.Notify(hurry, os.Interrupt, syscall.SIGTERM)
	c.stopSignals()
	closed := make(chan struct{})
	go func() {
		select {
		case <-hurry:
			// Still cleaned up: Close goes on, with nothing left to wait for.
			log.Warn().Msg("second signal: killing the browser now (a third ends the process as it stands)")
			signal.Stop(hurry)
			sn.Kill()
		case <-closed:
			signal.Stop(hurry)
		}
	}()
	err := sn.Stop()
	close(closed)
	return err
}

// splitListen parses --listen host:port; port 0 means a free port. The
// host is loopback unless allowRemote (see bus.LoopbackOnly).
func splitListen(listen string, allowRemote bool) (string, int, error) {
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, usagef("--listen %q: want host:port, e.g. 127.0.0.1:4222 or 127.0.0.1:0", listen)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, usagef("--listen %q: port must be 0-65535 (0 picks a free port)", listen)
	}
	if !allowRemote && !bus.IsLoopback(host) {
		where := host
		if where == "" || where == "0.0.0.0" || where == "::" || where == "[::]" {
			where = "every interface"
		}
		return "", 0, usagef("--listen %q: refusing to listen on %s: %s", listen, where, bus.LoopbackOnly)
	}
	return host, port, nil
}

// newLogger is the console logger on stderr. Colour only on a terminal.
func newLogger(w io.Writer, level string) (zerolog.Logger, error) {
	lvl, err := newLogLevel(level)
	if err != nil {
		return zerolog.Nop(), err
	}
	out := zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !isTerminal(w)}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}

func newLogLevel(level string) (zerolog.Level, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return lvl, usagef("--log-level %q: want trace, debug, info, warn, error or disabled", level)
	}
	return lvl, nil
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

// whitelist is the node's whitelist: nil when none is configured and the
// schemes are the default (every http(s) host allowed); with other schemes
// and no whitelist, one that allows every host and address (not "*",
// which keeps the address policy).
func (cfg config) whitelist() (*whitelist.Whitelist, error) {
	if cfg.Whitelist == nil {
		if strings.Join(cfg.Schemes, ",") == "http,https" {
			return nil, nil
		}
		return whitelist.New(nil, cfg.Schemes)
	}
	return whitelist.New(*cfg.Whitelist, cfg.Schemes)
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

// declareServeFlags declares serve's flags, which config takes too, and
// returns the --config flag.
func declareServeFlags(fs *pflag.FlagSet) *string {
	d := defaultConfig()
	configFile := fs.String("config", "", "YAML configuration `file` (default $"+envConfig+", else "+defaultConfigHint()+" when it exists); flags override it")
	fs.String("node", "", "the node's `name`, unique among the live nodes of the bus: letters, digits, '-' and '_' (node.name; default: the host name and a short random suffix)")
	fs.Int("max-tabs", 0, "how many tabs the node takes, `N`; past it a new tab is refused node_full and placement sends tabs elsewhere (node.maxTabs; 0: derived from the machine's memory and cores, printed at start; -1: no bound)")
	fs.Int64("max-staged-bytes", 0, "how many `bytes` of files staged for upload the node's tabs hold together; past it a file is refused node_full (files.maxStagedBytes; 0: a quarter of the free disk space, printed at start; -1: no bound)")
	boolVarP(fs, new(bool), "headed", "", "show the browser window (default: headless)")
	timeout := msDuration(time.Duration(d.Browser.Timeout) * time.Millisecond)
	fs.Var(&timeout, "timeout", "default deadline of an action that sets none, a duration or milliseconds (browser.timeout)")
	fs.String("profile-dir", "", "`dir`ectory of persistent profiles; the browser uses <dir>/default (default: a temporary profile)")
	fs.String("browser-user", "", "the `account` Chromium runs as when framebus runs as root, sandbox on (default "+cdpdriver.DefaultBrowserUser+", created when missing); root keeps it root without its sandbox")
	fs.String("listen", d.Bus.Listen, "`host:port` of the embedded NATS server's listener, loopback unless --allow-remote; port 0 picks a free port")
	fs.String("websocket", "", "`host:port` of a NATS-over-WebSocket listener too (browser-based clients; same users), loopback unless --allow-remote; port 0 picks a free port")
	fs.String("cluster", "", "`host:port` where other cluster members route to this node's embedded server (bus.cluster.listen); loopback unless --allow-remote")
	fs.String("routes", "", "comma-separated `URLs` of every cluster member's route listener, nats-route://host:port (bus.cluster.routes)")
	fs.String("cluster-secret-file", "", "`file` holding the password cluster routes log in with, the same on every member (bus.cluster.secretFile)")
	fs.String("leaf", "", "comma-separated `URLs` of a NATS deployment's leaf node listeners (nats://host:port): the embedded server joins it as a leaf node (bus.leaf.urls)")
	fs.String("leaf-credentials", "", "`file` (0600) logging the leaf node in to the hub: user:password on one line, or a NATS .creds file (bus.leaf.credentials)")
	fs.String("leaf-js-domain", "", "the hub's JetStream `domain`, which keeps the node's history and registry (bus.leaf.jsDomain); none: no history")
	fs.String("websocket-origins", "", "comma-separated `origins` (scheme://host[:port]) of the web pages that may use --websocket; none: no web page (clients that are no browser are not affected)")
	boolVarP(fs, new(bool), "allow-remote", "", "let --listen and --websocket be addresses other machines reach: every client logs in, but without TLS")
	fs.String("bus-url", "", "use the NATS server at this `URL` (nats://host:port) instead of embedding one")
	fs.String("prefix", d.Bus.Prefix, "subject `prefix`")
	fs.String("start-url", d.Browser.StartURL, "`URL` the first tab opens")
	fs.String("log-level", d.LogLevel, "log `level` on stderr: trace, debug, info, warn, error")
	fs.String("history", d.History.Storage, "where the frame history is kept (`storage`): memory, file (under <state dir>/jetstream, or history.dir) or off")
	dialogTimeout := msDuration(actors.DefaultDialogTimeout)
	fs.Var(&dialogTimeout, "dialog-timeout", "how long a JavaScript dialog stays open for a dialog action before the default answers it; 0 answers at once")
	fs.String("dialog-default", d.Browser.DialogDefault, "the automatic answer to a JavaScript dialog: accept or dismiss")
	fs.String("full-page", d.Frames.FullPage, "the content frames carry: snapshot, html, text or none")
	fs.String("full-page-policy", d.Frames.Policy, "when frames carry it: url-change, document-change, always, or delta (the page when the URL changes, what changed on every other frame)")
	fs.String("whitelist", "", "comma-separated `hosts` the browser may load (*.example.com for subdomains; ADDR:PORT such as 127.0.0.1:4222 to reach one of the node's own listeners, which a host entry never reaches); enforced for every request; given empty, nothing is allowed; not given, every host is")
	fs.String("schemes", strings.Join(d.Schemes, ","), "comma-separated URL `schemes` the browser may load besides about:blank")
	fs.String("file-roots", "", "comma-separated absolute `dirs` under which plans may name the node's files (upload paths, file: URLs); default none (files.roots)")
	fs.String("viewport", d.Viewport, "the tabs' viewport, `WxH` in CSS pixels ("+strconv.Itoa(protocol.MinViewportSize)+" to "+strconv.Itoa(protocol.MaxViewportSize)+"), or window for the browser window's own size (attach profiles always keep theirs)")
	fs.String("device", "", "emulate a device in every tab: "+strings.Join(protocol.DeviceNames(), ", ")+" (its size unless --viewport gives one)")
	return configFile
}
