package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors/egress"
	"github.com/framebus/framebus/actors/files"
	"github.com/framebus/framebus/actors/webfetch"
	"github.com/framebus/framebus/actors/websearch"
	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/protocol"
)

// NodeOptions configure a node: its bus, its browser and its tabs.
type NodeOptions struct {
	// Name is the node's name, unique among the live nodes of its bus
	// (see protocol.ValidNodeName): DefaultNodeName() when "". Every tab
	// listing, status, session and frame carries it.
	Name   string
	Bus    bus.Options
	Launch cdpdriver.LaunchOptions
	Prefix string // subject prefix; protocol.DefaultPrefix when ""
	Frames frames.Options
	// SettleTimeout: see TabOptions.
	SettleTimeout time.Duration
	// ActionTimeout: see TabOptions.
	ActionTimeout time.Duration
	// DialogTimeout and DialogDefault: see TabOptions.
	DialogTimeout time.Duration
	DialogDefault string
	// Whitelist limits what the browser may load, in its network layer,
	// for every request of every tab; nil allows every http(s) URL. With
	// one, the node's browsers also reach the network only through an
	// egress proxy that enforces it (WebSockets are not Fetch requests).
	Whitelist *whitelist.Whitelist
	// EgressResolver is how the egress proxy looks host names up (nil:
	// the machine's resolver); tests map their domain names to loopback
	// here, as --host-resolver-rules does for Chromium. Every address it
	// answers is checked (whitelist CheckAddr) before it is dialled.
	EgressResolver egress.Resolver
	// EgressNoPin makes the proxy look a name up again for every check and
	// connection instead of using a checked answer for egress.DefaultPin:
	// the worst case for DNS rebinding, which tests run.
	EgressNoPin bool
	// Viewport is what the tabs of the browsers the node launches are
	// laid out for: protocol.DefaultViewport (1280x720) when nil; a zero
	// one leaves them the browser window's own size. Attach profiles'
	// tabs keep their window's (see Profile.viewport).
	Viewport *protocol.Viewport
	// StartURL is where the first tab of a launched browser opens;
	// about:blank when "".
	StartURL string
	// Profiles are the node's profiles besides the default one (whose
	// browser uses Launch as it is and starts with the node): named
	// managed profiles, launched on request, and attach profiles,
	// connected at start when their browser answers.
	Profiles []ProfileOptions
	// ProfileDir holds named profiles and the per-domain profiles of
	// sessions, <ProfileDir>/<name>/. "" gives named profiles temporary
	// directories and refuses sessions, which exist to persist.
	ProfileDir string
	// FileRoots are the directories under which plans may name node
	// files (files.roots); nil: none, every node path is refused. The
	// whitelist judges file: URLs by the same roots (see
	// whitelist.WithFileRoots).
	FileRoots *files.Roots
	// FileLimits bound the files a tab holds for upload; their Shared
	// budget, when nil, is the node's (MaxStagedBytes).
	FileLimits files.Limits
	// MaxStagedBytes bounds the staged files of all the node's tabs
	// together: 0 derives it from the free disk space and memory
	// (DefaultMaxStagedBytes), a negative number sets no bound.
	MaxStagedBytes int64
	// History keeps every tab's frames in JetStream (see History): in
	// memory unless it says file storage. The embedded bus gets
	// JetStream for it; on an external bus without JetStream the node
	// warns and runs without history.
	History HistoryOptions
	// TabsFile, when set, is where the node keeps the list of its open
	// tabs (0600), for a node started again with it to bring them back
	// under their ids, each going on from its last frame in the history
	// (see restore.go); it needs History, on file to outlive the process.
	TabsFile string
	// MaxTabs is how many tabs the node takes (see capacity): 0 derives
	// it from the machine's memory and cores (DefaultMaxTabs), a
	// negative number sets no bound. Placement sends tabs to the nodes
	// with the most room.
	MaxTabs int
	// HTTP and Search configure the resources beside the browser (fetch
	// and search, on the bus and in plans).
	HTTP   HTTPOptions
	Search SearchOptions
	Logger zerolog.Logger
}

