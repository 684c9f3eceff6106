package actors

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// The browser lifecycle on the bus (ADR-006): status, launch, close,
// pages (list_pages), newtab, closetab and connect for each profile, on
// <prefix>.node.<node>.browser.<profile>.<op> (this node's profile) and
// <prefix>.browser.<profile>.<op> (the profile on any node that has it:
// status and pages are answered by each such node, the other operations
// by one of them, a queue group). Each request is answered on its
// subscription's own goroutine, never behind a tab's actor, so a stuck tab
// cannot block status or close. Launch and close are serialised by
// lifecycle.mu; while the browser is closed, a plan sent to any of the
// profile's tabs is answered browser_not_running with how to start it.

// lifecycleQueue is the queue group of the operations on a profile's
// shared subjects that one node carries out (launch, close, newtab...):
// one of the nodes that have the profile takes each.
const lifecycleQueue = "framebus-lifecycle"

// newTabsAtOnce is how many newtab requests a profile carries out at
// once; more wait for one of them to end.
const newTabsAtOnce = 8

// concurrently runs h on a goroutine of its own, at most cap(slots) at
// once: a subscription's handler runs one request at a time otherwise.
func concurrently(slots chan struct{}, h micro.HandlerFunc) micro.HandlerFunc {
	return func(m micro.Request) {
		slots <- struct{}{}
		go func() {
			defer func() { <-slots }()
			h(m)
		}()
	}
}

// lifecycleTimeout bounds launching the browser or opening a tab on request.
const lifecycleTimeout = time.Minute

type lifecycle struct {
	mu  sync.Mutex    // serialises launch and close
	svc micro.Service // the profile's lifecycle endpoints; nil once stopped
	// notRunning answers the plans sent to the profile's tabs while its
	// browser is closed: one subscription per tab, so plans to other tabs
	// never pass through them.
	notRunning []*nats.Subscription
}

// serveLifecycle subscribes to the profile's lifecycle requests.
func (p *Profile) serveLifecycle() error {
	nc := p.node.nc
	// A new tab waits for its page (up to the action timeout): the ones
	// asked for meanwhile do not wait behind it.
	newTabs := make(chan struct{}, newTabsAtOnce)
	var endpoints []endpoint
	for _, op := range []struct {
		name   string
		h      micro.HandlerFunc // on this node's subject
		shared micro.HandlerFunc // on the shared subject; nil: h
		queue  string            // on the shared subject
	}{
		{protocol.OpStatus, p.answerStatus, nil, ""},
		{protocol.OpLaunch, p.answerLaunch, func(m micro.Request) { p.place(m, protocol.OpLaunch, p.launchHere) }, lifecycleQueue},
		{protocol.OpConnect, p.answerConnect, nil, lifecycleQueue},
		{protocol.OpClose, p.answerClose, p.closeWhereRunning, lifecycleQueue},
		{protocol.OpPages, p.answerPages, nil, ""},
		{protocol.OpNewTab, concurrently(newTabs, p.answerNewTab), concurrently(newTabs, func(m micro.Request) { p.place(m, protocol.OpNewTab, p.newTab) }), lifecycleQueue},
		{protocol.OpCloseTab, p.answerCloseTab, p.closeTabWhereItIs, lifecycleQueue},
	} {
		shared := op.shared
		if shared == nil {
			shared = op.h
		}
		endpoints = append(endpoints,
			endpoint{name: op.name, subject: p.node.subj.Profile(p.name, op.name), handle: shared, queue: op.queue},
			endpoint{name: "node-" + op.name, subject: p.node.subj.NodeProfile(p.node.name, p.name, op.name), handle: op.h})
	}
	svc, err := addService(nc, "framebus profile", map[string]string{"profile": p.name, "node": p.node.name}, endpoints)
	if err != nil {
		return err
	}
	p.life.mu.Lock()
	p.life.svc = svc
	p.life.mu.Unlock()
	return nc.FlushTimeout(startFlushTimeout)
}

func (p *Profile) stopLifecycle() {
	p.life.mu.Lock()
	defer p.life.mu.Unlock()
	if p.life.svc != nil {
		_ = p.life.svc.Stop()
	}
	p.life.svc = nil
	p.answerPlansAgain()
}

