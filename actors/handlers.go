package actors

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/framebus/framebus/actors/whitelist"
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
	// at: the action's last call was that round trip, and saw the page
	// here; settling needs no other.
	at *cdpdriver.Location
	// ran: the action failed after it ran in the page (a script that
	// threw), so it may have changed it: it still makes its frame.
	ran bool
}

// handler runs one action on the tab's page. Handlers are keyed by the
// action type declared in protocol; a test checks every declared action
// has one.
type handler func(t *Tab, ctx context.Context, a protocol.Action) (outcome, error)

var handlers = map[string]handler{
	"navigate": (*Tab).navigate,
	"reload":   (*Tab).reload,
	"back":     func(t *Tab, ctx context.Context, a protocol.Action) (outcome, error) { return t.history(ctx, a, -1) },
	"forward":  func(t *Tab, ctx context.Context, a protocol.Action) (outcome, error) { return t.history(ctx, a, +1) },
	"click":    (*Tab).click,
	"hover":    viaRenderer(func(t *Tab, ctx context.Context, a protocol.Action) error { return t.page.Hover(ctx, a.Selector) }),
	"drag":     viaRenderer(func(t *Tab, ctx context.Context, a protocol.Action) error { return t.page.Drag(ctx, a.From, a.To) }),
	"type":     (*Tab).typeText,
	"fill":     (*Tab).fill,
	"focus":    viaRenderer(func(t *Tab, ctx context.Context, a protocol.Action) error { return t.page.Focus(ctx, a.Selector) }),
	"key": viaRenderer(func(t *Tab, ctx context.Context, a protocol.Action) error {
		return t.page.Key(ctx, a.Key, a.Modifiers())
	}),
	"select": viaRenderer(func(t *Tab, ctx context.Context, a protocol.Action) error {
		return t.page.Select(ctx, a.Selector, a.Value)
	}),
	"scroll":     (*Tab).scroll,
	"resize":     (*Tab).resize,
	"upload":     (*Tab).upload,
	"dialog":     viaRenderer((*Tab).answerDialog),
	"eval":       (*Tab).eval,
	"ready":      (*Tab).ready,
	"wait-for":   (*Tab).waitForElement,
	"text":       read(func(t *Tab, ctx context.Context, a protocol.Action) (any, error) { return t.page.Text(ctx, a.Selector) }),
	"html":       read(func(t *Tab, ctx context.Context, a protocol.Action) (any, error) { return t.page.HTML(ctx, a.Selector) }),
	"title":      read(func(t *Tab, ctx context.Context, a protocol.Action) (any, error) { return t.page.Title(ctx) }),
	"url":        read(func(t *Tab, ctx context.Context, a protocol.Action) (any, error) { return t.nav.url, nil }),
	"screenshot": read((*Tab).screenshot),
	"snapshot":   read((*Tab).snapshot),
	"console":    read((*Tab).console),
	"network":    read((*Tab).network),
	"fill-form":  (*Tab).fillForm,
}

// viaRenderer adapts an action that acts through the renderer (input events or
// a script) and answers nothing: it settles with a round trip.
func viaRenderer(f func(t *Tab, ctx context.Context, a protocol.Action) error) handler {
	return func(t *Tab, ctx context.Context, a protocol.Action) (outcome, error) {
		err := f(t, ctx, a)
		return outcome{barrier: true, ran: inputSent(err)}, err
	}
}

// inputSent: the action failed after its input reached the page, which
// may have acted on it, so it still makes its frame.
func inputSent(err error) bool {
	var sent *cdpdriver.InputSentError
	return errors.As(err, &sent)
}

// read adapts a read-only action whose answer is its value.
func read(f func(t *Tab, ctx context.Context, a protocol.Action) (any, error)) handler {
	return func(t *Tab, ctx context.Context, a protocol.Action) (outcome, error) {
		v, err := f(t, ctx, a)
		if err != nil {
			return outcome{}, err
		}
		raw, err := protocol.Marshal(v)
		return outcome{value: raw}, err
	}
}

