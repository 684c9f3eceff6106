package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
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
)

// startTimeout bounds starting a node: the bus, Chromium and the first tab.
const startTimeout = 2 * time.Minute

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
Its own credentials (` + agentCredsFile + `, ` + adminCredsFile + ` beside the state file) are kept
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
	shown := sn.state
	shown.Bus = withoutPassword(sn.state.Bus)
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
	node  *actors.Node
	path  string // the state file
	state nodeState
	log   zerolog.Logger
}

// startServing starts a node as cfg says, its users and its state file;
// rotate makes the node's own credentials new.
func (c *cli) startServing(cfg config, log zerolog.Logger, rotate bool) (*servedNode, error) {
	busOpts := bus.Options{URL: cfg.Bus.URL}
	path, err := c.statePath()
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "%v", err)
	}
	// A node started again with its state brings its tabs back, under the
	// name it had unless given one.
	tabsFile := restoreFile(cfg, path, log)
	if cfg.Node.Name == "" {
		cfg.Node.Name = restoredName(tabsFile)
	}
	// The embedded bus lets users in with a password only: the node's own
	// agent and admin, written beside the state file, and the configured.
	var local *localUsers
	asked := busOpts // the listeners as configured, before the last start's were taken again
	if cfg.Bus.URL == "" {
		host, port, err := splitListen(cfg.Bus.Listen, cfg.Bus.AllowRemote)
		if err != nil {
			return nil, err
		}
		busOpts.Host, busOpts.Port, busOpts.AllowRemote = host, port, cfg.Bus.AllowRemote
		busOpts.WebSocket, busOpts.WebSocketOrigins = cfg.Bus.WebSocket, cfg.Bus.WebSocketOrigins
		if busOpts.Cluster, err = cfg.clusterOptions(); err != nil {
			return nil, err
		}
		if busOpts.Leaf, err = cfg.leafOptions(); err != nil {
			return nil, err
		}
		if busOpts.Cluster != nil || busOpts.Leaf != nil {
			// Every member of a cluster, every leaf of a hub, is a
			// server of its own name: the node's.
			cfg.Node.Name = cmp.Or(cfg.Node.Name, actors.DefaultNodeName())
			busOpts.Name = cfg.Node.Name
		}
		dir := filepath.Dir(path)
		if err := privateDir(dir); err != nil {
			log.Warn().Err(err).Msg("the credentials' directory")
		}
		configured, err := configuredUsers(cfg, dir)
		if err != nil {
			return nil, err
		}
		var own []bus.User
		if local, own, err = makeLocalUsers(dir, localUserSuffix(busOpts.Cluster, cfg.Node.Name), rotate); err != nil {
			return nil, protocol.Errorf(protocol.CodeInternal, "credentials: %v", err)
		}
		busOpts.Users = append(own, configured...)
		// Where the last start listened, when it is free: clients that
		// knew the node find its bus there again.
		asked = busOpts
		busOpts.Port = local.reusePort(busOpts.Host, busOpts.Port, local.lastURL)
		busOpts.WebSocket = local.reuseWebSocket(busOpts.WebSocket)
		if local.kept[local.agent.User] && local.kept[local.admin.User] {
			log.Info().Str("dir", dir).Msg("the node's own credentials are those of its last start (serve --rotate-credentials makes new ones)")
		}
	}
	shared := false // the state file's node runs: the files may be its
	if st, err := readState(path); err == nil && st.PID != os.Getpid() && processAlive(st.PID) {
		shared = true
		log.Warn().Int("pid", st.PID).Str("state", path).
			Msg("another framebus node is registered in the state file; this one replaces it as the default")
	}

	// Find the browser before starting anything: the commonest failure on
	// a fresh machine, answered with how to install it.
	chromium := cfg.Browser.Binary
	if chromium == "" {
		if chromium, err = cdpdriver.FindChromium(); err != nil {
			return nil, startError(c.ctx, err)
		}
	}
	wl, err := cfg.whitelist()
	if err != nil {
		return nil, usagef("whitelist: %v", err)
	}
	roots, err := cfg.fileRoots()
	if err != nil {
		return nil, usagef("%v", err)
	}
	account, err := cfg.browserUser()
	if err != nil {
		return nil, err
	}
	launch := cdpdriver.LaunchOptions{Headless: cfg.Browser.Headless, Binary: chromium, UserDataDir: cfg.profileDir(), User: cfg.Browser.User}
	var browserHome string
	if account != nil {
		browserHome = account.Home
	}
	profiles := cfg.profilesDir(c.getenv, browserHome)
	if err := passableStateDir(filepath.Dir(path), account, profiles, cfg.profileDir()); err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "the state file's directory: %v", err)
	}
	if err := makeProfilesDir(profiles, account); err != nil {
		return nil, usagef("browser.profileDir: %v", err)
	}
	viewport, err := cfg.viewport()
	if err != nil {
		return nil, usagef("viewport: %v", err)
	}
	history, err := cfg.historyOptions(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	if c := busOpts.Cluster; c != nil {
		// As many members as the cluster has keep the history and the
		// node registry, up to three.
		history.Replicas = min(3, max(1, len(c.Routes)))
	}
	if history.Dir != "" {
		// The history is the node's alone, like its state file.
		if err := os.MkdirAll(history.Dir, 0o700); err != nil {
			return nil, protocol.Errorf(protocol.CodeInternal, "history.dir: %v", err)
		}
	}
	httpOpts, err := cfg.httpOptions()
	if err != nil {
		return nil, err
	}
	searchOpts, err := cfg.searchOptions()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.ctx, startTimeout)
	defer cancel()
	nodeOpts := actors.NodeOptions{
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
		ProfileDir:    profiles,
		FileRoots:     roots,
		History:       history,
		MaxTabs:       cfg.Node.MaxTabs,
		TabsFile:      tabsFile,
		HTTP:          httpOpts,
		Search:        searchOpts,

		MaxStagedBytes: cfg.Files.MaxStagedBytes,
	}
	node, err := actors.StartNode(ctx, nodeOpts)
	if errors.Is(err, bus.ErrServerStart) && (busOpts.Port != asked.Port || busOpts.WebSocket != asked.WebSocket) {
		// The last start's port, free a moment ago, was taken since
		// (another process, maybe another user's): a new one, as when
		// it was taken before.
		log.Warn().Err(err).Msg("the last start's port was taken meanwhile: listening on a new one (clients need the new URL in the state and credentials files)")
		nodeOpts.Bus.Port, nodeOpts.Bus.WebSocket = asked.Port, asked.WebSocket
		node, err = actors.StartNode(ctx, nodeOpts)
	}
	cancel()
	if err != nil {
		return nil, startError(c.ctx, err)
	}
	if local != nil && busOpts.Cluster != nil {
		// The name is this node's now (the registry's compare-and-set):
		// its own users are too, over any a dead node of this name left
		// in the cluster, which would keep that one's passwords. Those
		// its last start left, of the passwords it kept, stay as they
		// are: their clients at other members keep their connections.
		if err := node.Bus().ClaimUsers(map[string]string{local.agent.User: local.agent.Password, local.admin.User: local.admin.Password}); err != nil {
			node.Close()
			return nil, startError(c.ctx, err)
		}
		// Its own users stay in the cluster when it stops, for its next
		// start; those of a name it no longer has leave now.
		if !shared {
			local.leaveReplaced(node.Bus(), node.Peers(), log)
		}
	}

	// Ready means reachable: the node answers on the bus.
	nc, err := node.Bus().Connect("serve")
	if err == nil {
		_, err = awaitTabs(c.ctx, nc, node.Subjects(), node.Name())
		nc.Close()
	}
	if err != nil {
		node.Close()
		return nil, startError(c.ctx, err)
	}
	if local != nil {
		if err := c.serveUsers(node, local, busOpts.Users, log); err != nil {
			node.Close()
			return nil, err
		}
	}
	st := nodeState{OK: true, Node: node.Name(), Bus: node.Bus().ClientURL(), WebSocket: node.Bus().WebSocketURL(), Prefix: node.Subjects().Prefix, PID: os.Getpid(), Tabs: node.Tabs()}
	if err := writeState(path, st); err != nil {
		node.Close()
		local.remove()
		return nil, protocol.Errorf(protocol.CodeInternal, "write state file %s: %v", path, err)
	}
	return &servedNode{node: node, path: path, state: st, log: log}, nil
}

