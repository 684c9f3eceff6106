package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/protocol"
)

// NodeOptions configure a node: its bus, its browser and its tabs.
type NodeOptions struct {
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
	// for every request of every tab; nil allows every http(s) URL.
	Whitelist *whitelist.Whitelist
	// StartURL is where the first tab opens; about:blank when "".
	StartURL string
	Logger   zerolog.Logger
}

// Node wires a bus, a browser and its tab actors together, and shuts them
// all down in order.
type Node struct {
	opts    NodeOptions
	subj    protocol.Subjects
	bus     *bus.Bus
	nc      *nats.Conn
	browser *Browser // nil while closed
	log     zerolog.Logger

	mu    sync.Mutex // guards browser, tabs, pages, known
	tabs  []*Tab
	pages map[string]*cdpdriver.Page
	// known are the ids of every tab this node has had: a closed
	// browser's tabs answer browser_not_running, other nodes' tabs are
	// left to their nodes.
	known map[string]bool
	life  lifecycle

	listSub   *nats.Subscription
	closeOnce sync.Once
	closeErr  error
}

// StartNode starts the bus, launches the browser and opens one tab.
func StartNode(ctx context.Context, opts NodeOptions) (n *Node, err error) {
	subj, err := protocol.NewSubjects(opts.Prefix)
	if err != nil {
		return nil, err
	}
	n = &Node{opts: opts, subj: subj, log: opts.Logger, pages: map[string]*cdpdriver.Page{}}
	started := n // the returns below set n to nil
	defer func() {
		if err != nil {
			started.Close()
		}
	}()
	opts.Bus.Logger = opts.Logger.With().Str("component", "bus").Logger()
	if n.bus, err = bus.Start(opts.Bus); err != nil {
		return nil, err
	}
	if n.nc, err = n.bus.Connect("framebus-node"); err != nil {
		return nil, err
	}
	if err = n.launchBrowser(ctx); err != nil {
		return nil, err
	}
	if n.listSub, err = n.nc.Subscribe(subj.Tabs(), n.answerTabs); err != nil {
		return nil, err
	}
	if err = n.serveLifecycle(); err != nil {
		return nil, err
	}
	return n, nil
}

// launchBrowser starts Chromium with the whitelist's filter, adopts the
// tabs its pages open, and opens the first tab.
func (n *Node) launchBrowser(ctx context.Context) error {
	b, err := StartBrowser(ctx, n.opts.Launch, n.opts.Logger.With().Str("component", "browser").Logger())
	if err != nil {
		return err
	}
	if n.opts.Whitelist != nil {
		if err := b.FilterRequests(ctx, n.opts.Whitelist.Check); err != nil {
			b.Close()
			return err
		}
	}
	opened, err := b.WatchOpened(ctx)
	if err != nil {
		b.Close()
		return err
	}
	n.mu.Lock()
	n.browser = b
	n.mu.Unlock()
	go n.adoptOpened(opened)
	go n.watchExit(b)
	if _, err = n.OpenTab(ctx, n.opts.StartURL); err != nil {
		n.closeBrowser()
		return err
	}
	return nil
}

// watchExit notices a browser that exits on its own (a crash, a kill)
// and leaves the node without one, as CloseBrowser does: status tells,
// launch starts it again.
func (n *Node) watchExit(b *Browser) {
	<-b.Process().Done()
	if n.Browser() == b {
		n.log.Error().Msg("chromium exited on its own; the node runs on without a browser until launch")
		_ = n.CloseBrowser()
	}
}

// closeBrowser retires every tab and stops Chromium. Pages are closed
// before their actors are stopped, so an action in flight ends at once
// (its connection is gone) instead of running out its deadline.
func (n *Node) closeBrowser() error {
	n.mu.Lock()
	b, tabs, pages := n.browser, n.tabs, n.pages
	n.browser, n.tabs, n.pages = nil, nil, map[string]*cdpdriver.Page{}
	n.mu.Unlock()
	for _, p := range pages {
		p.Close()
	}
	for _, t := range tabs {
		t.Stop()
	}
	if b == nil {
		return nil
	}
	if err := b.Close(); err != nil {
		return fmt.Errorf("close browser: %w", err)
	}
	return nil
}

