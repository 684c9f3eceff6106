package cdpdriver

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// Network idle: the page has had no request in flight for a while. The
// tracker follows Network events in the connection's reader goroutine
// (they never reach the tab's event queue, so they cost the tab nothing)
// and leaves out the requests that stay open by design: websockets,
// event streams and media.
//
// What idle guarantees: no request (those aside, and those open longer
// than LongRequestAfter) was in flight for NetworkIdleWindow. Nothing
// about requests the page starts afterwards, nor about what its scripts
// do with a response once it has arrived.
//
// The tracker remembers the last time a wait saw the network idle: as
// long as no request has started since, it is idle still, and a wait
// returns at once (a long poll that ends does not undo it). A page that
// keeps fetching (a poll every 300 ms) is never idle for the window; once
// a wait has run out while the page kept starting requests, SettleNetwork
// waits only for the requests in flight when it begins, until the network
// is seen idle again or a new document loads (see SettleNetwork).

// NetworkIdleWindow is how long the network must be quiet to count as idle.
const NetworkIdleWindow = 500 * time.Millisecond

// LongRequestAfter is the age at which a request still in flight is taken
// for a long poll, held open by design like a stream, and stops keeping
// the network busy: idle then counts from that moment.
const LongRequestAfter = 2 * time.Second

// longLived are the Network.ResourceType values idle ignores.
var longLived = map[string]bool{"WebSocket": true, "EventSource": true, "Media": true}

type request struct {
	loaderID string
	started  time.Time
}

type netTracker struct {
	mu       sync.Mutex
	inflight map[string]request
	changed  time.Time // last time a request started or ended
	started  uint64    // requests started (a redirect is the same request)
	// seenIdle: a wait saw the network idle when started was idleMark.
	seenIdle bool
	idleMark uint64
	// background: in this document a wait ran out while the page kept
	// starting requests (it polls); cleared when the network is seen idle.
	background bool
}

func newNetTracker() *netTracker {
	return &netTracker{inflight: map[string]request{}, changed: time.Now()}
}

// observe folds one Network event in; it reports whether it was one.
func (n *netTracker) observe(method string, params json.RawMessage) bool {
	switch method {
	case "Network.requestWillBeSent":
		var p struct {
			RequestID string `json:"requestId"`
			LoaderID  string `json:"loaderId"`
			Type      string `json:"type"`
		}
		if json.Unmarshal(params, &p) == nil && !longLived[p.Type] {
			n.mu.Lock()
			now := time.Now()
			if r, ok := n.inflight[p.RequestID]; ok {
				now = r.started // a redirect: the same request goes on
			} else {
				n.started++
			}
			n.inflight[p.RequestID] = request{loaderID: p.LoaderID, started: now}
			n.changed = time.Now()
			n.mu.Unlock()
		}
	case "Network.loadingFinished", "Network.loadingFailed":
		var p struct {
			RequestID string `json:"requestId"`
		}
		if json.Unmarshal(params, &p) == nil {
			n.mu.Lock()
			if _, ok := n.inflight[p.RequestID]; ok {
				delete(n.inflight, p.RequestID)
				n.changed = time.Now()
			}
			n.mu.Unlock()
		}
	default:
		return false
	}
	return true
}

// newDocument forgets the requests of documents other than loaderID: a
// replaced document's requests may never report their end. Whether the
// old document polled says nothing of the new one.
func (n *netTracker) newDocument(loaderID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.background = false
	for id, r := range n.inflight {
		if r.loaderID != loaderID {
			delete(n.inflight, id)
		}
	}
}

// look is what a wait sees of the network: idle (seen idle with no
// request started since, or quiet for NetworkIdleWindow now, which is
// remembered as seen), else how long it has been quiet and how many
// requests keep it busy.
func (n *netTracker) look() (idle bool, quiet time.Duration, busy int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seenIdle && n.started == n.idleMark {
		return true, 0, 0
	}
	quiet, busy = n.quietFor()
	if quiet >= NetworkIdleWindow {
		n.seenIdle, n.idleMark, n.background = true, n.started, false
		return true, quiet, 0
	}
	return false, quiet, busy
}

