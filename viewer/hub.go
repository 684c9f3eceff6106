package viewer

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
)

// The hub is the viewer's one view of the bus: every tab's frames (a
// resuming watch), its plans' results, questions and answers, the tab
// list, and the pictures of the tabs someone watches. It fans them out
// to the pages connected (listeners).

// tabsEvery is how often the tab list is asked for; a frame of a tab not
// listed yet asks at once.
const tabsEvery = 2 * time.Second

// leaseEvery is how often a watched tab's screencast lease is renewed
// (for protocol.DefaultWatch seconds each time).
const leaseEvery = 4 * time.Second

// listenerQueue bounds the events waiting for one page; a page that
// falls this far behind is cut off, and catches up from the history
// when its browser reconnects.
const listenerQueue = 4096

// event is one message to a page: its SSE event name and JSON data.
type event struct {
	name string
	data []byte
}

// listener is one connected page.
type listener struct {
	id      string
	events  chan event
	dropped chan struct{} // closed when it fell behind
	// screens are the latest picture of each tab it watches, sent as the
	// page can take them: a slow page skips pictures, not frames.
	mu      sync.Mutex
	watched map[string]int // tab: pictures a second wanted
	screens map[string]event
	ready   chan struct{} // a picture is waiting
}

// hub fans the bus out to the listeners.
type hub struct {
	ctx context.Context // the viewer's: leases outlive the request that began them
	bc  *busclient.Client
	log func(msg string, args ...any)

	mu        sync.Mutex
	listeners map[string]*listener
	tabs      []protocol.TabInfo
	tabsJSON  []byte
	latest    map[string]json.RawMessage // each tab's last frame, as sent
	screens   map[string]*nats.Subscription
	rates     map[string]int     // each followed tab's rate, the most a page wants
	shown     map[string]event   // each followed tab's latest picture's event
	pictures  map[string]picture // and the picture
	pictureN  uint64
	busState  string
	refresh   chan struct{}
	// results are the latest plans' results, for a page that joins.
	results []event
}

// keptResults is how many plans' results a joining page gets.
const keptResults = 200

func newHub(ctx context.Context, bc *busclient.Client, log func(string, ...any)) *hub {
	return &hub{ctx: ctx, bc: bc, log: log, listeners: map[string]*listener{}, latest: map[string]json.RawMessage{},
		screens: map[string]*nats.Subscription{}, rates: map[string]int{}, shown: map[string]event{}, pictures: map[string]picture{}, busState: "live", refresh: make(chan struct{}, 1)}
}

// run follows the bus until ctx ends.
func (h *hub) run(ctx context.Context) error {
	nc := h.bc.Conn()
	subj := h.bc.Subjects()
	var subs []*nats.Subscription
	for _, kind := range []string{"result", "ask", "answer"} {
		sub, err := nc.Subscribe(subj.TabEvents("*", kind), func(m *nats.Msg) { h.onEvent(kind, m) })
		if err != nil {
			return err
		}
		subs = append(subs, sub)
	}
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
		h.mu.Lock()
		for _, s := range h.screens {
			_ = s.Unsubscribe()
		}
		h.mu.Unlock()
	}()
	w, err := h.bc.WatchAll(ctx, true)
	if err != nil {
		return err
	}
	defer w.Stop()
	go h.followTabs(ctx)
	go h.renewLeases(ctx)
	go h.followConnection(ctx)
	for f := range w.Frames() {
		h.onFrame(f)
	}
	return w.Err()
}

// frameView is a frame as the page lists it: without its content, which
// it asks for (api/frame), but saying how long it is.
type frameView struct {
	protocol.Frame
	FullPage     *string `json:"fullPage,omitempty"`
	ContentBytes int     `json:"contentBytes,omitempty"`
}

func viewOf(f protocol.Frame) frameView {
	v := frameView{Frame: f}
	switch {
	case f.FullPage != nil:
		v.ContentBytes = len(*f.FullPage)
	case f.FullPageRef != nil:
		v.ContentBytes = int(f.FullPageRef.Bytes)
	}
	v.Frame.FullPage, v.Frame.FullPageRef = nil, nil
	return v
}

func (h *hub) onFrame(f busclient.Frame) {
	if f.Tab == "" {
		return // a watch event (a gap, a node lost), not a frame
	}
	data, err := json.Marshal(viewOf(f.Frame))
	if err != nil {
		return
	}
	h.mu.Lock()
	h.latest[f.Tab] = data
	known := slices.ContainsFunc(h.tabs, func(t protocol.TabInfo) bool { return t.Tab == f.Tab })
	h.mu.Unlock()
	h.broadcast(event{"frame", data})
	if !known || f.Control != nil || f.Action == protocol.FrameClose {
		h.askTabs()
	}
}