// OpenTab opens a new tab at url and starts its actor.
func (n *Node) OpenTab(ctx context.Context, url string) (*Tab, error) {
	if url == "" {
		url = "about:blank"
	}
	b := n.Browser()
	if b == nil {
		return nil, n.notRunning()
	}
	page, err := b.OpenPage(ctx, url)
	if err != nil {
		return nil, err
	}
	return n.startTab(ctx, page)
}

// attachTimeout bounds adopting a tab a page opened.
const attachTimeout = 30 * time.Second

// adoptOpened gives every tab a page opens (window.open, target=_blank)
// an actor and a frame stream of its own, and announces it on the
// opener's event.opened subject.
func (n *Node) adoptOpened(opened <-chan cdpdriver.PageOpened) {
	for o := range opened {
		ctx, cancel := context.WithTimeout(context.Background(), attachTimeout)
		b := n.Browser()
		if b == nil {
			cancel()
			return
		}
		page, err := b.AttachPage(ctx, o.TargetID)
		var tab *Tab
		if err == nil {
			tab, err = n.startTab(ctx, page)
		}
		cancel()
		if err != nil {
			n.log.Warn().Err(err).Str("target", o.TargetID).Msg("adopt a tab a page opened")
			continue
		}
		data, _ := json.Marshal(openedEvent{Tab: o.OpenerID, Opened: tab.Info()})
		_ = n.nc.Publish(n.subj.TabEvents(o.OpenerID, "opened"), data)
	}
}

// openedEvent is the message on <prefix>.tab.<opener>.event.opened.
type openedEvent struct {
	Tab    string           `json:"tab"`    // the opener
	Opened protocol.TabInfo `json:"opened"` // the new tab
}

// startTab starts the actor of a connected page and registers it.
func (n *Node) startTab(ctx context.Context, page *cdpdriver.Page) (*Tab, error) {
	tab, err := StartTab(ctx, TabOptions{
		ID:            page.TargetID(),
		Page:          page,
		Conn:          n.nc,
		Subjects:      n.subj,
		Frames:        n.opts.Frames,
		SettleTimeout: n.opts.SettleTimeout,
		ActionTimeout: n.opts.ActionTimeout,
		DialogTimeout: n.opts.DialogTimeout,
		DialogDefault: n.opts.DialogDefault,
		Allow:         n.allow,
		Logger:        n.log,
	})
	if err != nil {
		if b := n.Browser(); b != nil {
			_ = b.ClosePage(ctx, page)
		}
		return nil, err
	}
	n.mu.Lock()
	n.tabs = append(n.tabs, tab)
	n.pages[tab.ID()] = page
	if n.known == nil {
		n.known = map[string]bool{}
	}
	n.known[tab.ID()] = true
	n.mu.Unlock()
	go n.retireWhenDone(tab)
	return tab, nil
}

// retireWhenDone drops a tab from the node once its actor stopped (its
// page went away), so it is no longer listed.
func (n *Node) retireWhenDone(tab *Tab) {
	<-tab.Done()
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, t := range n.tabs {
		if t == tab {
			n.tabs = append(n.tabs[:i], n.tabs[i+1:]...)
			break
		}
	}
	if p, ok := n.pages[tab.ID()]; ok {
		p.Close()
		delete(n.pages, tab.ID())
	}
}

// Tabs lists the node's tabs.
func (n *Node) Tabs() []protocol.TabInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []protocol.TabInfo
	for _, t := range n.tabs {
		out = append(out, t.Info())
	}
	return out
}

// Tab returns the tab with id, or nil.
func (n *Node) Tab(id string) *Tab {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range n.tabs {
		if t.ID() == id {
			return t
		}
	}
	return nil
}

// Bus is the node's bus, to connect more clients to it.
func (n *Node) Bus() *bus.Bus { return n.bus }

// Subjects is the node's subject scheme.
func (n *Node) Subjects() protocol.Subjects { return n.subj }

// Browser is the node's browser, nil while it is closed.
func (n *Node) Browser() *Browser {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.browser
}

func (n *Node) answerTabs(m *nats.Msg) {
	respond(m, protocol.TabList{OK: true, Tabs: n.Tabs()}, n.log)
}

// Close stops the tab actors, Chromium (with its temporary profile) and the
// bus, in that order. Safe to call more than once.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if n.listSub != nil {
			_ = n.listSub.Unsubscribe()
		}
		n.stopLifecycle()
		if err := n.closeBrowser(); err != nil {
			errs = append(errs, err)
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