// busyRequests lists the requests that keep the network busy now.
func (n *netTracker) busyRequests() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	var ids []string
	for id, r := range n.inflight {
		if r.started.Add(LongRequestAfter).After(now) {
			ids = append(ids, id)
		}
	}
	return ids
}

// ended says whether each of the requests has ended or aged into a long
// poll.
func (n *netTracker) ended(ids []string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	for _, id := range ids {
		if r, ok := n.inflight[id]; ok && r.started.Add(LongRequestAfter).After(now) {
			return false
		}
	}
	return true
}

// ranOut records a wait that ran out: a page that started requests
// during it (since started was from) keeps fetching in the background.
func (n *netTracker) ranOut(from uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started != from {
		n.background = true
	}
}

// startedCount is the number of requests started so far, and whether the
// page was seen fetching in the background (see ranOut).
func (n *netTracker) startedCount() (uint64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.started, n.background
}

// quietFor is how long the network has been idle (0 while busy), and the
// number of requests in flight that keep it busy. Requests older than
// LongRequestAfter do not; the quiet starts when the last one aged.
// n.mu is held.
func (n *netTracker) quietFor() (time.Duration, int) {
	now := time.Now()
	since, busy := n.changed, 0
	for _, r := range n.inflight {
		aged := r.started.Add(LongRequestAfter)
		if aged.After(now) {
			busy++
		} else if aged.After(since) {
			since = aged
		}
	}
	if busy > 0 {
		return 0, busy
	}
	return now.Sub(since), 0
}

// netPoll is how often a wait looks at the tracker.
const netPoll = 20 * time.Millisecond

// IdleWait says what a wait for network idle found.
type IdleWait struct {
	// Idle: no request was in flight for NetworkIdleWindow.
	Idle bool
	// Already: it was idle when the wait began (seen idle by an earlier
	// wait, with no request started since): the wait did not wait.
	Already bool
	// Background: not idle; the page keeps fetching in the background
	// (an earlier wait in this document ran out while it started
	// requests), so this wait waited only for the Pending requests in
	// flight when it began (0: none, it did not wait).
	Background bool
	Pending    int
}

// WaitNetworkIdle waits until no request (websockets, event streams and
// media aside) has been in flight for NetworkIdleWindow, or ctx ends; then
// it is a *TimeoutError. A network seen idle with no request started
// since is idle at once.
func (p *Page) WaitNetworkIdle(ctx context.Context) (IdleWait, error) {
	return p.waitNetwork(ctx, false)
}

// SettleNetwork is WaitNetworkIdle for a page that may never be idle:
// once a wait in this document has run out while the page kept starting
// requests (a poll), it waits only for the requests in flight when it
// begins (or for idle, if that comes first), and says so in Background,
// instead of running into its deadline every time. The network seen idle
// again, or a new document, ends that.
func (p *Page) SettleNetwork(ctx context.Context) (IdleWait, error) {
	return p.waitNetwork(ctx, true)
}

func (p *Page) waitNetwork(ctx context.Context, settle bool) (IdleWait, error) {
	n := p.decoder.net
	from, background := n.startedCount()
	var pending []string
	if settle && background {
		pending = n.busyRequests()
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for first := true; ; first = false {
		idle, quiet, _ := n.look()
		if idle {
			return IdleWait{Idle: true, Already: first}, nil
		}
		if settle && background && n.ended(pending) {
			return IdleWait{Background: true, Pending: len(pending)}, nil
		}
		wait := netPoll
		if quiet > 0 {
			wait = min(wait, NetworkIdleWindow-quiet)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			if p.lost() {
				return IdleWait{}, ErrConnectionLost
			}
			n.ranOut(from)
			_, _, busy := n.look()
			return IdleWait{}, &TimeoutError{Op: "waiting for network idle (" + plural(busy, "request") + " in flight)", After: deadlineOf(ctx)}
		case <-t.C:
		}
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
