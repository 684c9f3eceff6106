package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// ProfileOptions declare a profile besides the node's default one.
type ProfileOptions struct {
	// Name is the profile's name (protocol.ValidProfileName); per-domain
	// session profiles are named by their domain.
	Name string
	// Attach, when set, makes this an attach profile: the DevTools URL of
	// a browser framebus does not start (http://HOST:PORT or the browser
	// websocket). Connecting adopts its open tabs; closing only
	// disconnects. Empty: a managed profile, launched in
	// NodeOptions.ProfileDir/<Name> (a temporary directory when that is "").
	Attach string
	// Viewport, when set, is what the profile's tabs are laid out for
	// instead of the node's (NodeOptions.Viewport); an attach profile's
	// tabs too, which otherwise keep their window's size. The zero
	// Viewport: no emulation.
	Viewport *protocol.Viewport
}

// Profile is one browser profile of a node: the browser running it (or
// none while closed), its tabs and their actors, and its lifecycle on the
// bus. A managed profile launches Chromium on its own directory; an attach
// profile connects to a browser someone else runs.
type Profile struct {
	node   *Node
	name   string
	attach string                  // the DevTools URL of an attach profile
	launch cdpdriver.LaunchOptions // of a managed profile
	log    zerolog.Logger

	mu      sync.Mutex // guards the fields below but life (perDomain: Node.sessions.mu)
	browser *Browser   // nil while closed
	tabs    []*Tab
	pages   map[string]*cdpdriver.Page
	// known are the ids of every tab this profile has had: a closed
	// browser's tabs answer browser_not_running, other profiles' and
	// nodes' tabs are left to them.
	known map[string]bool
	// claimed are the tabs that have an actor or one on the way, so a tab
	// the node opens and the watcher sees appear gets one actor, not two.
	claimed map[string]bool
	session string // the session running on this profile, if any
	// startURL, when set, is where a launch opens the first tab instead
	// of the node's StartURL (a session's URL).
	startURL string
	// perDomain: a session's profile, named by its domain.
	perDomain bool
	// ownViewport replaces the node's viewport for this profile's tabs.
	ownViewport *protocol.Viewport
	life        lifecycle
}

func newProfile(n *Node, po ProfileOptions, launch cdpdriver.LaunchOptions) *Profile {
	return &Profile{
		node: n, name: po.Name, attach: po.Attach, launch: launch, ownViewport: copyOf(po.Viewport),
		log:     n.log.With().Str("profile", po.Name).Logger(),
		pages:   map[string]*cdpdriver.Page{},
		known:   map[string]bool{},
		claimed: map[string]bool{},
	}
}

// claim reserves the actor of a tab; false when it is taken already.
func (p *Profile) claim(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.claimed[id] {
		return false
	}
	p.claimed[id] = true
	return true
}

func (p *Profile) unclaim(id string) {
	p.mu.Lock()
	delete(p.claimed, id)
	p.mu.Unlock()
}

// adoptPoll is how often OpenTab looks for the actor the watcher is
// giving a tab it opened.
const adoptPoll = 5 * time.Millisecond

// awaitTab waits for the actor of a tab someone else claimed.
func (p *Profile) awaitTab(ctx context.Context, id string) (*Tab, error) {
	for {
		if t := p.Tab(id); t != nil {
			return t, nil
		}
		p.mu.Lock()
		pending := p.claimed[id]
		p.mu.Unlock()
		if !pending {
			return nil, fmt.Errorf("open tab %s: its actor failed to start (see the log)", id)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("open tab %s: %w", id, ctx.Err())
		case <-time.After(adoptPoll):
		}
	}
}

// Name is the profile's name.
func (p *Profile) Name() string { return p.name }

// Managed reports whether the node launches this profile's browser.
func (p *Profile) Managed() bool { return p.attach == "" }

// Browser is the profile's browser, nil while it is closed.
func (p *Profile) Browser() *Browser {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.browser
}

