package serving

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// startTimeout bounds starting a node: the bus, Chromium and the first tab.
const startTimeout = 2 * time.Minute

// tabsTimeout bounds waiting for the node to answer with its tabs.
const tabsTimeout = 5 * time.Second

// Options are what a served node runs with.
type Options struct {
	// StatePath is the state file the node registers in; its own
	// credentials files, users.json and its tabs file lie beside it.
	StatePath string
	// Node is the node as configured. Its name may be "": a node started
	// again with its state takes the name it had, a cluster member or a
	// leaf node a default one. Its bus's listeners are as asked: port 0
	// takes the last start's port again when it is free. Launch.Binary ""
	// finds Chromium.
	Node actors.NodeOptions
	// Users are the embedded bus's configured users (bus.users), besides
	// the node's own and those creds add made (users.json).
	Users []bus.User
	// BrowserAccount is the account Chromium runs as (nil: this
	// process's user).
	BrowserAccount *cdpdriver.BrowserUser
	// RotateCredentials makes the node's own credentials new instead of
	// keeping those of its last start (serve --rotate-credentials).
	RotateCredentials bool
}

// OptionsError is a node's options that cannot be: a usage error on a
// command line.
type OptionsError struct{ Msg string }

func (e *OptionsError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &OptionsError{Msg: fmt.Sprintf(format, args...)}
}

// errorReply is a failed user request's reply: {"ok":false,"error":...,"code":...}.
type errorReply struct {
	OK    bool          `json:"ok"`
	Error string        `json:"error"`
	Code  protocol.Code `json:"code"`
}

// Node is a node this process runs and has registered in the state file.
type Node struct {
	node  *actors.Node
	path  string // the state file
	state State
	log   zerolog.Logger
}

// State is what the node keeps in the state file while it runs.
func (sn *Node) State() State { return sn.state }

// Kill kills the node's browser at once; Stop still cleans up.
func (sn *Node) Kill() { sn.node.Kill() }

// Start starts a node as o says, its users and its state file, as
// framebus serve does; ctx interrupts the start.
func Start(ctx context.Context, o Options) (*Node, error) {
	nodeOpts, path, log := o.Node, o.StatePath, o.Node.Logger
	busOpts := nodeOpts.Bus
	// A node started again with its state brings its tabs back, under the
	// name it had unless given one.
	tabsFile := restoreFile(nodeOpts.History.Storage, path, log)
	if nodeOpts.Name == "" {
		nodeOpts.Name = restoredName(tabsFile)
	}
	// The embedded bus lets users in with a password only: the node's own
	// agent and admin, written beside the state file, and the configured.
	var local *localUsers
	asked := busOpts // the listeners as configured, before the last start's were taken again
	if busOpts.URL == "" {
		if busOpts.Cluster != nil || busOpts.Leaf != nil {
			// Every member of a cluster, every leaf of a hub, is a
			// server of its own name: the node's.
			nodeOpts.Name = cmp.Or(nodeOpts.Name, actors.DefaultNodeName())
			busOpts.Name = nodeOpts.Name
		}
		dir := filepath.Dir(path)
		if err := PrivateDir(dir); err != nil {
			log.Warn().Err(err).Msg("the credentials' directory")
		}
		configured, err := configuredUsers(o.Users, dir)
		if err != nil {
			return nil, err
		}
		var own []bus.User
		if local, own, err = makeLocalUsers(dir, localUserSuffix(busOpts.Cluster, nodeOpts.Name), o.RotateCredentials); err != nil {
			return nil, protocol.Errorf(protocol.CodeInternal, "credentials: %v", err)
		}
		busOpts.Users = append(own, configured...)
		// Where the last start listened, when it is free: clients that
		// knew the node find its bus there again.
		asked = busOpts
		busOpts.Port = local.reusePort(busOpts.Host, busOpts.Port, local.lastURL)
		busOpts.WebSocket = local.reuseWebSocket(busOpts.WebSocket)
		if local.allKept() {
			log.Info().Str("dir", dir).Msg("the node's own credentials are those of its last start (serve --rotate-credentials makes new ones)")
		}
	}
	shared := false // the state file's node runs: the files may be its
	if st, err := ReadState(path); err == nil && st.PID != os.Getpid() && ProcessAlive(st.PID) {
		shared = true
		log.Warn().Int("pid", st.PID).Str("state", path).
			Msg("another framebus node is registered in the state file; this one replaces it as the default")
	}

	// Find the browser before starting anything: the commonest failure on
	// a fresh machine, answered with how to install it.
	if nodeOpts.Launch.Binary == "" {
		chromium, err := cdpdriver.FindChromium()
		if err != nil {
			return nil, StartError(ctx, err)
		}
		nodeOpts.Launch.Binary = chromium
	}
	account, profiles := o.BrowserAccount, nodeOpts.ProfileDir
	if err := passableStateDir(filepath.Dir(path), account, profiles, nodeOpts.Launch.UserDataDir); err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "the state file's directory: %v", err)
	}
	if err := makeProfilesDir(profiles, account); err != nil {
		return nil, usagef("browser.profileDir: %v", err)
	}
	if c := busOpts.Cluster; c != nil {
		// As many members as the cluster has keep the history and the
		// node registry, up to three.
		nodeOpts.History.Replicas = min(3, max(1, len(c.Routes)))
	}
	if nodeOpts.History.Dir != "" {
		// The history is the node's alone, like its state file.
		if err := os.MkdirAll(nodeOpts.History.Dir, 0o700); err != nil {
			return nil, protocol.Errorf(protocol.CodeInternal, "history.dir: %v", err)
		}
	}
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	nodeOpts.Bus, nodeOpts.TabsFile = busOpts, tabsFile
	node, err := actors.StartNode(startCtx, nodeOpts)
	if errors.Is(err, bus.ErrServerStart) && (busOpts.Port != asked.Port || busOpts.WebSocket != asked.WebSocket) {
		// The last start's port, free a moment ago, was taken since
		// (another process, maybe another user's): a new one, as when
		// it was taken before.
		log.Warn().Err(err).Msg("the last start's port was taken meanwhile: listening on a new one (clients need the new URL in the state and credentials files)")
		nodeOpts.Bus.Port, nodeOpts.Bus.WebSocket = asked.Port, asked.WebSocket
		node, err = actors.StartNode(startCtx, nodeOpts)
	}
	cancel()
	if err != nil {
		return nil, StartError(ctx, err)
	}
	if local != nil && busOpts.Cluster != nil {
		// The name is this node's now (the registry's compare-and-set):
		// its own users are too, over any a dead node of this name left
		// in the cluster, which would keep that one's passwords. Those
		// its last start left, of the passwords it kept, stay as they
		// are: their clients at other members keep their connections.
		if err := node.Bus().ClaimUsers(local.passwords()); err != nil {
			node.Close()
			return nil, StartError(ctx, err)
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
		_, err = AwaitTabs(ctx, nc, node.Subjects(), node.Name())
		nc.Close()
	}
	if err != nil {
		node.Close()
		return nil, StartError(ctx, err)
	}
	if local != nil {
		if err := serveUsers(node, local, busOpts.Users, log); err != nil {
			node.Close()
			return nil, err
		}
	}
	st := State{OK: true, Node: node.Name(), Bus: node.Bus().ClientURL(), WebSocket: node.Bus().WebSocketURL(), Prefix: node.Subjects().Prefix, PID: os.Getpid(), Tabs: node.Tabs()}
	if err := WriteState(path, st); err != nil {
		node.Close()
		local.remove()
		return nil, protocol.Errorf(protocol.CodeInternal, "write state file %s: %v", path, err)
	}
	return &Node{node: node, path: path, state: st, log: log}, nil
}

