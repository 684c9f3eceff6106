package actors

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/actors/webfetch"
	"github.com/framebus/framebus/actors/websearch"
	"github.com/framebus/framebus/protocol"
)

// HTTPOptions configure the node's http resource; a zero field takes its
// default.
type HTTPOptions struct {
	// MaxBytes caps a fetched body (protocol.DefaultFetchMaxBytes), and
	// is itself kept to what a reply on the bus carries.
	MaxBytes     int
	MaxRedirects int           // protocol.DefaultFetchMaxRedirects
	Timeout      time.Duration // a fetch that sets none: the action default
}

// SearchOptions configure the node's search resource.
type SearchOptions struct {
	Engine        string // protocol.EngineDuckDuckGo when ""
	DuckDuckGoURL string // its HTML endpoint; tests point it at loopback
	GoogleURL     string // the Custom Search JSON API's endpoint
	// GoogleKey and GoogleCX are the Custom Search JSON API's key and
	// engine id; without them the google engine is refused.
	GoogleKey, GoogleCX string
}

// resourcesAtOnce bounds the fetches (and, apart, the searches) a node
// carries out at once for the bus, and resourcesWaiting those that may
// wait for one of them: past that a request is refused at once.
const (
	resourcesAtOnce  = 64
	resourcesWaiting = 16 * resourcesAtOnce
)

// replyRoomForBody is what a fetch reply needs besides its body.
const replyRoomForBody = 64 << 10

// startResources makes the node's http and search resources: every
// request through the node's dialer, which connects only to addresses
// the whitelist allows, and every URL (redirect hops too) checked against
// the whitelist before it is asked.
func (n *Node) startResources() error {
	ho := n.opts.HTTP
	// base64 makes a body a third larger: a body at the cap still fits.
	fits := int(n.nc.MaxPayload()-replyRoomForBody) / 4 * 3
	maxBytes := min(cmp.Or(ho.MaxBytes, protocol.DefaultFetchMaxBytes), fits)
	var check func(string) error
	if wl := n.opts.Whitelist; wl != nil {
		check = wl.Check
	}
	n.fetcher = webfetch.New(webfetch.Options{
		Dialer: n.dialer, Check: check,
		MaxBytes: maxBytes, MaxRedirects: ho.MaxRedirects, Timeout: ho.Timeout,
		Cookies: n.profileCookies,
	})
	so := n.opts.Search
	var err error
	n.searcher, err = websearch.New(websearch.Options{
		Fetch: n.fetcher.Fetch, DefaultEngine: so.Engine,
		DuckDuckGoURL: so.DuckDuckGoURL, GoogleURL: so.GoogleURL, GoogleKey: so.GoogleKey, GoogleCX: so.GoogleCX,
	})
	return err
}

// Fetch carries out one http request (the http resource).
func (n *Node) Fetch(ctx context.Context, req protocol.FetchRequest) (protocol.FetchReply, error) {
	return n.fetcher.Fetch(ctx, req)
}

// Search carries out one web search (the search resource).
func (n *Node) Search(ctx context.Context, req protocol.SearchRequest) (protocol.SearchReply, error) {
	return n.searcher.Search(ctx, req)
}

// resourceEndpoints answer the http and search resources on the bus: a
// queue group, so one node of those sharing the bus takes each request.
func (n *Node) resourceEndpoints() []endpoint {
	fetches, searches := newResourceQueue("fetch"), newResourceQueue("search")
	return []endpoint{
		{name: "http-fetch", subject: n.subj.HTTPFetch(), queue: "framebus-http", handle: func(m micro.Request) {
			req, err := protocol.DecodeFetchRequest(m.Data())
			wait := cmp.Or(req.Timeout.Std(), n.opts.HTTP.Timeout, webfetch.DefaultTimeout)
			fetches.answer(n, m, err, time.Now().Add(wait), func(ctx context.Context) (any, error) {
				if m.Headers().Get(protocol.HeaderBody) == protocol.BodyRaw {
					return n.fetchRaw(ctx, req)
				}
				return n.Fetch(ctx, req)
			})
		}},
		{name: "search-query", subject: n.subj.SearchQuery(), queue: "framebus-search", handle: func(m micro.Request) {
			req, err := protocol.DecodeSearchRequest(m.Data())
			wait := protocol.Action{Type: "search", Timeout: req.Timeout}.EffectiveTimeout()
			searches.answer(n, m, err, time.Now().Add(wait), func(ctx context.Context) (any, error) { return n.Search(ctx, req) })
		}},
	}
}

