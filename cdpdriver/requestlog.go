package cdpdriver

import (
	"encoding/json"
	"sync"
	"time"
)

// The request log: the requests of the page's current document, as the
// network tracker follows them, in the connection's reader goroutine
// (the Network events never reach the tab's queue). It is a ring of the
// last RequestLogSize requests, so a page that fetches in a loop cannot
// grow the node's memory; it counts the ones it dropped. A new document
// starts it afresh. The browser's request filter marks the requests it
// refused (see decide), from its own goroutine.

// RequestLogSize is how many requests of a document the log keeps.
const RequestLogSize = 1000

// requestURLLimit is the most bytes of a URL kept (a data: URL can be
// megabytes); a longer one is cut and ends in "...".
const requestURLLimit = 2048

// Request is one request of the page, redirects each their own.
type Request struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	// ResourceType is Chromium's: Document, Stylesheet, Image, Media,
	// Font, Script, XHR, Fetch, EventSource, WebSocket, Ping, Other, ...
	ResourceType string `json:"resourceType"`
	Status       int    `json:"status,omitempty"`
	MimeType     string `json:"mimeType,omitempty"`
	// FromCache: answered from the browser's cache (memory or disk) or
	// a service worker, not the network.
	FromCache bool `json:"fromCache,omitempty"`
	// RedirectedTo: the server answered with a redirect to this URL,
	// which is the next request.
	RedirectedTo string `json:"redirectedTo,omitempty"`
	// Failed, with Error (net::ERR_...): no response came.
	Failed bool   `json:"failed,omitempty"`
	Error  string `json:"error,omitempty"`
	// Blocked: the node's whitelist refused it; BlockedBy says why. The
	// browser never sent it.
	Blocked   bool   `json:"blocked,omitempty"`
	BlockedBy string `json:"blockedBy,omitempty"`
	// Pending: neither finished nor failed yet.
	Pending bool      `json:"pending,omitempty"`
	Time    time.Time `json:"time"`

	id, loaderID string
}

// requestLog is the ring. Its methods are safe for concurrent use.
type requestLog struct {
	mu    sync.Mutex
	ring  []*Request // oldest at start
	start int
	byID  map[string]*Request // the latest request of each id
	// dropped counts the requests of this document the ring let go.
	dropped int
}

func newRequestLog() *requestLog {
	return &requestLog{byID: map[string]*Request{}}
}

// observe folds a Network event in.
func (l *requestLog) observe(method string, params json.RawMessage) {
	if l == nil {
		return
	}
	switch method {
	case "Network.requestWillBeSent":
		var p struct {
			RequestID string  `json:"requestId"`
			LoaderID  string  `json:"loaderId"`
			Type      string  `json:"type"`
			WallTime  float64 `json:"wallTime"`
			Request   struct {
				URL         string `json:"url"`
				URLFragment string `json:"urlFragment"`
				Method      string `json:"method"`
			} `json:"request"`
			RedirectResponse *responseFields `json:"redirectResponse"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		url := capURL(p.Request.URL + p.Request.URLFragment)
		r := l.byID[p.RequestID]
		if r != nil && p.RedirectResponse != nil {
			p.RedirectResponse.apply(r)
			r.RedirectedTo, r.Pending = url, false
			r = nil // the next hop is a request of its own
		}
		if r == nil {
			r = &Request{id: p.RequestID, Pending: true}
			l.add(r)
		}
		// A request the filter refused may be known before this event.
		r.Method, r.URL, r.ResourceType, r.loaderID = p.Request.Method, url, p.Type, p.LoaderID
		r.Time = time.Unix(0, int64(p.WallTime*float64(time.Second))).UTC()
	case "Network.responseReceived":
		var p struct {
			RequestID string         `json:"requestId"`
			Type      string         `json:"type"`
			Response  responseFields `json:"response"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if r := l.byID[p.RequestID]; r != nil {
			p.Response.apply(r)
		}
	case "Network.requestServedFromCache":
		var p struct {
			RequestID string `json:"requestId"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if r := l.byID[p.RequestID]; r != nil {
			r.FromCache = true
		}
	case "Network.loadingFinished", "Network.loadingFailed":
		var p struct {
			RequestID string `json:"requestId"`
			ErrorText string `json:"errorText"`
			Canceled  bool   `json:"canceled"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if r := l.byID[p.RequestID]; r != nil {
			r.Pending = false
			if method == "Network.loadingFailed" {
				r.Failed, r.Error = true, p.ErrorText
				if p.Canceled && r.Error == "" {
					r.Error = "canceled"
				}
			}
		}
	}
}

// responseFields are what the log keeps of a response.
type responseFields struct {
	Status            int    `json:"status"`
	MimeType          string `json:"mimeType"`
	FromDiskCache     bool   `json:"fromDiskCache"`
	FromServiceWorker bool   `json:"fromServiceWorker"`
	FromPrefetchCache bool   `json:"fromPrefetchCache"`
}

func (f responseFields) apply(r *Request) {
	r.Status, r.MimeType = f.Status, f.MimeType
	r.FromCache = r.FromCache || f.FromDiskCache || f.FromServiceWorker || f.FromPrefetchCache
}

// add appends r, letting the oldest go when the ring is full. l.mu is held.
func (l *requestLog) add(r *Request) {
	if len(l.ring) < RequestLogSize {
		l.ring = append(l.ring, r)
	} else {
		old := l.ring[l.start]
		if l.byID[old.id] == old {
			delete(l.byID, old.id)
		}
		l.ring[l.start] = r
		l.start = (l.start + 1) % len(l.ring)
		l.dropped++
	}
	l.byID[r.id] = r
}

// block marks the request id as refused by the filter (why), adding it
// when its Network event has not come yet.
func (l *requestLog) block(id, method, url, resourceType, why string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.byID[id]
	if r == nil {
		r = &Request{id: id, Method: method, URL: capURL(url), ResourceType: resourceType, Time: time.Now().UTC()}
		l.add(r)
	}
	r.Blocked, r.BlockedBy, r.Pending = true, why, false
}

// newDocument starts the log afresh for the document loaderID commits:
// only its own requests (its document's, which came before the commit)
// stay.
func (l *requestLog) newDocument(loaderID string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var kept []*Request
	for _, r := range l.requests() {
		if r.loaderID == loaderID {
			kept = append(kept, r)
		}
	}
	l.ring, l.start, l.dropped = kept, 0, 0
	l.byID = make(map[string]*Request, len(kept))
	for _, r := range kept {
		l.byID[r.id] = r
	}
}

// requests is the ring in order, oldest first. l.mu is held.
func (l *requestLog) requests() []*Request {
	return append(append([]*Request(nil), l.ring[l.start:]...), l.ring[:l.start]...)
}

// Requests returns the requests of the page's current document, oldest
// first (at most RequestLogSize), and how many older ones were dropped.
func (p *Page) Requests() ([]Request, int) {
	l := p.decoder.requests
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Request, 0, len(l.ring))
	for _, r := range l.requests() {
		out = append(out, *r)
	}
	return out, l.dropped
}

// capURL cuts a URL longer than requestURLLimit.
func capURL(u string) string {
	if len(u) <= requestURLLimit {
		return u
	}
	s, _ := capTextAt(u, requestURLLimit)
	return s + "..."
}
