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
// replaced document's requests may never report their end.
func (n *netTracker) newDocument(loaderID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, r := range n.inflight {
		if r.loaderID != loaderID {
			delete(n.inflight, id)
		}
	}
}

// quietFor is how long the network has been idle (0 while busy), and the
// number of requests in flight that keep it busy. Requests older than
// LongRequestAfter do not; the quiet starts when the last one aged.
func (n *netTracker) quietFor() (time.Duration, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
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

// netPoll is how often WaitNetworkIdle looks at the tracker.
const netPoll = 20 * time.Millisecond

// WaitNetworkIdle waits until no request (websockets, event streams and
// media aside) has been in flight for NetworkIdleWindow, or ctx ends; then
// it is a *TimeoutError.
func (p *Page) WaitNetworkIdle(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		quiet, _ := p.decoder.net.quietFor()
		if quiet >= NetworkIdleWindow {
			return nil
		}
		wait := netPoll
		if quiet > 0 {
			wait = min(wait, NetworkIdleWindow-quiet)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			if p.lost() {
				return ErrConnectionLost
			}
			_, n := p.decoder.net.quietFor()
			return &TimeoutError{Op: "waiting for network idle (" + plural(n, "request") + " in flight)", After: deadlineOf(ctx)}
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