func (h *hub) onEvent(kind string, m *nats.Msg) {
	if !json.Valid(m.Data) {
		return
	}
	ev := event{kind, m.Data}
	if kind == "result" {
		h.mu.Lock()
		h.results = append(h.results, ev)
		if len(h.results) > keptResults {
			h.results = slices.Delete(h.results, 0, len(h.results)-keptResults)
		}
		h.mu.Unlock()
	}
	h.broadcast(ev)
	if kind != "result" {
		h.askTabs() // the tab list says which questions are open
	}
}

// askTabs has the tab list asked for now.
func (h *hub) askTabs() {
	select {
	case h.refresh <- struct{}{}:
	default:
	}
}

// followTabs keeps the tab list, and tells the pages when it changes.
func (h *hub) followTabs(ctx context.Context) {
	t := time.NewTicker(tabsEvery)
	defer t.Stop()
	for {
		tctx, cancel := context.WithTimeout(ctx, tabsEvery)
		list, err := h.bc.Tabs(tctx)
		sessions, _ := h.bc.Sessions(tctx)
		cancel()
		if err == nil {
			slices.SortFunc(list.Tabs, func(a, b protocol.TabInfo) int { return strings.Compare(a.Node+a.Tab, b.Node+b.Tab) })
			data, _ := json.Marshal(withSessions(list.Tabs, sessions.Sessions))
			h.mu.Lock()
			changed := string(data) != string(h.tabsJSON)
			h.tabs, h.tabsJSON = list.Tabs, data
			h.mu.Unlock()
			if changed {
				h.broadcast(event{"tabs", data})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.refresh:
		}
	}
}

// tabView is a tab as the page lists it: with its session, if it is one's.
type tabView struct {
	protocol.TabInfo
	Session string `json:"session,omitempty"`
	Domain  string `json:"domain,omitempty"`
}

func withSessions(tabs []protocol.TabInfo, sessions []protocol.SessionInfo) []tabView {
	of := map[string]protocol.SessionInfo{}
	for _, s := range sessions {
		for _, t := range s.Tabs {
			of[t.Tab] = s
		}
	}
	out := make([]tabView, len(tabs))
	for i, t := range tabs {
		out[i] = tabView{TabInfo: t, Session: of[t.Tab].Session, Domain: of[t.Tab].Domain}
	}
	return out
}

// followConnection tells the pages when the viewer's bus connection is
// down and back.
func (h *hub) followConnection(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		state := "live"
		if !h.bc.Conn().IsConnected() {
			state = "reconnecting"
		}
		h.mu.Lock()
		changed := state != h.busState
		h.busState = state
		h.mu.Unlock()
		if changed {
			data, _ := json.Marshal(map[string]string{"state": state})
			h.broadcast(event{"bus", data})
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// renewLeases keeps the screencast of every watched tab going.
func (h *hub) renewLeases(ctx context.Context) {
	t := time.NewTicker(leaseEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		rates := maps.Clone(h.rates)
		h.mu.Unlock()
		for tab, rate := range rates {
			h.lease(ctx, tab, rate, false)
		}
	}
}

// lease asks tab for rate pictures a second for the next while; first,
// for its latest picture too (a still page draws none).
func (h *hub) lease(ctx context.Context, tab string, rate int, first bool) {
	lctx, cancel := context.WithTimeout(ctx, leaseEvery)
	defer cancel()
	if err := h.bc.Request(lctx, h.bc.Subjects().TabWatch(tab), protocol.WatchRequest{Picture: first, Rate: rate}, nil); err != nil {
		h.log("watch a tab's screen", "tab", tab, "err", err)
	}
}

// screenView tells a page a tab has a new picture: its description, and
// its number n, for the page to fetch it (api/screen) as an image, which
// the browser decodes off the page's main thread.
type screenView struct {
	Meta protocol.ScreenMeta `json:"meta"`
	N    uint64              `json:"n"`
}

// picture is a tab's latest picture.
type picture struct {
	n    uint64
	jpeg []byte
}

// Pictures a second: of the tab a person looks at, and of a thumbnail.
const (
	fullRate  = protocol.MaxScreenRate
	thumbRate = 2
)

// watch sets the tabs l watches, full and as thumbnails; a tab someone
// watches now has its pictures followed and leased, at the most any page
// wants, and one no one does any more stops.
func (h *hub) watch(l *listener, full, thumbs []string) error {
	h.mu.Lock()
	l.mu.Lock()
	l.watched = map[string]int{}
	for _, t := range thumbs {
		l.watched[t] = thumbRate
	}
	for _, t := range full {
		l.watched[t] = fullRate
	}
	for t := range l.watched {
		if ev, ok := h.shown[t]; ok {
			// A tab followed already: its latest picture at once.
			l.screens[t] = ev
			select {
			case l.ready <- struct{}{}:
			default:
			}
		}
	}
	l.mu.Unlock()
	h.mu.Unlock()
	return h.rewatch()
}

// rewatch follows the pictures of the tabs the pages watch, and of no
// others.
func (h *hub) rewatch() error {
	h.mu.Lock()
	want := map[string]int{}
	for _, o := range h.listeners {
		o.mu.Lock()
		for tab, rate := range o.watched {
			want[tab] = max(want[tab], rate)
		}
		o.mu.Unlock()
	}
	var started, faster []string
	for tab, rate := range want {
		if rate > h.rates[tab] && h.screens[tab] != nil {
			faster = append(faster, tab) // leased now, not at the next renewal
		}
		h.rates[tab] = rate
		if h.screens[tab] != nil {
			continue
		}
		sub, err := h.bc.Conn().Subscribe(h.bc.Subjects().TabEvents(tab, "screen"), func(m *nats.Msg) { h.onScreen(tab, m) })
		if err != nil {
			h.mu.Unlock()
			return err
		}
		h.screens[tab] = sub
		started = append(started, tab)
	}
	for tab, sub := range h.screens {
		if want[tab] == 0 {
			_ = sub.Unsubscribe()
			delete(h.screens, tab)
			delete(h.rates, tab)
			delete(h.shown, tab)
			delete(h.pictures, tab)
		}
	}
	h.mu.Unlock()
	for _, tab := range started {
		go h.lease(h.ctx, tab, want[tab], true)
	}
	for _, tab := range faster {
		go h.lease(h.ctx, tab, want[tab], false)
	}
	return nil
}

func (h *hub) onScreen(tab string, m *nats.Msg) {
	var meta protocol.ScreenMeta
	if err := json.Unmarshal([]byte(m.Header.Get(protocol.ScreenHeader)), &meta); err != nil || meta.Tab != tab {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.screens[tab] == nil {
		return // no longer followed
	}
	h.pictureN++
	data, err := json.Marshal(screenView{Meta: meta, N: h.pictureN})
	if err != nil {
		return
	}
	ev := event{"screen", data}
	h.pictures[tab] = picture{n: h.pictureN, jpeg: m.Data}
	h.shown[tab] = ev
	for _, l := range h.listeners {
		l.mu.Lock()
		if l.watched[tab] > 0 {
			l.screens[tab] = ev
			select {
			case l.ready <- struct{}{}:
			default:
			}
		}
		l.mu.Unlock()
	}
}

// picture is a followed tab's latest picture.
func (h *hub) picture(tab string) (picture, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.pictures[tab]
	return p, ok
}

// broadcast sends ev to every page; one too far behind is cut off.
func (h *hub) broadcast(ev event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, l := range h.listeners {
		select {
		case l.events <- ev:
		default:
			close(l.dropped)
			delete(h.listeners, id)
		}
	}
}

// join adds a page, with what it needs first: the bus's state, the tab
// list and each tab's last frame.
func (h *hub) join(id string) (*listener, []event) {
	l := &listener{id: id, events: make(chan event, listenerQueue), dropped: make(chan struct{}),
		watched: map[string]int{}, screens: map[string]event{}, ready: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listeners[id] = l
	state, _ := json.Marshal(map[string]string{"state": h.busState})
	first := []event{{"bus", state}}
	if h.tabsJSON != nil {
		first = append(first, event{"tabs", h.tabsJSON})
	}
	for _, tab := range slices.Sorted(maps.Keys(h.latest)) {
		first = append(first, event{"frame", h.latest[tab]})
	}
	first = append(first, h.results...)
	return l, first
}

// leave removes a page.
func (h *hub) leave(l *listener) {
	h.mu.Lock()
	if h.listeners[l.id] == l {
		delete(h.listeners, l.id)
	}
	h.mu.Unlock()
	_ = h.rewatch() // stops the pictures no one watches now
}

// listenerByID finds a connected page.
func (h *hub) listenerByID(id string) *listener {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.listeners[id]
}

// takeScreens returns the pictures waiting for l.
func (l *listener) takeScreens() []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Collect(maps.Values(l.screens))
	clear(l.screens)
	return out
}