// answerPlansAgain drops the browser_not_running answers; life.mu is held.
func (p *Profile) answerPlansAgain() {
	for _, sub := range p.life.notRunning {
		_ = sub.Unsubscribe()
	}
	p.life.notRunning = nil
}

// Launch starts a managed profile's browser if it is not running; an
// attach profile cannot be launched (not_launchable).
func (p *Profile) Launch(ctx context.Context) error {
	if !p.Managed() {
		return p.notLaunchable()
	}
	return p.ensureRunning(ctx)
}

// Connect connects an attach profile to its browser if it is not
// connected; a managed profile is launched instead.
func (p *Profile) Connect(ctx context.Context) error {
	if p.Managed() {
		return protocol.Errorf(protocol.CodeBadRequest, "profile %q is managed: framebus launches its browser; use launch", p.name)
	}
	if p.node.opts.Whitelist != nil {
		return p.unprotectable()
	}
	return p.ensureRunning(ctx)
}

// unprotectable is Connect's error on an attach profile when a whitelist
// is set. Fetch interception covers HTTP there, but WebRTC (UDP to any
// address) and WebSockets pass no Fetch hook, and only launch flags (the
// egress proxy, the WebRTC IP handling policy) close them: a browser
// framebus did not start would be silently half protected, so it is refused.
func (p *Profile) unprotectable() error {
	return protocol.Errorf(protocol.CodePermissionDenied,
		"cannot connect profile %q while a whitelist is set: its browser (%s) was not started by framebus, so WebRTC and WebSockets there would go around the whitelist; use a managed profile, or serve without --whitelist",
		p.name, p.attach)
}

func (p *Profile) ensureRunning(ctx context.Context) error {
	p.life.mu.Lock()
	defer p.life.mu.Unlock()
	if p.Browser() != nil {
		return nil
	}
	if err := p.start(ctx); err != nil {
		return err
	}
	if p.life.notRunning != nil {
		p.answerPlansAgain()
		_ = p.node.nc.FlushTimeout(startFlushTimeout) // gone from the server before launch answers
	}
	return nil
}

// Close stops the profile's browser (a managed one saves its state as it
// exits cleanly; an attached one is only disconnected) and retires its
// tabs; the node keeps running, and plans to those tabs are answered
// browser_not_running until the profile starts again.
func (p *Profile) Close() error {
	p.life.mu.Lock()
	defer p.life.mu.Unlock()
	if p.life.notRunning == nil && p.life.svc != nil {
		p.mu.Lock()
		closed := slices.Collect(maps.Keys(p.known))
		p.mu.Unlock()
		answer := func(m *nats.Msg) { respondMsg(m, protocol.NewErrorReply(p.notRunning()), p.log) }
		for _, id := range closed {
			if sub, err := p.node.nc.Subscribe(p.node.subj.TabPlan(id), answer); err == nil {
				p.life.notRunning = append(p.life.notRunning, sub)
			}
		}
		_ = p.node.nc.FlushTimeout(startFlushTimeout)
	}
	return p.closeBrowser()
}

func (p *Profile) answerStatus(m micro.Request) { respond(m, p.statusReply(), p.log) }

func (p *Profile) statusReply() protocol.StatusReply {
	return protocol.StatusReply{OK: true, Node: p.node.name, Profiles: []protocol.ProfileStatus{p.Status()}}
}

func (p *Profile) answerLaunch(m micro.Request) { respond(m, p.launchHere(m.Data()), p.log) }

// launchHere starts the profile's browser here and is the reply: its status,
// or node_full when its first tab would be one more than MaxTabs.
func (p *Profile) launchHere(_ []byte) any {
	if p.Managed() && p.Browser() == nil {
		release, err := p.node.reserveTab("launch profile " + p.name)
		if err != nil {
			return protocol.NewErrorReply(err)
		}
		defer p.node.publishEntry()
		defer release()
	}
	return p.startReply(p.Launch)
}

func (p *Profile) answerConnect(m micro.Request) { p.answerStart(m, p.Connect) }