// resourceQueue carries out a resource's requests, at most
// resourcesAtOnce at once, each on a goroutine of its own. A request
// waits for its turn until its own deadline (its timeout from when it
// arrived), and is answered timeout then, not carried out for a caller
// that gave up.
type resourceQueue struct {
	action  string
	slots   chan struct{}
	waiting atomic.Int64
}

func newResourceQueue(action string) *resourceQueue {
	return &resourceQueue{action: action, slots: make(chan struct{}, resourcesAtOnce)}
}

// answer answers a resource's request: the decoding error at once, else
// what run answers by the deadline.
func (q *resourceQueue) answer(n *Node, m micro.Request, decoded error, deadline time.Time, run func(context.Context) (any, error)) {
	if decoded != nil {
		respond(m, protocol.NewErrorReply(decoded), n.log)
		return
	}
	if q.waiting.Add(1) > resourcesWaiting {
		q.waiting.Add(-1)
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeUnavailable,
			"%s: the node's %d %s slots are busy and %d requests wait for them; ask again later", q.action, resourcesAtOnce, q.action, resourcesWaiting)), n.log)
		return
	}
	go func() {
		turn := time.NewTimer(time.Until(deadline))
		defer turn.Stop()
		select {
		case q.slots <- struct{}{}:
			q.waiting.Add(-1)
			defer func() { <-q.slots }()
		case <-turn.C:
			q.waiting.Add(-1)
			respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeTimeout,
				"%s: its timeout passed while it waited for one of the node's %d %s slots (all busy); it was not carried out", q.action, resourcesAtOnce, q.action)), n.log)
			return
		}
		// A moment past the deadline, so the resource's own timeout answers.
		ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(time.Second))
		defer cancel()
		reply, err := run(ctx)
		if err != nil {
			respond(m, protocol.NewErrorReply(err), n.log)
			return
		}
		n.sendResourceReply(m, q.action, reply)
	}()
}

// sendResourceReply sends a resource's reply, or too_large when the bus
// cannot carry it.
func (n *Node) sendResourceReply(m micro.Request, action string, reply any) {
	if raw, ok := reply.(rawReply); ok {
		defer raw.release() // Respond has copied the body into the connection's buffer
		if err := n.fitsTheBus(action, len(raw.head)+len(raw.body)+len(protocol.HeaderReply)+headerRoom); err != nil {
			respond(m, protocol.NewErrorReply(err), n.log)
			return
		}
		if err := m.Respond(raw.body, micro.WithHeaders(micro.Headers{protocol.HeaderReply: {string(raw.head)}})); err != nil {
			n.log.Warn().Err(err).Msg("send reply")
		}
		return
	}
	data, ok := encodeReply(reply, n.log)
	if !ok {
		return
	}
	if err := n.fitsTheBus(action, len(data)); err != nil {
		respond(m, protocol.NewErrorReply(err), n.log)
		return
	}
	if err := m.Respond(data); err != nil {
		n.log.Warn().Err(err).Msg("send reply")
	}
}

// headerRoom is what a message's header block needs beside its keys and
// values (its first line, separators).
const headerRoom = 64

// fitsTheBus says too_large when a reply of size bytes is more than one
// bus message carries: the bus would drop it, and the caller hear
// nothing until its own deadline. A hostile server makes such a reply
// with a body at the cap and long redirect URLs or headers.
func (n *Node) fitsTheBus(action string, size int) error {
	if max := n.nc.MaxPayload(); int64(size) > max {
		hint := ""
		if action == "fetch" {
			hint = ", or for the body outside the JSON (header Framebus-Body: raw, as the Go client asks)"
		}
		return protocol.Errorf(protocol.CodeTooLarge, "%s: the reply is %d bytes, more than one bus message carries (%d): ask for less (maxBytes)%s", action, size, max, hint)
	}
	return nil
}

// rawReply is a fetch's reply with its body outside the JSON (see
// protocol.HeaderBody).
type rawReply struct {
	head    []byte // the FetchReply without its body
	body    []byte
	release func() // once the body is sent (webfetch.Fetcher.FetchBytes)
}

// fetchRaw carries out a fetch whose reply has its body outside the
// JSON: the body's bytes as received (a binary body is not made base64)
// or as text in UTF-8, read into a buffer reused fetch after fetch.
func (n *Node) fetchRaw(ctx context.Context, req protocol.FetchRequest) (rawReply, error) {
	reply, body, release, err := n.fetcher.FetchBytes(ctx, req)
	if err != nil {
		return rawReply{}, err
	}
	head, err := protocol.Marshal(reply)
	if err != nil {
		release()
		return rawReply{}, err
	}
	return rawReply{head: head, body: body, release: release}, nil
}