func (t *Tab) navigate(ctx context.Context, a protocol.Action) (outcome, error) {
	// On Chromium's error page, a relative URL is relative to the page
	// that could not be loaded, as the agent sees it.
	target, err := cdpdriver.ResolveURL(a.URL, cmp.Or(t.nav.unreachable, t.nav.url))
	// A URL Go cannot parse may still be one a browser loads: the
	// whitelist, which parses as a browser does, has the first word.
	// (Not on a path with no page to be relative to: that is no URL.)
	checked := target
	if err != nil {
		checked = a.URL
	}
	if t.allow != nil && (err == nil || !cdpdriver.IsRelativeURL(a.URL)) {
		derr := t.allow(checked)
		var denied *whitelist.DeniedError
		if errors.As(derr, &denied) && denied.Malformed != nil {
			// Refused for its form, not for where it leads.
			return outcome{}, protocol.Errorf(protocol.CodeBadRequest, "url %q: %v", a.URL, denied.Malformed)
		}
		if derr != nil {
			return outcome{}, protocol.Errorf(protocol.CodePermissionDenied, "%v", derr)
		}
	}
	if err != nil {
		return outcome{}, protocol.Errorf(protocol.CodeBadRequest, "url: %v", err)
	}
	res, err := t.page.Navigate(ctx, target)
	var timeout *cdpdriver.TimeoutError
	if errors.As(err, &timeout) {
		// Page.navigate answers at commit; cancel the load so it cannot
		// commit later as a change nobody asked for.
		return outcome{}, t.notCommitted(a, target)
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

// reload reloads bypassing the cache and answers once the new document
// has committed (or, with wait, loaded).
func (t *Tab) reload(ctx context.Context, a protocol.Action) (outcome, error) {
	if err := t.page.Reload(ctx); err != nil {
		return outcome{}, err
	}
	return t.awaitCommit(ctx, a, "")
}

// history goes back (-1) or forward (+1) one entry.
func (t *Tab) history(ctx context.Context, a protocol.Action, delta int) (outcome, error) {
	entry, err := t.page.GoHistory(ctx, delta)
	if err != nil {
		return outcome{}, err
	}
	if entry.SameDocument {
		return outcome{barrier: true}, nil
	}
	return t.awaitCommit(ctx, a, entry.URL)
}

// awaitCommit waits until the navigation just started has changed the
// page (a new document, or a same-document move to url), then with
// a.Wait until the new document has loaded.
func (t *Tab) awaitCommit(ctx context.Context, a protocol.Action, url string) (outcome, error) {
	committed := t.waitFor(ctx, func() bool {
		return len(t.nav.changes) > 0 || (url != "" && t.nav.url == url && !t.nav.navigating)
	})
	if !committed {
		if url == "" {
			url = t.nav.url // a reload's
		}
		return outcome{}, t.notCommitted(a, url)
	}
	loader := ""
	if c := t.nav.changes; len(c) > 0 && c[len(c)-1].kind == frameNavigation {
		last := c[len(c)-1]
		loader = last.loaderID
		if last.unreachable != "" {
			// Chromium's error page: the load failed, as a navigate's
			// would (its frame is made all the same).
			return outcome{loaderID: loader}, &cdpdriver.NavigationError{URL: last.unreachable, Text: cmp.Or(last.failure, "net::ERR_FAILED")}
		}
	}
	if a.Wait {
		return outcome{loaderID: loader}, t.waitLoad(ctx, loader)
	}
	return outcome{loaderID: loader}, nil
}

// waitLoad waits for the load event of the document loaderID commits, or
// of the document the page replaced it with before it loaded.
func (t *Tab) waitLoad(ctx context.Context, loaderID string) error {
	if loaderID == "" {
		return nil
	}
	warmed := false
	loaded := func() bool {
		if !warmed && t.nav.committed(loaderID) && !t.nav.loaded[loaderID] {
			// The document's handle for framebus's functions, made
			// while the page loads: the frame's content read after the
			// load starts at once.
			warmed = true
			t.page.WarmDocument(ctx)
		}
		if t.nav.loaded[loaderID] {
			return true
		}
		// The page replaced the document before it loaded (a script or
		// meta redirect): the load waited for is that of the page the
		// agent ends up on.
		cur := t.nav.loaderID
		return cur != loaderID && t.nav.committed(loaderID) && t.nav.loaded[cur] && !t.nav.navigating
	}
	if !t.waitFor(ctx, loaded) {
		return t.loadCutShort()
	}
	return nil
}

// loadCutShort is why a wait for a load ended without it: a dialog the
// page opened meanwhile blocks it (the action is done: it returns, and
// the dialog waits for its answer), or the time ran out.
func (t *Tab) loadCutShort() error {
	t.nav.observe(t.page.TakeEvents())
	if t.nav.dialog != nil {
		return cdpdriver.ErrDialogOpened
	}
	return errPageLoadTimeout
}

// errPageLoadTimeout is DR-013's timeout error.
var errPageLoadTimeout = protocol.Errorf(protocol.CodeTimeout, "timeout waiting for page load")

// notCommitted stops a navigation to url that has not committed by the
// action's deadline (a server that does not answer, a renderer stuck in a
// loop), so it cannot land later, and says so: DR-013's timeout, and that
// the page stays where it was.
func (t *Tab) notCommitted(a protocol.Action, url string) error {
	t.stopLoading()
	return protocol.Errorf(protocol.CodeTimeout, "%v: the navigation to %s did not commit within %s; it was stopped, and the page stays at %s",
		errPageLoadTimeout, url, a.EffectiveTimeout(), t.nav.url)
}

// stopLoadingTimeout bounds cancelling a navigation after its own deadline.
const stopLoadingTimeout = 5 * time.Second

// stopLoading cancels the navigation under way, if any. Page.stopLoading
// is the browser's, so it answers while the renderer's commands are held
// back for the navigation.
func (t *Tab) stopLoading() {
	ctx, cancel := context.WithTimeout(context.Background(), stopLoadingTimeout)
	defer cancel()
	if err := t.page.StopLoading(ctx); err != nil {
		t.log.Warn().Err(err).Msg("stop loading")
		return
	}
	t.nav.observe(t.page.TakeEvents())
	// Nothing is coming now, though a navigation still asking the page
	// (its beforeunload handlers) reports no stop. One that was already
	// committing still lands, as a change of its own.
	t.nav.navigating = false
}

func (t *Tab) click(ctx context.Context, a protocol.Action) (outcome, error) {
	err := t.page.Click(ctx, a.Selector, cdpdriver.ClickOptions{Double: a.Double, Right: a.Right})
	return outcome{barrier: true, ran: inputSent(err)}, err
}

// typeText is DR-013's type: focus the selector's element if given (else
// type into the focused one), clear it if asked, insert the text, press
// the key if given. The check that the text took is the barrier, unless
// a key follows it.
func (t *Tab) typeText(ctx context.Context, a protocol.Action) (outcome, error) {
	if a.Key != "" {
		if err := cdpdriver.CheckKey(a.Key); err != nil {
			return outcome{}, err // before anything changes the page
		}
	}
	at, err := t.page.Type(ctx, a.Selector, a.Text, cdpdriver.TypeOptions{Replace: a.Clear, Keys: a.Keys})
	if err != nil {
		return outcome{barrier: true, ran: inputSent(err)}, err
	}
	if a.Key != "" {
		err := t.page.Key(ctx, a.Key, 0)
		return outcome{barrier: true, ran: true}, err // the text went in
	}
	return outcome{barrier: true, at: at}, nil
}

func (t *Tab) fill(ctx context.Context, a protocol.Action) (outcome, error) {
	a.Clear, a.Key = true, ""
	return t.typeText(ctx, a)
}

// scroll scrolls an element into view, or a scroller (the selector's, or
// the page's) to or by a point; the latter answers where it is then.
func (t *Tab) scroll(ctx context.Context, a protocol.Action) (outcome, error) {
	if a.To == "" && a.By == "" {
		err := t.page.ScrollIntoView(ctx, a.Selector)
		return outcome{barrier: true}, err
	}
	pos, by := a.To, false
	if a.By != "" {
		pos, by = a.By, true
	}
	x, y, err := protocol.ParsePoint(pos)
	if err != nil {
		return outcome{}, protocol.Errorf(protocol.CodeBadRequest, "scroll: %v", err)
	}
	at, err := t.page.Scroll(ctx, a.Selector, x, y, by)
	if err != nil {
		return outcome{}, err
	}
	raw, err := json.Marshal(at)
	return outcome{barrier: true, value: raw}, err
}

// answerDialog answers the open dialog and waits for the browser to report
// it closed, so the next action finds the page unblocked.
func (t *Tab) answerDialog(ctx context.Context, a protocol.Action) error {
	closed := t.nav.dialogsClosed
	if err := t.page.AnswerDialog(ctx, a.Answer == "accept", a.Text); err != nil {
		return err
	}
	// Closed, not "no dialog open": the answer may let the page open the
	// next one at once (two confirms in a row).
	if !t.waitFor(ctx, func() bool { return t.nav.dialogsClosed > closed }) {
		return protocol.Errorf(protocol.CodeTimeout, "the dialog was answered but the browser did not report it closed")
	}
	return nil
}

func (t *Tab) eval(ctx context.Context, a protocol.Action) (outcome, error) {
	v, err := t.page.Eval(ctx, a.Expression, a.EffectiveTimeout())
	var (
		js      *cdpdriver.JSError
		ser     *cdpdriver.SerializationError
		timeout *cdpdriver.TimeoutError
	)
	// A script that ran before it failed may have changed the page.
	var tooLarge *cdpdriver.ResultTooLargeError
	ran := errors.As(err, &js) && js.Ran || errors.As(err, &ser) || errors.As(err, &timeout) || errors.As(err, &tooLarge)
	return outcome{value: v, ran: ran}, err
}

// readyPoll bounds how long ready sleeps between looks at readyState when
// no page event wakes it.
const readyPoll = 50 * time.Millisecond

// ready is DR-013's ready: answer at once when document.readyState is
// "complete", else wait for the load; with networkIdle, then also wait for
// the network to be quiet.
func (t *Tab) ready(ctx context.Context, a protocol.Action) (outcome, error) {
	for {
		state, err := t.page.ReadyState(ctx)
		var timeout *cdpdriver.TimeoutError
		if errors.As(err, &timeout) {
			return outcome{}, errPageLoadTimeout
		}
		if err != nil {
			return outcome{}, err
		}
		if state == "complete" {
			break
		}
		poll, cancel := context.WithTimeout(ctx, readyPoll)
		t.waitFor(poll, func() bool { return t.nav.loaded[t.nav.loaderID] })
		cancel()
		if ctx.Err() != nil {
			if err := t.loadCutShort(); err != cdpdriver.ErrDialogOpened {
				return outcome{}, err
			}
			// ready changes nothing: the page is not ready, and says why.
			return outcome{}, dialogOpenError(t.nav.dialog)
		}
	}
	if a.NetworkIdle {
		_, err := t.page.WaitNetworkIdle(ctx)
		return outcome{}, err
	}
	return outcome{}, nil
}

func (t *Tab) waitForElement(ctx context.Context, a protocol.Action) (outcome, error) {
	state := cdpdriver.WaitAttached
	switch {
	case a.Visible:
		state = cdpdriver.WaitVisible
	case a.Hidden:
		state = cdpdriver.WaitHidden
	case a.Gone:
		state = cdpdriver.WaitGone
	}
	timeout := a.EffectiveTimeout()
	err := t.page.WaitFor(ctx, a.Selector, state, timeout)
	var late *cdpdriver.TimeoutError
	if errors.As(err, &late) {
		// The action's own deadline passed before the page's answer came.
		err = &cdpdriver.WaitTimeoutError{Selector: a.Selector, State: state, After: timeout}
	}
	return outcome{}, err
}

func (t *Tab) screenshot(ctx context.Context, a protocol.Action) (any, error) {
	png, err := t.page.Screenshot(ctx, cdpdriver.ScreenshotOptions{FullPage: a.FullPage, Selector: a.Selector})
	if err != nil {
		return nil, err
	}
	return cdpdriver.Base64(png), nil
}