// Node wires a bus, its browser profiles and their tab actors together,
// and shuts them all down in order.
type Node struct {
	opts NodeOptions
	name string
	subj protocol.Subjects
	bus  *bus.Bus
	nc   *nats.Conn
	log  zerolog.Logger

	mu       sync.Mutex // guards profiles, order
	profiles map[string]*Profile
	order    []string // profile names, the default first
	sessions sessions
	capacity capacity
	restore  restorer // the tabs of the last run, and the file of this one's

	egress    *egress.Proxy  // nil without a whitelist
	dialer    *egress.Dialer // the proxy's, checked addresses only
	fetcher   *webfetch.Fetcher
	searcher  *websearch.Searcher
	stageDir  string    // the tabs' staged files, removed on Close
	history   *History  // nil: none
	registry  *registry // the live nodes; nil on a bus without JetStream
	started   time.Time
	svc       micro.Service // tabs, browser status, sessions; nil until started
	closeOnce sync.Once
	closeErr  error
	// leaving is closed as Close starts: tabs that end now make no
	// close frame (the node stops, it does not close them).
	leaving chan struct{}
}

// StartNode starts the bus, launches the default profile's browser and
// opens one tab; it sets up the other profiles and connects the attach
// ones whose browser answers.
func StartNode(ctx context.Context, opts NodeOptions) (n *Node, err error) {
	subj, err := protocol.NewSubjects(opts.Prefix)
	if err != nil {
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = DefaultNodeName()
	}
	if err := protocol.CheckNodeName(opts.Name); err != nil {
		return nil, err
	}
	opts.Frames.Node = opts.Name
	opts.Logger = opts.Logger.With().Str("node", opts.Name).Logger()
	machine := ThisMachine()
	opts.MaxTabs = maxTabs(opts.MaxTabs, machine)
	n = &Node{opts: opts, name: opts.Name, subj: subj, log: opts.Logger, profiles: map[string]*Profile{}, started: time.Now(), leaving: make(chan struct{})}
	started := n // the returns below set n to nil
	defer func() {
		if err != nil {
			started.Close()
		}
	}()
	opts.Bus.Logger = opts.Logger.With().Str("component", "bus").Logger()
	opts.Bus.Prefix = subj.Prefix // the users' permissions are for the node's subjects
	// A leaf node's JetStream is its hub's (bus.LeafOptions.JSDomain).
	if h := opts.History; opts.Bus.URL == "" && opts.Bus.JetStream == nil && opts.Bus.Leaf == nil {
		if !h.Disabled && h.Storage == HistoryFile && h.Dir == "" {
			return nil, protocol.Errorf(protocol.CodeBadRequest, "history: file storage needs a directory")
		}
		// The node registry needs JetStream too, history or not: in
		// memory when there is no history on file.
		opts.Bus.JetStream = &bus.JetStreamOptions{}
		if !h.Disabled {
			opts.Bus.JetStream.StoreDir = h.Dir
		}
	}
	if n.bus, err = bus.Start(opts.Bus); err != nil {
		return nil, err
	}
	if n.nc, err = n.bus.Connect("framebus-node"); err != nil {
		return nil, err
	}
	n.loadRestore() // first: plans to the tabs coming back are answered at once
	if err = n.joinCluster(ctx); err != nil {
		return nil, err
	}
	if n.stageDir, err = nodeStageDir(); err != nil {
		return nil, err
	}
	if n.opts.FileLimits.Shared == nil {
		staged, err := maxStagedBytes(opts.MaxStagedBytes, machine, n.stageDir)
		if err != nil {
			return nil, err
		}
		n.opts.FileLimits.Shared = files.NewBudget(staged)
	}
	n.log.Info().Int("maxTabs", n.MaxTabs()).Int64("maxStagedBytes", n.MaxStagedBytes()).
		Int64("memAvailable", machine.MemAvailable).Int("cores", machine.Cores).
		Msg("bounds (0: none; serve --max-tabs, --max-staged-bytes)")
	// The node's own listeners are no page's or fetch's destination.
	own := n.ownListeners()
	n.dialer = egress.NewDialer(cmp.Or(opts.Whitelist, openWhitelist).WithListeners(own).CheckAddrPort, opts.EgressResolver)
	if opts.EgressNoPin {
		n.dialer.PinFor(0)
	}
	if wl := opts.Whitelist; wl != nil {
		// file: URLs, when allowed, lead only under the file roots.
		n.opts.Whitelist = wl.WithFileRoots(opts.FileRoots).WithListeners(own)
		if n.egress, err = egress.Start(wl.CheckHost, n.dialer, opts.Logger.With().Str("component", "egress").Logger()); err != nil {
			return nil, err
		}
		if err = own.AddBound("the node's egress proxy", n.egress.Addr()); err != nil {
			return nil, err
		}
		n.opts.Launch.Args = append(slices.Clip(opts.Launch.Args), n.egress.Flags()...)
		// The proxy resolves what the browser connects to; a name the
		// browser would look up itself (WebRTC's) could leak in DNS.
		n.opts.Launch.NoSystemDNS = true
	}
	if err := n.startResources(); err != nil {
		return nil, err
	}
	def, err := n.addProfile(ProfileOptions{Name: protocol.DefaultProfile}, n.opts.Launch)
	if err != nil {
		return nil, err
	}
	for _, po := range opts.Profiles {
		if _, err := n.addProfile(po, n.profileLaunch(po.Name)); err != nil {
			return nil, err
		}
	}
	if err = def.Launch(ctx); err != nil {
		return nil, err
	}
	for _, po := range opts.Profiles {
		// A named profile launched on request had tabs when the node
		// stopped: it is launched to bring them back.
		if po.Attach == "" && n.hasRestore(po.Name) {
			if err := n.Profile(po.Name).Launch(ctx); err != nil {
				n.log.Error().Err(err).Str("profile", po.Name).Msg("the profile's tabs are not restored: its browser did not start")
				n.releaseProfilePlans(po.Name)
			}
		}
	}
	n.saveTabs()
	for _, po := range opts.Profiles {
		if po.Attach == "" {
			continue
		}
		if err := n.Profile(po.Name).Connect(ctx); err != nil {
			n.log.Warn().Err(err).Str("profile", po.Name).Msg("attach profile not connected; connect it once its browser runs")
		}
	}
	endpoints := []endpoint{
		{name: "tabs", subject: subj.Tabs(), handle: n.answerTabs},
		{name: "status", subject: subj.BrowserStatus(), handle: n.answerStatus},
		{name: "sessions", subject: subj.SessionList(), handle: n.answerSessions},
		// One node of those sharing the bus takes each session start.
		{name: "session-start", subject: subj.SessionStart(), handle: n.answerSessionStart, queue: "framebus-sessions"},
		{name: "node-session-start", subject: subj.NodeSessionStart(n.name), handle: n.answerNodeSessionStart},
	}
	endpoints = append(endpoints, n.resourceEndpoints()...)
	if n.sessions.kv != nil {
		// A registered session that no node runs is stopped by one of them.
		endpoints = append(endpoints, endpoint{name: "gone-session-stop", subject: subj.SessionStop("*"), handle: n.answerGoneSessionStop, queue: "framebus-sessions"})
	}
	n.svc, err = addService(n.nc, "framebus node", map[string]string{"prefix": subj.Prefix, "node": n.name}, endpoints)
	if err != nil {
		return nil, err
	}
	if err = n.nc.FlushTimeout(startFlushTimeout); err != nil {
		return nil, err
	}
	// The sessions this node ran when it stopped start again beside it.
	rctx, stopRestore := context.WithCancel(context.Background())
	n.sessions.stopRestore, n.sessions.restored = stopRestore, make(chan struct{})
	go func() {
		defer close(n.sessions.restored)
		n.restoreSessions(rctx)
	}()
	return n, nil
}

