package actors

import (
	"context"
	"encoding/json"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// outcome is what an action handler started, for the tab to settle.
type outcome struct {
	value json.RawMessage
	// loaderID: a new document to wait for (navigate).
	loaderID string
	// sameDocument: a same-document navigation to wait for (navigate to a fragment).
	sameDocument bool
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
	out := outcome{loaderID: res.LoaderID, sameDocument: res.SameDocument && err == nil}
	if err != nil {
		return out, err
	}
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
		return &cdpdriver.TimeoutError{Op: "waiting for page load"}
	}
	return nil
}

func (t *Tab) click(ctx context.Context, a protocol.Action) (outcome, error) {
	return outcome{barrier: true}, t.page.Click(ctx, a.Selector)
}

func (t *Tab) eval(ctx context.Context, a protocol.Action) (outcome, error) {
	v, err := t.page.Eval(ctx, a.Expression, a.EffectiveTimeout())
	return outcome{value: v}, err
}