// start launches (managed) or connects (attach) the browser with the
// whitelist's filter, adopts the tabs its pages open, and opens the first
// tab; an attached browser's open tabs are adopted instead.
func (p *Profile) start(ctx context.Context) error {
	blog := p.log.With().Str("component", "browser").Logger()
	var b *Browser
	var err error
	if p.Managed() {
		launch := p.launch
		if vp := p.viewport(); vp.Width > 0 {
			launch.WindowWidth, launch.WindowHeight = vp.Width, vp.Height
		}
		b, err = StartBrowser(ctx, launch, blog)
	} else {
		b, err = AttachBrowser(ctx, p.attach, blog)
	}
	if err != nil {
		return err
	}
	if eg := p.node.egress; eg != nil && b.Process() != nil {
		eg.Allow(browserUID(b.Process())) // the proxy takes its account's connections only
	}
	if p.node.opts.Whitelist != nil {
		if err := b.FilterRequests(ctx, p.node.checkRequest); err != nil {
			b.Close()
			return err
		}
	}
	// Every tab that appears in a browser someone else runs gets an actor
	// (a person's new tab); in ours, the tabs its pages open.
	opened, err := b.WatchOpened(ctx, !p.Managed())
	if err != nil {
		b.Close()
		return err
	}
	p.mu.Lock()
	p.browser = b
	p.mu.Unlock()
	go p.adoptOpened(opened)
	go p.watchGone(b)
	if p.Managed() {
		// The tabs it had when the node last stopped come back, or it
		// opens its first tab.
		if p.restoreTabs(ctx) == 0 {
			_, err = p.OpenTab(ctx, p.firstURL())
		}
	} else {
		err = p.adoptExisting(ctx)
	}
	var unloaded *FirstPageError
	if errors.As(err, &unloaded) {
		// The browser runs, and its tab shows why the page did not load.
		p.log.Warn().Err(err).Msg("the first tab's page")
		err = nil
	}
	if err != nil {
		p.closeBrowser()
		return err
	}
	return nil
}

// setStartURL sets where the next launch opens its first tab ("": the
// node's StartURL).
func (p *Profile) setStartURL(url string) {
	p.mu.Lock()
	p.startURL = url
	p.mu.Unlock()
}

func (p *Profile) firstURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.startURL != "" {
		return p.startURL
	}
	return p.node.opts.StartURL
}

// adoptExisting gives the tabs already open in an attached browser their
// actors, or opens one when it has none.
func (p *Profile) adoptExisting(ctx context.Context) error {
	b := p.Browser()
	pages, err := b.Pages(ctx)
	if err != nil {
		return err
	}
	for _, t := range pages {
		if !p.claim(t.ID) {
			continue
		}
		if err := p.adopt(ctx, b, t.ID); err != nil {
			p.log.Warn().Err(err).Str("target", t.ID).Msg("adopt an open tab")
		}
	}
	if len(p.Tabs()) == 0 {
		_, err = p.OpenTab(ctx, p.node.opts.StartURL)
	}
	return err
}

// watchGone notices a browser that goes away on its own (a crash, a kill,
// a lost connection) and leaves the profile without one, as close does:
// status tells, launch (or connect) starts it again.
func (p *Profile) watchGone(b *Browser) {
	<-b.Gone()
	if p.Browser() == b {
		p.log.Error().Msg("the browser went away on its own; the profile stays closed until launch or connect")
		_ = p.Close()
	}
}

// closeBrowser retires every tab and stops (or disconnects from) the
// browser. Pages are closed before their actors are stopped, so an action
// in flight ends at once (its connection is gone) instead of running out
// its deadline.
func (p *Profile) closeBrowser() error {
	p.mu.Lock()
	b, tabs, pages := p.browser, p.tabs, p.pages
	p.browser, p.tabs, p.pages, p.claimed = nil, nil, map[string]*cdpdriver.Page{}, map[string]bool{}
	p.mu.Unlock()
	for _, pg := range pages {
		pg.Close()
	}
	for _, t := range tabs {
		t.Stop()
	}
	if b == nil {
		return nil
	}
	if err := b.Close(); err != nil {
		return fmt.Errorf("close browser of profile %s: %w", p.name, err)
	}
	return nil
}