// profileLaunch is how a named managed profile launches: the node's
// launch options on <ProfileDir>/<name>.
func (n *Node) profileLaunch(name string) cdpdriver.LaunchOptions {
	launch := n.opts.Launch
	launch.UserDataDir = ""
	if n.opts.ProfileDir != "" {
		launch.UserDataDir = filepath.Join(n.opts.ProfileDir, name)
	}
	return launch
}

// addProfile registers a profile and serves its lifecycle; it does not
// start its browser.
func (n *Node) addProfile(po ProfileOptions, launch cdpdriver.LaunchOptions) (*Profile, error) {
	name := po.Name
	if err := protocol.CheckProfileName(name); err != nil {
		return nil, err
	}
	if launch.UserDataDir != "" && po.Attach == "" {
		// As Launch will: no link the browser's account put on the way
		// is followed.
		account, err := cdpdriver.LaunchUser(launch.User)
		if err == nil {
			err = cdpdriver.MakeProfileDir(launch.UserDataDir, account)
		}
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", name, err)
		}
	}
	p := newProfile(n, po, launch)
	n.mu.Lock()
	if _, dup := n.profiles[name]; dup {
		n.mu.Unlock()
		return nil, protocol.Errorf(protocol.CodeBadRequest, "profile %q is declared twice", name)
	}
	n.profiles[name] = p
	n.order = append(n.order, name)
	n.mu.Unlock()
	if err := p.serveLifecycle(); err != nil {
		return nil, err
	}
	return p, nil
}