// stop closes the node (a second signal kills its browser at once) and
// removes the state file.
func (sn *servedNode) stop(c *cli) error {
	log, node := sn.log, sn.node
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
			node.Kill()
		case <-closed:
			signal.Stop(hurry)
		}
	}()
	start := time.Now()
	closeErr := node.Close()
	close(closed)
	if err := removeState(sn.path, os.Getpid()); err != nil {
		log.Warn().Err(err).Msg("remove state file")
	}
	// The node's own credentials stay (0600) for its next start, and in
	// a cluster its own users stay in the cluster's: a client of another
	// member carries on through the restart (when they left with the
	// node, it was refused, permission_denied, and gave up).
	if closeErr != nil {
		log.Error().Err(closeErr).Msg("shutdown")
		return protocol.Errorf(protocol.CodeInternal, "shutdown: %v", closeErr)
	}
	log.Info().Dur("took", time.Since(start)).Msg("node stopped")
	return nil
}

// serveUsers writes the node's credentials files and answers the admin's
// user requests (creds add, remove, list); users are those the node's
// bus started with.
func (c *cli) serveUsers(node *actors.Node, local *localUsers, users []bus.User, log zerolog.Logger) error {
	if err := local.write(node.Bus(), node.Subjects().Prefix); err != nil {
		return protocol.Errorf(protocol.CodeInternal, "write credentials in %s: %v", local.dir, err)
	}
	// Not the bus's users now: in a cluster those are every node's, and
	// the own users of a node that stopped for good are creds remove's.
	keep := []string{}
	for _, u := range users {
		keep = append(keep, u.Name)
	}
	added, _ := readUsersFile(filepath.Join(local.dir, usersFile)) // read by configuredUsers already
	keep = slices.DeleteFunc(keep, func(name string) bool {
		return slices.ContainsFunc(added, func(u bus.User) bool { return u.Name == name })
	})
	nc, err := node.Bus().Connect("users")
	if err == nil {
		ua := &userAdmin{bus: node.Bus(), path: filepath.Join(local.dir, usersFile), keep: keep, mine: map[string]bool{}, liveNodes: node.Peers, log: log}
		for _, u := range added {
			ua.mine[u.Name] = true
		}
		node.Bus().OnUsersChanged(ua.forgetRemoved)
		err = ua.serve(nc, node.Subjects())
	}
	if err != nil {
		local.remove()
		return protocol.Errorf(protocol.CodeInternal, "serve user requests: %v", err)
	}
	return nil
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

// startError gives a failed node start its code: a missing browser says
// how to install one, a bus problem is unavailable.
func startError(ctx context.Context, err error) error {
	var code protocol.Code
	switch {
	case ctx.Err() != nil:
		return protocol.Errorf(protocol.CodeUnavailable, "interrupted while the node was starting")
	case errors.Is(err, cdpdriver.ErrChromiumNotFound):
		code = protocol.CodeBrowserNotRunning
	case errors.Is(err, cdpdriver.ErrProfileInUse):
		code = protocol.CodeProfileInUse
	case errors.Is(err, cdpdriver.ErrUnsafeProfile):
		code = protocol.CodePermissionDenied
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
	fs.String("full-page-policy", d.Frames.Policy, "when frames carry it: url-change, document-change or always")
	fs.String("whitelist", "", "comma-separated `hosts` the browser may load (*.example.com for subdomains; ADDR:PORT such as 127.0.0.1:4222 to reach one of the node's own listeners, which a host entry never reaches); enforced for every request; given empty, nothing is allowed; not given, every host is")
	fs.String("schemes", strings.Join(d.Schemes, ","), "comma-separated URL `schemes` the browser may load besides about:blank")
	fs.String("file-roots", "", "comma-separated absolute `dirs` under which plans may name the node's files (upload paths, file: URLs); default none (files.roots)")
	fs.String("viewport", d.Viewport, "the tabs' viewport, `WxH` in CSS pixels ("+strconv.Itoa(protocol.MinViewportSize)+" to "+strconv.Itoa(protocol.MaxViewportSize)+"), or window for the browser window's own size (attach profiles always keep theirs)")
	fs.String("device", "", "emulate a device in every tab: "+strings.Join(protocol.DeviceNames(), ", ")+" (its size unless --viewport gives one)")
	return configFile
}

// makeProfilesDir makes the directory of persistent profiles, the
// browser account's when Chromium runs as another one: it must enter it,
// and keeps its profiles there.
func makeProfilesDir(dir string, account *cdpdriver.BrowserUser) error {
	if dir == "" {
		return nil
	}
	// Not by path: the account may have put a link on the way (its home
	// is its own), and root would chown what it points to.
	return cdpdriver.MakeProfileDir(dir, account)
}