// OpenTab opens a new tab at url and starts its actor.
func (p *Profile) OpenTab(ctx context.Context, url string) (*Tab, error) {
	b := p.Browser()
	if b == nil {
		return nil, p.notRunning()
	}
	// Opened blank, and then loaded by the tab itself, as an agent's
	// navigate: so its frames know the page's HTTP status, and a page that
	// cannot be loaded fails as a navigate does.
	id, err := b.NewTarget(ctx, "about:blank")
	if err != nil {
		return nil, err
	}
	if !p.claim(id) { // the watcher saw it appear first
		tab, err := p.awaitTab(ctx, id)
		if err != nil {
			return nil, err
		}
		return tab, p.loadFirstPage(ctx, tab, url)
	}
	page, err := b.AttachPage(ctx, id)
	if err != nil {
		p.unclaim(id)
		_ = b.CloseTarget(ctx, id)
		return nil, err
	}
	tab, err := p.startTab(ctx, page)
	if err != nil {
		p.unclaim(id)
		return nil, err
	}
	return tab, p.loadFirstPage(ctx, tab, url)
}

// loadFirstPage has a tab just opened navigate to url (nothing for "" or
// about:blank). The error of a page that could not be loaded is a
// *FirstPageError: the tab is open all the same, at Chromium's error page.
func (p *Profile) loadFirstPage(ctx context.Context, tab *Tab, url string) error {
	if url == "" || url == "about:blank" {
		return nil
	}
	data, err := json.Marshal(protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: url}})
	if err != nil {
		return err
	}
	msg, err := p.node.nc.RequestWithContext(ctx, p.node.subj.TabPlan(tab.ID()), data)
	if err != nil {
		return &FirstPageError{Tab: tab.ID(), URL: url, Err: protocol.Errorf(protocol.CodeTimeout, "%v", err)}
	}
	res, err := protocol.DecodePlanResult(msg.Data)
	if err != nil {
		return &FirstPageError{Tab: tab.ID(), URL: url, Err: err}
	}
	if !res.OK {
		return &FirstPageError{Tab: tab.ID(), URL: url, Err: &protocol.Error{Code: res.Code, Message: res.Error}}
	}
	return nil
}

// FirstPageError: a tab opened, but the page it was opened at could not
// be loaded; it has the code of that failure.
type FirstPageError struct {
	Tab, URL string
	Err      error
}

func (e *FirstPageError) Error() string {
	return fmt.Sprintf("tab %s opened, but %s could not be loaded: %v", e.Tab, e.URL, e.Err)
}

func (e *FirstPageError) Unwrap() error { return e.Err }

// adopt gives a claimed tab that exists already its actor.
func (p *Profile) adopt(ctx context.Context, b *Browser, id string) error {
	page, err := b.AttachPage(ctx, id)
	if err == nil {
		_, err = p.startTab(ctx, page)
	}
	if err != nil {
		p.unclaim(id)
	}
	return err
}

// attachTimeout bounds adopting a tab a page opened.
const attachTimeout = 30 * time.Second

// adoptOpened gives every tab that appears (one a page opens with
// window.open or target=_blank, or in an attached browser a person's new
// tab) an actor and a frame stream of its own, and announces one a page
// opened on the opener's event.opened subject.
func (p *Profile) adoptOpened(opened <-chan cdpdriver.PageOpened) {
	for o := range opened {
		b := p.Browser()
		if b == nil {
			return
		}
		if !p.claim(o.TargetID) {
			continue // the node opened it and gives it its actor
		}
		ctx, cancel := context.WithTimeout(context.Background(), attachTimeout)
		err := p.adopt(ctx, b, o.TargetID)
		cancel()
		if err != nil {
			p.log.Warn().Err(err).Str("target", o.TargetID).Msg("adopt a tab that appeared")
			continue
		}
		if o.OpenerID == "" {
			continue
		}
		if tab := p.Tab(o.TargetID); tab != nil {
			data, _ := json.Marshal(openedEvent{Tab: o.OpenerID, Opened: tab.Info()})
			_ = p.node.nc.Publish(p.node.subj.TabEvents(o.OpenerID, "opened"), data)
		}
	}
}

