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

// longLived are the Network.ResourceType values idle ignores.
var longLived = map[string]bool{"WebSocket": true, "EventSource": true, "Media": true}

type netTracker struct {
	mu       sync.Mutex
	inflight map[string]string // requestId -> loaderId
	changed  time.Time         // last time a request started or ended
}

func newNetTracker() *netTracker {
	return &netTracker{inflight: map[string]string{}, changed: time.Now()}
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
			n.inflight[p.RequestID] = p.LoaderID
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
	for id, l := range n.inflight {
		if l != loaderID {
			delete(n.inflight, id)
		}
	}
}

// quietFor is how long the network has been idle (0 while busy), and the
// number of requests in flight.
func (n *netTracker) quietFor() (time.Duration, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.inflight) > 0 {
		return 0, len(n.inflight)
	}
	return time.Since(n.changed), 0
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