// Stop closes the node (Kill meanwhile kills its browser at once) and
// removes the state file.
func (sn *Node) Stop() error {
	log, node := sn.log, sn.node
	start := time.Now()
	closeErr := node.Close()
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
func serveUsers(node *actors.Node, local *localUsers, users []bus.User, log zerolog.Logger) error {
	if err := local.write(node.Bus(), node.Subjects().Prefix); err != nil {
		return protocol.Errorf(protocol.CodeInternal, "write credentials in %s: %v", local.dir, err)
	}
	// Not the bus's users now: in a cluster those are every node's, and
	// the own users of a node that stopped for good are creds remove's.
	keep := []string{}
	for _, u := range users {
		keep = append(keep, u.Name)
	}
	added, _ := ReadUsersFile(filepath.Join(local.dir, UsersFile)) // read by configuredUsers already
	keep = slices.DeleteFunc(keep, func(name string) bool {
		return slices.ContainsFunc(added, func(u bus.User) bool { return u.Name == name })
	})
	nc, err := node.Bus().Connect("users")
	if err == nil {
		ua := &userAdmin{bus: node.Bus(), path: filepath.Join(local.dir, UsersFile), keep: keep, mine: map[string]bool{}, liveNodes: node.Peers, log: log}
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

// StartError gives a failed node start its code: a missing browser says
// how to install one, a bus problem is unavailable.
func StartError(ctx context.Context, err error) error {
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

// AwaitTabs asks <prefix>.tabs until a node (the one called node, when
// not "") answers with at least one tab, and returns that answer. A node's subscriptions reach the server
// asynchronously; the tabs subscription is made after the tabs' plan
// subscriptions on the same connection, and the server handles a
// connection's subscriptions in order, so once the node answers, its tabs
// take plans too.
func AwaitTabs(ctx context.Context, nc *nats.Conn, subj protocol.Subjects, node string) (protocol.TabList, error) {
	const poll = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, tabsTimeout)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		subject := subj.Tabs()
		if node != "" {
			// Its own pages: others on the bus answer tabs too.
			subject = subj.NodeProfile(node, protocol.DefaultProfile, protocol.OpPages)
		}
		msg, err := nc.RequestWithContext(rctx, subject, nil)
		rcancel()
		if err == nil {
			var list protocol.TabList
			if err := json.Unmarshal(msg.Data, &list); err != nil {
				return protocol.TabList{}, protocol.Errorf(protocol.CodeInternal, "tabs reply: invalid JSON: %v", err)
			}
			if len(list.Tabs) > 0 {
				return list, nil
			}
		}
		select {
		case <-ctx.Done():
			return protocol.TabList{}, protocol.Errorf(protocol.CodeUnavailable, "the node does not answer on %s: %v", subj.Tabs(), err)
		case <-time.After(poll):
		}
	}
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
