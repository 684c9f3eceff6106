package actors

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// outcome is what an action handler started, for the tab to settle.
type outcome struct {
	value json.RawMessage
	// loaderID: a new document to wait for (navigate).
	loaderID string
	// barrier: the action ran in the renderer through input events, whose
	// effects may still be in flight; settle with a renderer round trip.
	barrier bool
}

// handler runs one action on the tab's page. Handlers are keyed by the
// action type declared in protocol; a test checks every declared action
// has one.
type handler func(t *Tab, ctx context.Context, a protocol.Action) (outcome, error)

var handlers = map[string]handler{
	"navigate": (*Tab).navigate,
	"click":    (*Tab).click,
	"eval":     (*Tab).eval,
}

func (t *Tab) navigate(ctx context.Context, a protocol.Action) (outcome, error) {
	target, err := cdpdriver.ResolveURL(a.URL, t.nav.url)
	if err != nil {
		return outcome{}, protocol.Errorf(protocol.CodeBadRequest, "url: %v", err)
	}
	res, err := t.page.Navigate(ctx, target)
	var timeout *cdpdriver.TimeoutError
	if errors.As(err, &timeout) {
		// Page.navigate answers at commit; cancel the load so it cannot
		// commit later as a change nobody asked for.
		t.stopLoading()
		return outcome{}, errPageLoadTimeout
	}
	if err != nil {
		// No document is coming, or only Chromium's error page, whose
		// load settle waits out with the loading state.
		return outcome{}, err
	}
	// A same-document navigation has no loader to wait for; a renderer
	// round trip makes sure its URL change has been reported.
	out := outcome{loaderID: res.LoaderID, barrier: res.SameDocument}
	if a.Wait {
		return out, t.waitLoad(ctx, res.LoaderID)
	}
	return out, nil
}

// waitLoad waits for the load event of the document loaderID commits.
func (t *Tab) waitLoad(ctx context.Context, loaderID string) error {
	if loaderID == "" {
		return nil
	}
	if !t.waitFor(ctx, func() bool { return t.nav.loaded[loaderID] }) {
		return errPageLoadTimeout
	}
	return nil
}

// errPageLoadTimeout is DR-013's timeout error.
var errPageLoadTimeout = protocol.Errorf(protocol.CodeTimeout, "timeout waiting for page load")

// stopLoadingTimeout bounds cancelling a navigation after its own deadline.
const stopLoadingTimeout = 5 * time.Second

func (t *Tab) stopLoading() {
	ctx, cancel := context.WithTimeout(context.Background(), stopLoadingTimeout)
	defer cancel()
	if err := t.page.StopLoading(ctx); err != nil {
		t.log.Warn().Err(err).Msg("stop loading after navigate timeout")
	}
}

func (t *Tab) click(ctx context.Context, a protocol.Action) (outcome, error) {
	return outcome{barrier: true}, t.page.Click(ctx, a.Selector)
}

func (t *Tab) eval(ctx context.Context, a protocol.Action) (outcome, error) {
	v, err := t.page.Eval(ctx, a.Expression, a.EffectiveTimeout())
	return outcome{value: v}, err
}