// openedEvent is the message on <prefix>.tab.<opener>.event.opened.
type openedEvent struct {
	Tab    string           `json:"tab"`    // the opener
	Opened protocol.TabInfo `json:"opened"` // the new tab
}

// startTab starts the actor of a connected page and registers it.
func (p *Profile) startTab(ctx context.Context, page *cdpdriver.Page) (*Tab, error) {
	return p.startTabAs(ctx, page, nil)
}

// startTabAs is startTab; with from, the page is that of a tab of the
// node's last run, under its id, going on after its last frame
// (restore.go).
func (p *Profile) startTabAs(ctx context.Context, page *cdpdriver.Page, from *restoreFrom) (*Tab, error) {
	n := p.node
	id, beforePlans := page.TargetID(), func() {}
	var restore *protocol.Frame
	var past []PastPlan
	var marked int64
	if from != nil {
		restore, past, marked = &from.last, from.past, from.marked
		id = restore.Tab
		// The node answered for it while it came back.
		beforePlans = func() { n.releasePlans(restore.Tab) }
	}
	var reader *cdpdriver.BrowserUser // who must read the tab's files
	if b := p.Browser(); b != nil && b.Process() != nil {
		reader = b.Process().User()
	}
	tab, err := StartTab(ctx, TabOptions{
		ID:            id,
		Profile:       p.name,
		Node:          n.name,
		Page:          page,
		Conn:          n.nc,
		Subjects:      n.subj,
		Frames:        n.opts.Frames,
		SettleTimeout: n.opts.SettleTimeout,
		ActionTimeout: n.opts.ActionTimeout,
		DialogTimeout: n.opts.DialogTimeout,
		DialogDefault: n.opts.DialogDefault,
		Allow:         n.allow,
		UserFrames:    !p.Managed() || !p.launch.Headless,
		Viewport:      p.viewport(),
		FileRoots:     n.opts.FileRoots,
		StageDir:      n.stageDir,
		StageReader:   reader,
		FileLimits:    n.opts.FileLimits,
		History:       n.history,
		Restore:       restore,
		RestoreMarked: marked,
		PastPlans:     past,
		SeqMarks:      n.seqMarks(p),
		BeforePlans:   beforePlans,
		Resources:     n,
		NodeLeaving:   n.leaving,
		Logger:        p.log,
	})
	if err != nil {
		if b := p.Browser(); b != nil && p.Managed() {
			_ = b.ClosePage(ctx, page)
		} else {
			page.Close()
		}
		return nil, err
	}
	p.mu.Lock()
	p.tabs = append(p.tabs, tab)
	p.pages[tab.ID()] = page
	p.known[tab.ID()] = true
	p.mu.Unlock()
	n.tabsChanged()
	go p.retireWhenDone(tab)
	return tab, nil
}

// retireWhenDone drops a tab from the profile once its actor stopped (its
// page went away), so it is no longer listed.
func (p *Profile) retireWhenDone(tab *Tab) {
	<-tab.Done()
	p.retire(tab)
}

// retire drops a stopped tab from the profile, once: CloseTab does it
// before it answers, so a list asked for after the answer has the tab
// no longer.
func (p *Profile) retire(tab *Tab) {
	p.mu.Lock()
	i := slices.Index(p.tabs, tab)
	if i < 0 {
		p.mu.Unlock()
		return // retired already
	}
	p.tabs = slices.Delete(p.tabs, i, i+1)
	if pg, ok := p.pages[tab.ID()]; ok {
		pg.Close()
		delete(p.pages, tab.ID())
		delete(p.claimed, pg.TargetID()) // a restored tab's page is not its id
	}
	delete(p.claimed, tab.ID())
	p.mu.Unlock()
	p.node.tabsChanged()
}

