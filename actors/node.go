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
	browser *Browser
	log     zerolog.Logger

	mu    sync.Mutex // guards tabs
	tabs  []*Tab
	pages map[string]*cdpdriver.Page

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
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	opts.Bus.Logger = opts.Logger.With().Str("component", "bus").Logger()
	if n.bus, err = bus.Start(opts.Bus); err != nil {
		return nil, err
	}
	if n.nc, err = n.bus.Connect("framebus-node"); err != nil {
		return nil, err
	}
	if n.browser, err = StartBrowser(ctx, opts.Launch, opts.Logger.With().Str("component", "browser").Logger()); err != nil {
		return nil, err
	}
	if opts.Whitelist != nil {
		if err = n.browser.FilterRequests(ctx, opts.Whitelist.Check); err != nil {
			return nil, err
		}
	}
	opened, err := n.browser.WatchOpened(ctx)
	if err != nil {
		return nil, err
	}
	go n.adoptOpened(opened)
	if _, err = n.OpenTab(ctx, opts.StartURL); err != nil {
		return nil, err
	}
	if n.listSub, err = n.nc.Subscribe(subj.Tabs(), n.answerTabs); err != nil {
		return nil, err
	}
	return n, nil
}

// OpenTab opens a new tab at url and starts its actor.
func (n *Node) OpenTab(ctx context.Context, url string) (*Tab, error) {
	if url == "" {
		url = "about:blank"
	}
	page, err := n.browser.OpenPage(ctx, url)
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
		page, err := n.browser.AttachPage(ctx, o.TargetID)
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
		_ = n.browser.ClosePage(ctx, page)
		return nil, err
	}
	n.mu.Lock()
	n.tabs = append(n.tabs, tab)
	n.pages[tab.ID()] = page
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

// Browser is the node's browser.
func (n *Node) Browser() *Browser { return n.browser }

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
		n.mu.Lock()
		tabs, pages := n.tabs, n.pages
		n.tabs, n.pages = nil, map[string]*cdpdriver.Page{}
		n.mu.Unlock()
		for _, t := range tabs {
			t.Stop()
		}
		for _, p := range pages {
			p.Close()
		}
		if n.browser != nil {
			if err := n.browser.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close browser: %w", err))
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