func (p *Profile) answerStart(m micro.Request, start func(context.Context) error) {
	respond(m, p.startReply(start), p.log)
}

// startReply starts the browser by start, and is the reply: the status or
// the error.
func (p *Profile) startReply(start func(context.Context) error) any {
	ctx, cancel := context.WithTimeout(context.Background(), lifecycleTimeout)
	defer cancel()
	if err := start(ctx); err != nil {
		return protocol.NewErrorReply(startError(err))
	}
	return p.statusReply()
}

// startError gives a failed launch or connect its code.
func startError(err error) error {
	var perr *protocol.Error
	switch {
	case errors.As(err, &perr):
		return err
	case errors.Is(err, cdpdriver.ErrProfileInUse):
		return protocol.Errorf(protocol.CodeProfileInUse, "launch: %v", err)
	case errors.Is(err, cdpdriver.ErrUnsafeProfile):
		return protocol.Errorf(protocol.CodePermissionDenied, "launch: %v", err)
	}
	return protocol.Errorf(protocol.CodeBrowserNotRunning, "start: %v", err)
}

func (p *Profile) answerClose(m micro.Request) {
	if err := p.Close(); err != nil {
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeInternal, "%v", err)), p.log)
		return
	}
	p.answerStatus(m)
}

func (p *Profile) answerPages(m micro.Request) {
	respond(m, protocol.TabList{OK: true, Node: p.node.name, Tabs: p.Tabs()}, p.log)
}

func (p *Profile) answerNewTab(m micro.Request) { respond(m, p.newTab(m.Data()), p.log) }

// newTab opens a tab here and is the reply: node_full when the node has
// MaxTabs already.
func (p *Profile) newTab(data []byte) any {
	var req protocol.NewTabRequest
	if len(data) > 0 {
		if err := protocol.DecodeRequest(data, "newtab", &req); err != nil {
			return protocol.NewErrorReply(err)
		}
	}
	if req.URL != "" {
		// Read as navigate reads it, so what Chromium cannot open is a
		// bad request now, not a tab that never answers.
		target, err := cdpdriver.ResolveURL(req.URL, "about:blank")
		if err != nil {
			return protocol.NewErrorReply(protocol.Errorf(protocol.CodeBadRequest, "newtab: url: %v", err))
		}
		if err := p.node.allow(target); err != nil {
			return protocol.NewErrorReply(protocol.Errorf(protocol.CodePermissionDenied, "%v", err))
		}
		req.URL = target
	}
	release, err := p.node.reserveTab("newtab in profile " + p.name)
	if err != nil {
		return protocol.NewErrorReply(err)
	}
	defer p.node.publishEntry() // after release: the entry counts the tab, once
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), lifecycleTimeout)
	defer cancel()
	tab, err := p.OpenTab(ctx, req.URL)
	var unloaded *FirstPageError
	switch {
	case errors.As(err, &unloaded):
		return protocol.TabReply{Tab: tab.Info(), Error: err.Error(), Code: protocol.CodeOf(err)}
	case err != nil:
		return protocol.NewErrorReply(err)
	}
	return protocol.TabReply{OK: true, Tab: tab.Info()}
}

func (p *Profile) answerCloseTab(m micro.Request) { respond(m, p.closeTab(m.Data()), p.log) }

// closeTab closes a tab of this node's and is the reply.
func (p *Profile) closeTab(data []byte) any {
	var req protocol.CloseTabRequest
	if err := protocol.DecodeRequest(data, "closetab", &req); err != nil {
		return protocol.NewErrorReply(err)
	}
	if req.Tab == "" {
		return protocol.NewErrorReply(protocol.Errorf(protocol.CodeBadRequest, `closetab: want {"tab": "ID"}`))
	}
	ctx, cancel := context.WithTimeout(context.Background(), lifecycleTimeout)
	defer cancel()
	info, err := p.CloseTab(ctx, req.Tab)
	if err != nil {
		return protocol.NewErrorReply(err)
	}
	p.node.publishEntry()
	return protocol.TabReply{OK: true, Tab: info}
}