// Profile returns the profile called name, or nil.
func (n *Node) Profile(name string) *Profile {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.profiles[name]
}

// Profiles are the node's profiles, the default first.
func (n *Node) Profiles() []*Profile {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*Profile, 0, len(n.order))
	for _, name := range n.order {
		out = append(out, n.profiles[name])
	}
	return out
}

// profileNames are the names of the node's profiles, the default first.
func (n *Node) profileNames() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.order)
}

func (n *Node) defaultProfile() *Profile { return n.Profile(protocol.DefaultProfile) }

// OpenTab opens a new tab at url in the default profile.
func (n *Node) OpenTab(ctx context.Context, url string) (*Tab, error) {
	return n.defaultProfile().OpenTab(ctx, url)
}

// Tabs lists the tabs of every profile.
func (n *Node) Tabs() []protocol.TabInfo {
	var out []protocol.TabInfo
	for _, p := range n.Profiles() {
		out = append(out, p.Tabs()...)
	}
	return out
}

// Tab returns the tab with id in any profile, or nil.
func (n *Node) Tab(id string) *Tab {
	for _, p := range n.Profiles() {
		if t := p.Tab(id); t != nil {
			return t
		}
	}
	return nil
}

// CloseTab closes a tab of any profile.
func (n *Node) CloseTab(ctx context.Context, id string) (protocol.TabInfo, error) {
	for _, p := range n.Profiles() {
		if p.Tab(id) != nil {
			return p.CloseTab(ctx, id)
		}
	}
	return protocol.TabInfo{}, protocol.Errorf(protocol.CodeTabNotFound, "no tab %s on this node", id)
}

// Browser is the default profile's browser, nil while it is closed.
func (n *Node) Browser() *Browser { return n.defaultProfile().Browser() }

// Launch starts the default profile's browser if it is not running.
func (n *Node) Launch(ctx context.Context) error { return n.defaultProfile().Launch(ctx) }

// CloseBrowser stops the default profile's browser and retires its tabs;
// see Profile.Close.
func (n *Node) CloseBrowser() error { return n.defaultProfile().Close() }

// Status is the status of every profile; it never fails.
func (n *Node) Status() protocol.StatusReply {
	st := protocol.StatusReply{OK: true, Node: n.name, Profiles: []protocol.ProfileStatus{},
		Limits: &protocol.NodeLimits{Tabs: n.tabCount(), MaxTabs: n.MaxTabs(), MaxStagedBytes: max(n.MaxStagedBytes(), 0)}}
	for _, p := range n.Profiles() {
		st.Profiles = append(st.Profiles, p.Status())
	}
	return st
}

// History is the node's frame history, nil when it runs without.
func (n *Node) History() *History { return n.history }

// Bus is the node's bus, to connect more clients to it.
func (n *Node) Bus() *bus.Bus { return n.bus }

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// Subjects is the node's subject scheme.
func (n *Node) Subjects() protocol.Subjects { return n.subj }

func (n *Node) answerTabs(m micro.Request) {
	respond(m, protocol.TabList{OK: true, Node: n.name, Tabs: n.Tabs(), Peers: n.Peers()}, n.log)
}

func (n *Node) answerStatus(m micro.Request) {
	st := n.Status()
	st.Peers = n.Peers()
	respond(m, st, n.log)
}

