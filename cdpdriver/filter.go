package cdpdriver

import (
	"context"
	"sync"

	"github.com/mafredri/cdp/protocol/fetch"
	"github.com/mafredri/cdp/protocol/network"
)

// Request filtering: a security boundary in the browser's network layer.
// The Fetch domain enabled on the browser target pauses every request of
// every target, including tabs the page opens itself from their very first
// request, before anything is sent. A request the filter refuses is failed
// in the browser and never reaches the network: a document request is
// aborted (the page stays where it was), any other is blocked by client.

// RequestFilter decides whether the browser may send a request to url:
// nil allows it; an error refuses it and says why.
type RequestFilter func(url string) error

// RequestBlocked is the page event of a request the filter refused.
type RequestBlocked struct {
	URL, ResourceType string
	// Document: a navigation of the page's main frame was refused.
	Document bool
	Err      error
}

func (RequestBlocked) isEvent() {}

// filterState is a Browser's filter and the pages it reports to.
type filterState struct {
	mu    sync.Mutex
	pages map[string]*Page // by target id, which is the main frame id
}

// FilterRequests makes every request of every target pass filter. It
// runs until the connection closes; it is meant to be called once, before
// pages load anything.
func (b *Browser) FilterRequests(ctx context.Context, filter RequestFilter) error {
	paused, err := b.client.Fetch.RequestPaused(b.conn.Context())
	if err != nil {
		return b.wrap(ctx, "filter requests", err)
	}
	if err := b.client.Fetch.Enable(ctx, fetch.NewEnableArgs()); err != nil {
		paused.Close()
		return b.wrap(ctx, "filter requests", err)
	}
	go func() {
		defer paused.Close()
		for {
			ev, err := paused.Recv()
			if err != nil {
				return // the connection closed
			}
			go b.decide(ev, filter)
		}
	}()
	return nil
}

// decide continues or fails one paused request.
func (b *Browser) decide(ev *fetch.RequestPausedReply, filter RequestFilter) {
	ctx := b.conn.Context()
	err := filter(ev.Request.URL)
	if err == nil {
		if cerr := b.client.Fetch.ContinueRequest(ctx, fetch.NewContinueRequestArgs(ev.RequestID)); cerr != nil && ctx.Err() == nil {
			b.log.Debug().Err(cerr).Str("url", ev.Request.URL).Msg("continue request")
		}
		return
	}
	doc := ev.ResourceType == network.ResourceTypeDocument
	// The page hears of the refusal before the browser fails the request,
	// so whoever sees the navigation fail also finds the reason queued.
	b.filter.mu.Lock()
	p := b.filter.pages[string(ev.FrameID)]
	b.filter.mu.Unlock()
	if p != nil {
		id := "fetch:" + string(ev.RequestID)
		if ev.NetworkID != nil {
			id = string(*ev.NetworkID)
		}
		p.decoder.requests.block(id, ev.Request.Method, ev.Request.URL, string(ev.ResourceType), err.Error())
		p.events.push(RequestBlocked{URL: ev.Request.URL, ResourceType: string(ev.ResourceType), Document: doc, Err: err})
	}
	reason := network.ErrorReasonBlockedByClient
	if doc {
		reason = network.ErrorReasonAborted // no error page: the page stays
	}
	if ferr := b.client.Fetch.FailRequest(ctx, fetch.NewFailRequestArgs(ev.RequestID, reason)); ferr != nil && ctx.Err() == nil {
		b.log.Warn().Err(ferr).Str("url", ev.Request.URL).Msg("fail request")
	}
	b.log.Info().Str("url", ev.Request.URL).Str("type", string(ev.ResourceType)).Err(err).Msg("request blocked")
}

// Watch makes the browser report the page's blocked requests as its
// RequestBlocked events, until Unwatch.
func (b *Browser) Watch(p *Page) {
	b.filter.mu.Lock()
	defer b.filter.mu.Unlock()
	if b.filter.pages == nil {
		b.filter.pages = map[string]*Page{}
	}
	b.filter.pages[p.targetID] = p
}

// Unwatch stops reporting the page's blocked requests.
func (b *Browser) Unwatch(p *Page) {
	b.filter.mu.Lock()
	defer b.filter.mu.Unlock()
	delete(b.filter.pages, p.targetID)
}