// viewport is what the profile's tabs are laid out for: its own if it has
// one, else the node's in the browsers it launches. Without one of its
// own, an attach profile's tabs keep their window's size: that browser is
// someone's, and an emulated viewport would no longer fit the window they
// see (an agent can still resize a tab).
func (p *Profile) viewport() protocol.Viewport {
	if p.ownViewport != nil {
		return *p.ownViewport
	}
	if !p.Managed() {
		return protocol.Viewport{}
	}
	if vp := p.node.opts.Viewport; vp != nil {
		return *vp
	}
	return protocol.DefaultViewport
}

// Tabs lists the profile's tabs.
func (p *Profile) Tabs() []protocol.TabInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []protocol.TabInfo{}
	for _, t := range p.tabs {
		out = append(out, t.Info())
	}
	return out
}

// Tab returns the profile's tab with id, or nil.
func (p *Profile) Tab(id string) *Tab {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.tabs {
		if t.ID() == id {
			return t
		}
	}
	return nil
}

// CloseTab closes a tab: its page first, so an action in flight ends at
// once, then its actor. An attached browser's tab is closed too: the agent
// asked for it.
func (p *Profile) CloseTab(ctx context.Context, id string) (protocol.TabInfo, error) {
	tab := p.Tab(id)
	b := p.Browser()
	if tab == nil || b == nil {
		return protocol.TabInfo{}, protocol.Errorf(protocol.CodeTabNotFound, "no tab %s in profile %s", id, p.name)
	}
	info := tab.Info()
	p.mu.Lock()
	page := p.pages[id]
	p.mu.Unlock()
	if page != nil {
		if err := b.ClosePage(ctx, page); err != nil {
			return info, fmt.Errorf("close tab %s: %w", id, err)
		}
	}
	tab.Stop()
	p.retire(tab)
	return info, nil
}

// Status is the profile's status (ADR-006); it never fails.
func (p *Profile) Status() protocol.ProfileStatus {
	st := protocol.ProfileStatus{Name: p.name, Node: p.node.name, Driver: protocol.DriverManaged, Attach: p.attach}
	if !p.Managed() {
		st.Driver = protocol.DriverAttach
	} else {
		st.Dir = p.launch.UserDataDir
	}
	p.mu.Lock()
	b := p.browser
	st.Session = p.session
	st.PageCount = len(p.tabs)
	p.mu.Unlock()
	if b != nil {
		st.Running = true
		st.Endpoint = b.Endpoint()
	}
	return st
}

// notRunning is the browser_not_running error, with how to start it.
func (p *Profile) notRunning() error {
	how := "framebus launch"
	op := protocol.OpLaunch
	if !p.Managed() {
		how, op = "framebus connect", protocol.OpConnect
	}
	if p.name != protocol.DefaultProfile {
		how += " --profile " + p.name
	}
	return protocol.Errorf(protocol.CodeBrowserNotRunning,
		"browser not running for profile %q; start it with: %s (a request on %s)",
		p.name, how, p.node.subj.Profile(p.name, op))
}

// notLaunchable is launch's error on an attach profile (ADR-006's
// "chrome" profile): framebus does not start that browser.
func (p *Profile) notLaunchable() error {
	return protocol.Errorf(protocol.CodeNotLaunchable,
		"cannot launch profile %q: it attaches to a browser framebus does not start (%s); run that browser with --remote-debugging-port, then: framebus connect --profile %s",
		p.name, p.attach, p.name)
}

// copyOf is a copy of *v, nil for nil: the caller's value may change.
func copyOf(v *protocol.Viewport) *protocol.Viewport {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}