// Close stops the tab actors, every profile's browser (saving persistent
// profiles, removing temporary ones, disconnecting from attached ones) and
// the bus, in that order. Safe to call more than once.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		close(n.leaving)
		var errs []error
		n.stopSavingTabs() // its tabs come back at its next start
		if n.registry != nil {
			n.registry.leave() // first: no one sends this node more work
		}
		if n.svc != nil {
			_ = n.svc.Stop()
		}
		if n.sessions.stopRestore != nil {
			n.sessions.stopRestore()
			<-n.sessions.restored
		}
		profiles := n.Profiles()
		var wg sync.WaitGroup
		errc := make(chan error, len(profiles))
		for _, p := range profiles {
			p.stopLifecycle()
			wg.Add(1)
			go func() { // browsers shut down side by side
				defer wg.Done()
				if err := p.closeBrowser(); err != nil {
					errc <- err
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			errs = append(errs, err)
		}
		if n.egress != nil {
			_ = n.egress.Close()
		}
		if n.fetcher != nil {
			n.fetcher.Close() // its idle connections
		}
		if n.stageDir != "" {
			// The tabs removed their own; whatever a crash left, too.
			if err := os.RemoveAll(n.stageDir); err != nil {
				errs = append(errs, fmt.Errorf("remove staged files: %w", err))
			}
		}
		if n.nc != nil {
			_ = n.nc.Drain()
		}
		if n.bus != nil {
			if err := n.bus.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close bus: %w", err))
			}
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// Kill ends every browser the node launched at once (see
// cdpdriver.Process.Kill): for a second signal during a slow Close, which
// then finishes quickly and still removes temporary profiles. Attached
// browsers are not the node's to kill.
func (n *Node) Kill() {
	for _, p := range n.Profiles() {
		if b := p.Browser(); b != nil && b.Process() != nil {
			b.Process().Kill()
		}
	}
}

// allow checks a URL a tab is asked to navigate to: against the whitelist
// when there is one, else only its scheme.
func (n *Node) allow(url string) error {
	if n.opts.Whitelist != nil {
		return n.opts.Whitelist.Check(url)
	}
	return openWhitelist.Check(url)
}

// openWhitelist allows every host, over http and https.
var openWhitelist, _ = whitelist.New(nil, nil)

// joinCluster starts the frame history and enters the node in the
// node and session registries: the node's part in the JetStream it
// shares with the bus's other nodes. A clash of names found meanwhile
// is node_name_taken (see watchNameClash).
func (n *Node) joinCluster(ctx context.Context) (err error) {
	ctx, stop := n.watchNameClash(ctx)
	defer stop()
	defer func() { err = nameTaken(ctx, err) }()
	if !n.opts.History.Disabled {
		n.history, err = StartHistory(ctx, n.nc, n.subj, n.opts.History, n.opts.Logger.With().Str("component", "history").Logger())
		if errors.Is(err, ErrNoJetStream) {
			n.log.Warn().Err(err).Msg("no frame history: frames are live only, and large contents are kept by their tabs for their latest frames")
			err = nil
		}
		if err != nil {
			return err
		}
	}
	n.needHistoryToRestore()
	if err = n.joinRegistry(ctx); err != nil {
		return err
	}
	if err = n.openSessionRegistry(ctx); err != nil {
		return err
	}
	return nil
}

// watchNameClash is ctx, ended with node_name_taken when another server
// of the cluster turns out to have the node's name while it starts (the
// embedded server takes the node's name): the cluster refuses the routes
// between them, so JetStream may answer neither the history nor the
// registry, which would tell.
func (n *Node) watchNameClash(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	clash := n.bus.NameClash()
	go func() {
		select {
		case <-clash:
			cancel(protocol.Errorf(protocol.CodeNodeNameTaken,
				"node name %q is taken: another server of the bus's cluster has it (the cluster refuses the routes between them); choose another with --node (or $FRAMEBUS_NODE), or stop that node", n.name))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// nameTaken is err, or the name clash that ended ctx (see
// watchNameClash) when err came of it.
func nameTaken(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && protocol.CodeOf(cause) == protocol.CodeNodeNameTaken {
		return cause
	}
	return err
}

// joinRegistry enters the node in the bus's node registry (see
// registry): node_name_taken when a live node has its name. On a bus
// without JetStream the node runs unregistered, with a warning.
func (n *Node) joinRegistry(ctx context.Context) error {
	js, err := jetstream.New(n.nc)
	if err != nil {
		return err
	}
	n.registry, err = joinRegistry(ctx, js, n.subj, n.opts.History.Replicas, n.ownEntry, n.log.With().Str("component", "registry").Logger())
	if errors.Is(err, ErrNoJetStream) {
		n.log.Warn().Err(err).Msg("no node registry: the bus has no JetStream, so this node's name is not checked against the others' and clients cannot tell a node that died from one that never was")
		return nil
	}
	return err
}

// ownEntry is the node's registry entry as of now.
func (n *Node) ownEntry() protocol.NodeEntry {
	host, _ := os.Hostname()
	return protocol.NodeEntry{Node: n.name, Host: host, PID: os.Getpid(), Prefix: n.subj.Prefix, Started: n.started.UTC(),
		Tabs: n.tabCount(), MaxTabs: n.opts.MaxTabs, Profiles: n.profileNames(), MemAvailable: memAvailable()}
}

// Peers are the live nodes of the bus by the registry, this one
// included; nil without a registry.
func (n *Node) Peers() []string {
	if n.registry == nil {
		return nil
	}
	return n.registry.Peers()
}
