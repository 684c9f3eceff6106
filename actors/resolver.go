package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/protocol"
)

// The resolver: how a tab runs a plan. It lives in the tab's goroutine, so
// the check of an action's basedOnSequence and the action itself happen
// with no other event or plan in between.

// runPlan resolves a plan: each action runs only while its basedOnSequence
// is the current frame, and the plan stops at the first that is not, or at
// the first failure.
//
// ctx ends when the plan is cancelled: the action running is cut short as
// at its deadline, and the plan stops there with code cancelled.
//
// No action starts once the plan's deadline has passed (expired), and
// one running then is cut short there; arrived is when the plan reached
// the tab, for the message.
func (t *Tab) runPlan(ctx context.Context, plan protocol.Plan, arrived time.Time) protocol.PlanResult {
	res := protocol.PlanResult{OK: true, Version: protocol.Version, Tab: t.id, PlanID: plan.ID, Results: []protocol.ActionResult{}}
	// After a handoff the plan goes on from the frame the person left:
	// actions planned against the handoff's frame or later are rebased
	// by the frames made meanwhile.
	var handedFrom, rebase int64
	for i, a := range plan.Actions {
		if rebase != 0 && a.BasedOnSequence != nil && *a.BasedOnSequence >= handedFrom {
			a.BasedOnSequence = protocol.Based(*a.BasedOnSequence + rebase)
		}
		if ctx.Err() != nil {
			stop(&res, i, cancelledError(plan, a), nil, t.frames.Sequence())
			break
		}
		if now := time.Now(); plan.Expired(now) {
			// Its client has stopped waiting: nothing more starts.
			stop(&res, i, expiredError(plan, i, a, arrived, now), nil, t.frames.Sequence())
			break
		}
		if err := stalledSince(t.node, plan, i, a, arrived); err != nil {
			stop(&res, i, err, nil, t.frames.Sequence()) // see stall.go
			break
		}
		a = t.withNodeTimeout(a)
		if err := protocol.ResolveUse(&a, res.Results); err != nil {
			stop(&res, i, err, nil, t.frames.Sequence())
			break
		}
		if spec, _ := protocol.LookupAction(a.Type); spec.Resource != "" {
			// A fetch or search: no page, no frame; only its guard.
			t.absorb(ctx)
			if err := t.frames.Check(a.BasedOnSequence); err != nil {
				stop(&res, i, err, a.BasedOnSequence, t.frames.Sequence())
				break
			}
			rctx, cancel := withPlanDeadline(ctx, plan)
			r := t.runResourceAction(rctx, i, a)
			cancel()
			if !t.record(ctx, &res, plan, a, r) {
				break
			}
			continue
		}
		// The action's deadline runs from here: waiting for the page's
		// own navigation to land counts against it.
		deadline := time.Now().Add(a.EffectiveTimeout())
		if !plan.Deadline.IsZero() && plan.Deadline.Before(deadline) {
			deadline = plan.Deadline // nobody waits for it past then
		}
		t.frameUserInput(ctx) // a person's input so far is a frame before the check
		t.absorb(ctx)         // everything received so far counts before the check
		if err := t.personRefusal(a); err != nil {
			stop(&res, i, err, nil, t.frames.Sequence())
			break
		}
		unlanded := t.landPageNavigation(ctx, deadline, a)
		err := t.frames.Check(a.BasedOnSequence)
		if spec, _ := protocol.LookupAction(a.Type); err == nil && unlanded == nil && t.pending != nil && spec.Mutates {
			// The last frame's content is read before this action can
			// change the page: wait (bounded) for its document's load,
			// for half the action's time at most, so it still has the
			// rest to run.
			t.settlePending(ctx, true, time.Now().Add(time.Until(deadline)/2))
			t.absorb(ctx)
			err = t.frames.Check(a.BasedOnSequence)
		}
		if err == nil && loadsDocument[a.Type] && t.nav.navigating && t.nav.dialog == nil {
			// The action replaces a navigation the page has under way
			// (which may hang): cancel that first, so it cannot commit
			// under the action. One that committed already is the
			// page's frame, before the check.
			t.stopLoading()
			t.absorb(ctx)
			err = t.frames.Check(a.BasedOnSequence)
		}
		if err == nil && t.lost() {
			// Its page is gone: the tab's state is only what it was.
			err = protocol.Errorf(protocol.CodeTabClosed, "tab %s closed while the plan waited", t.id)
		}
		if err != nil {
			stop(&res, i, err, a.BasedOnSequence, t.frames.Sequence())
			break
		}
		if d := t.nav.dialog; d != nil && !worksDuringDialog[a.Type] {
			stop(&res, i, dialogOpenError(d), nil, t.frames.Sequence())
			break
		}
		if t.nav.crashed && !worksCrashed[a.Type] {
			// Nothing would answer: fail now, not at the deadline.
			stop(&res, i, protocol.Errorf(protocol.CodePageCrashed, "the page crashed; navigate, reload, back or forward to load one again"), nil, t.frames.Sequence())
			break
		}
		if unlanded != nil {
			stop(&res, i, unlanded, nil, t.frames.Sequence())
			break
		}
		if now := time.Now(); plan.Expired(now) {
			stop(&res, i, expiredError(plan, i, a, arrived, now), nil, t.frames.Sequence())
			break
		}
		if err := stalledSince(t.node, plan, i, a, arrived); err != nil {
			stop(&res, i, err, nil, t.frames.Sequence())
			break
		}
		if !time.Now().Before(deadline) {
			// Sent now, it would still reach the browser and run, after
			// the agent was told it timed out.
			stop(&res, i, protocol.Errorf(protocol.CodeTimeout, "the %s's %s passed while the page settled, before it could run; it was not sent", a.Type, a.EffectiveTimeout()), nil, t.frames.Sequence())
			break
		}
		var r protocol.ActionResult
		switch a.Type {
		case "handoff":
			var from int64
			r, from = t.handoff(ctx, deadline, plan, i, a)
			if r.OK {
				// handedFrom as the plan numbers frames, before rebasing.
				handedFrom, rebase = from-rebase, rebase+r.Sequence-from
			}
		case "ask":
			r = t.ask(ctx, deadline, plan, i, a)
		default:
			r = t.execute(ctx, deadline, plan, i, a)
		}
		if r.Code == protocol.CodeTimeout && deadline.Equal(plan.Deadline) && plan.Expired(time.Now()) {
			// Its own timeout was not what ended it.
			r.Error += fmt.Sprintf(" (cut short at plan %s's deadline, %s)", plan.ID, plan.Deadline.UTC().Format(time.RFC3339Nano))
		}
		if !t.record(ctx, &res, plan, a, r) {
			break
		}
	}
	res.Sequence = t.frames.Sequence()
	return res
}

// record adds an action's result to the plan's, and reports whether the
// plan goes on: a failed action stops it there.
func (t *Tab) record(ctx context.Context, res *protocol.PlanResult, plan protocol.Plan, a protocol.Action, r protocol.ActionResult) bool {
	if !r.OK && ctx.Err() != nil {
		// Cut short by the cancel, whatever the driver made of it.
		err := cancelledError(plan, a)
		r.Code, r.Error = protocol.CodeOf(err), err.Error()
	}
	res.Results = append(res.Results, r)
	if !r.OK {
		stop(res, r.Index, &protocol.Error{Code: r.Code, Message: r.Error}, nil, t.frames.Sequence())
		return false
	}
	res.Executed++
	return true
}

// worksCrashed are the actions a crashed page can still take: those that
// load a document, which the browser does without the dead renderer, and
// url and network, which the tab knows.
var worksCrashed = map[string]bool{"navigate": true, "reload": true, "back": true, "forward": true, "url": true, "network": true}

// worksDuringDialog are the actions a page blocked by a dialog can still
// take: dialog, which answers it, and network, which the tab knows.
var worksDuringDialog = map[string]bool{"dialog": true, "network": true}

// loadsDocument are the actions that start a navigation of their own,
// from the browser, replacing any the page has under way.
var loadsDocument = map[string]bool{"navigate": true, "reload": true, "back": true, "forward": true}

// givesActivation are the actions whose input (Input.dispatchMouseEvent,
// dispatchKeyEvent, insertText) gives the page a user activation, as a
// person's click or key does: a navigation its scripts start a moment
// later carries a user gesture that is the agent's (see sourceOf).
var givesActivation = map[string]bool{"click": true, "drag": true, "type": true, "fill": true, "key": true, "select": true}

// landPageNavigation waits, within the action's deadline, for a
// navigation the page started on its own (a timer, a redirect) and that
// is still on its way, so that it becomes the page's frame before the
// check instead of landing during the action and passing for the
// action's. Chromium holds the renderer's commands back until the
// navigation commits and then runs them in the new document, which the
// check never saw: so an action still waiting at its deadline is not
// sent, and fails with the error returned. The actions that need no
// renderer do not wait: url answers what has committed, and those that
// load a document replace the navigation (see runPlan).
func (t *Tab) landPageNavigation(ctx context.Context, deadline time.Time, a protocol.Action) error {
	if !t.nav.navigating || t.nav.dialog != nil || worksCrashed[a.Type] {
		return nil
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	t.waitFor(wctx, func() bool { return !t.nav.navigating || t.nav.dialog != nil })
	t.absorb(ctx)
	if !t.nav.navigating || t.nav.dialog != nil {
		return nil
	}
	return protocol.Errorf(protocol.CodeTimeout,
		"the page is navigating to %s, by itself, and it has not committed within %s; the %s was not sent, since the browser would hold it back and run it in that next document: try again once it has loaded, or navigate elsewhere",
		t.nav.pendingNavigation(), a.EffectiveTimeout(), a.Type)
}

// withPlanDeadline bounds ctx by the plan's deadline, if it has one.
func withPlanDeadline(ctx context.Context, plan protocol.Plan) (context.Context, context.CancelFunc) {
	if plan.Deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, plan.Deadline)
}

// expiredError is the error of action i of a plan whose deadline had
// passed at now, before the action started. A deadline that had passed
// already when the plan arrived is said so, with by how much: a client
// sends a plan well before its deadline (but for a resend), so either
// the plan waited that long on the way (a frozen node, a partition) or
// the client's clock is behind this node's.
func expiredError(plan protocol.Plan, i int, a protocol.Action, arrived, now time.Time) error {
	deadline := plan.Deadline.UTC().Format(time.RFC3339Nano)
	what := fmt.Sprintf("action %d (%s)", i, a.Type)
	if i == 0 {
		what = "its first action (" + a.Type + ")"
	}
	if !arrived.IsZero() && !arrived.Before(plan.Deadline) {
		return protocol.Errorf(protocol.CodeExpired,
			"plan %s's deadline %s had passed %s before the plan reached this node (by its clock): the plan waited that long on its way (a frozen node, a partition, a resend after a reconnect), or its sender's clock is behind this node's (nodes and clients need synchronised clocks); nothing of it ran",
			plan.ID, deadline, arrived.Sub(plan.Deadline).Round(time.Millisecond))
	}
	return protocol.Errorf(protocol.CodeExpired,
		"plan %s's deadline %s passed %s before %s could start: it and the actions after it did not run",
		plan.ID, deadline, now.Sub(plan.Deadline).Round(time.Millisecond), what)
}

// cancelledError is the error of action a of a cancelled plan.
func cancelledError(plan protocol.Plan, a protocol.Action) error {
	return protocol.Errorf(protocol.CodeCancelled, "plan %s was cancelled at its %s", plan.ID, a.Type)
}

// withNodeTimeout gives an action that sets no timeout, and has no
// declared default of its own, the node's.
func (t *Tab) withNodeTimeout(a protocol.Action) protocol.Action {
	if spec, _ := protocol.LookupAction(a.Type); a.Timeout == 0 && spec.DefaultTimeout == 0 && t.actionTimeout > 0 {
		a.Timeout = protocol.Duration(t.actionTimeout)
	}
	return a
}

// execute runs one action whose guard passed and settles it into one
// frame, by the deadline.
func (t *Tab) execute(ctx context.Context, deadline time.Time, plan protocol.Plan, index int, a protocol.Action) protocol.ActionResult {
	r := protocol.ActionResult{Index: index, Type: a.Type}
	h, ok := handlers[a.Type]
	if !ok {
		r.Code, r.Error = protocol.CodeBadRequest, fmt.Sprintf("action %q is not implemented by this node", a.Type)
		return r
	}
	t.flush() // frames so far go out before the page changes again
	spec, _ := protocol.LookupAction(a.Type)
	actx, cancel := cdpdriver.WithDeadline(ctx, deadline, a.EffectiveTimeout())
	defer cancel()
	// An action blocked by a dialog it opened (a click whose handler calls
	// confirm) is done: it returns, and the dialog waits for its answer.
	gctx, release := actx, context.CancelFunc(func() {})
	if a.Type != "dialog" { // which answers the dialog the guard is about
		gctx, release = t.page.Guard(actx, !worksCrashed[a.Type])
	}
	if spec.Mutates {
		if doc := t.page.Document(); t.settles && t.tracked != doc && t.nav.dialog == nil {
			// A document the tracker is not in yet (another agent's
			// navigation, a reload): put it there before the action,
			// so the settle after it sees the timers it sets.
			if t.page.TrackActivity(gctx) == nil {
				t.tracked = doc
			}
		}
		t.actionStart = time.Now()
	}
	if spec.Mutates && !loadsDocument[a.Type] {
		// The element the action acts on is looked up in the document
		// the check saw, or not at all (see PinDocument).
		t.page.PinDocument()
	}
	out, err := h(t, gctx, a)
	if givesActivation[a.Type] {
		// Its input activates the page as a person's would.
		t.nav.agentInput = time.Now()
	}
	t.page.UnpinDocument()
	release()
	evalBlocked := false
	if errors.Is(err, cdpdriver.ErrDialogOpened) {
		// An eval blocked by a dialog it opened cannot answer its value,
		// which an ok without one would pass off as undefined.
		evalBlocked = a.Type == "eval"
		err, out = nil, outcome{ran: evalBlocked}
	}
	// Settling waits on the renderer too: a dialog that opens meanwhile
	// (the next one, after a dialog action's answer) ends the wait.
	sctx, release := t.page.Guard(actx, !worksCrashed[a.Type])
	t.settle(sctx, out, spec.Mutates)
	release()
	if t.lost() {
		// Closed under the action: whatever it did went with the tab.
		r.Code, r.Error = protocol.CodeTabClosed, fmt.Sprintf("tab %s closed while the %s ran", t.id, a.Type)
		return r
	}
	switch {
	case err == nil && out.loaderID != "" && !t.nav.committed(out.loaderID) && t.nav.dialog == nil:
		// The navigation never committed within the deadline (a hung
		// page, a server that never answers): it failed, whatever
		// Page.navigate said; cancel it so it cannot land later.
		err = t.notCommitted(a, t.nav.pendingNavigation())
	case spec.Mutates && t.nav.navigating && t.nav.dialog == nil && !t.nav.crashed && actx.Err() != nil:
		// A navigation that started during the action (a link, a form,
		// a script: the action's, see settle) has not committed by the
		// deadline. Stop it, so it cannot land later as the page's,
		// and so that what Chromium held back of the action for the
		// next document runs, if at all, in this one. (One that the
		// document the action loaded starts as it loads, a script
		// redirect, seen only once settling is done, is the page's: it
		// goes on and lands as its own frame.)
		to := t.nav.pendingNavigation()
		t.stopLoading()
		if err == nil || codeOf(err) == protocol.CodeTimeout {
			out.ran = out.ran || err == nil // it did what it does: a frame
			err = protocol.Errorf(protocol.CodeTimeout, "a navigation to %s started by the %s did not commit within %s; it was stopped, and the page stays at %s",
				to, a.Type, a.EffectiveTimeout(), t.nav.url)
		}
	}
	if evalBlocked && err == nil {
		err = protocol.Errorf(protocol.CodeDialogOpen, "the expression opened a JavaScript dialog, which waits for its answer (dialog accept [text] or dialog dismiss): its value cannot come back")
		if d := t.nav.dialog; d != nil {
			err = protocol.Errorf(protocol.CodeDialogOpen, "the expression opened a JavaScript %s (%q), which waits for its answer (dialog accept [text] or dialog dismiss): its value cannot come back", d.Type, d.Message)
		}
	}
	t.reportDialogs()
	if denied := t.reportBlocked(); denied != nil {
		// The whitelist refused a navigation the action caused: that is
		// what the action did, whatever the browser said of it.
		err = denied
	}
	var tooLarge *cdpdriver.CommandTooLargeError
	if errors.As(err, &tooLarge) {
		err = protocol.Errorf(protocol.CodeBadRequest, "%v", tooLarge) // without the call it cut short
	}
	if err != nil {
		r.Code, r.Error = codeOf(err), err.Error()
	} else {
		r.OK = true
		r.Value = out.value
	}
	changes := t.nav.takeChanges()
	if !spec.Mutates || errors.Is(err, cdpdriver.ErrPageCrashed) || errors.Is(err, cdpdriver.ErrDocumentChanged) {
		// A read-only action changes nothing: whatever changed while it
		// ran (a timer, a redirect, a person) was not its doing. Nor is
		// a crash that cut an action short: the crash is its own frame;
		// nor the new document an action was refused for.
		for _, c := range changes {
			t.frameFor(ctx, c, frames.Change{Action: c.kind, Source: c.source})
		}
		switch {
		case errors.Is(err, cdpdriver.ErrRanInNewDocument):
			r.Error = fmt.Sprintf("the page moved on to %s by itself (frame %d) as the eval was sent, and Chromium ran it in that new document; its value is left out: plan against the new frame",
				t.nav.url, t.frames.Sequence())
		case errors.Is(err, cdpdriver.ErrDocumentChanged):
			r.Error = fmt.Sprintf("the page moved on to %s by itself (frame %d) before the %s could run; nothing was done: plan against the new frame",
				t.nav.url, t.frames.Sequence(), a.Type)
		}
		return r
	}
	if err != nil && len(changes) == 0 && !out.ran {
		return r // it failed before it changed anything
	}
	change := frames.Change{Action: a.Type, Source: protocol.SourceAgent, PlanID: plan.ID, Agent: plan.Agent,
		Format: frames.Format(plan.FullPage), Policy: frames.Policy(plan.FullPagePolicy)}
	if t.person.acting {
		change.Source = protocol.SourceUser // a person's navigation (person.go)
	}
	if t.restoring != "" {
		// The node's own navigate, bringing the tab back (restore.go).
		change = frames.Change{Action: protocol.FrameRestore, Source: protocol.SourceNode}
	}
	var f protocol.Frame
	if len(changes) == 0 {
		f = t.frameFor(ctx, pageChange{url: t.nav.url, status: t.nav.status}, change)
	} else {
		// Every change the action caused settles into its one frame,
		// carrying the final state.
		f = t.frameFor(ctx, changes[len(changes)-1], change)
	}
	r.Sequence, r.URL, r.Title, r.Status = f.Sequence, f.URL, f.Title, f.Status
	return r
}

// settle waits, within the action's deadline, until the navigation the
// action started (if any) has committed or ended. A read-only action
// (mutates false) starts none, and does not wait for the page's.
func (t *Tab) settle(ctx context.Context, out outcome, mutates bool) {
	t.nav.observe(t.page.TakeEvents())
	if t.nav.dialog != nil {
		return // the page is blocked until the dialog is answered
	}
	// A dead renderer answers nothing, and one whose next document is on
	// its way answers only from that document: the commit tells more.
	if out.barrier && !t.nav.crashed && !t.nav.navigating {
		if out.at != nil {
			t.located(*out.at)
		} else {
			t.barrier(ctx)
		}
	} else {
		t.nav.observe(t.page.TakeEvents())
	}
	if out.loaderID != "" {
		t.waitFor(ctx, func() bool { return t.nav.committed(out.loaderID) })
	}
	if mutates {
		// A navigation the page requested during the action (a link, a
		// form, a script) belongs to the action too.
		t.waitFor(ctx, func() bool { return !t.nav.navigating })
	}
	if t.nav.title == "" && t.nav.dialog == nil && !t.nav.crashed && len(t.nav.changes) > 0 {
		// A new document: read the title it has so far, which the frame
		// and the reply carry. Once it has loaded, the browser has it
		// (a renderer round trip would wait behind its first layout);
		// one it reports as the URL may be no title, or that title.
		if t.nav.loaded[t.nav.loaderID] && ctx.Err() == nil {
			if loc, err := t.page.BrowserLocation(ctx); err == nil && loc.URL == t.nav.url && !urlTitle(loc.Title, loc.URL) {
				t.located(loc)
				return
			}
		}
		t.barrier(ctx)
	}
}

// barrier makes sure the events the action caused in the renderer have
// reached us: a renderer round trip after the action, and its answer also
// refreshes URL and title.
func (t *Tab) barrier(ctx context.Context) {
	if ctx.Err() != nil {
		// Past the deadline nothing more goes to the browser.
		t.nav.observe(t.page.TakeEvents())
		return
	}
	url, title, err := t.page.Location(ctx)
	if err != nil {
		t.nav.observe(t.page.TakeEvents())
		return
	}
	t.located(cdpdriver.Location{URL: url, Title: title})
}

// located takes in the events received up to a renderer round trip that
// saw the page at loc, and the title it saw.
func (t *Tab) located(loc cdpdriver.Location) {
	t.nav.observe(t.page.TakeEvents())
	if !t.nav.navigating && loc.URL == t.nav.url {
		t.nav.title = loc.Title
	}
}

// stop records that a plan stopped at action i with err.
func stop(res *protocol.PlanResult, i int, err error, expected *int64, current int64) {
	res.OK, res.Code, res.Error = false, protocol.CodeOf(err), err.Error()
	res.Stopped = &protocol.Stop{Index: i, Code: res.Code, Expected: expected, Current: current}
}

// codeOf maps driver errors to protocol codes.
func codeOf(err error) protocol.Code {
	var (
		nav       *cdpdriver.NavigationError
		nf        *cdpdriver.ElementNotFoundError
		nv        *cdpdriver.ElementNotVisibleError
		offPage   *cdpdriver.ElementOffPageError
		sel       *cdpdriver.InvalidSelectorError
		js        *cdpdriver.JSError
		ser       *cdpdriver.SerializationError
		timeout   *cdpdriver.TimeoutError
		perr      *protocol.Error
		opt       *cdpdriver.OptionNotFoundError
		covered   *cdpdriver.ElementCoveredError
		noHistory *cdpdriver.NoHistoryError
		in        *cdpdriver.InputError
		wait      *cdpdriver.WaitTimeoutError
		staleRef  *cdpdriver.StaleRefError
		unknown   *cdpdriver.UnknownRefError
		badURL    *cdpdriver.InvalidURLError
		tooLarge  *cdpdriver.ResultTooLargeError
	)
	switch {
	case errors.As(err, &perr):
		return perr.Code
	case errors.As(err, &nav):
		return protocol.CodeNavigationFailed
	case errors.As(err, &badURL):
		return protocol.CodeBadRequest
	case errors.As(err, &nf), errors.As(err, &opt):
		return protocol.CodeElementNotFound
	case errors.As(err, &nv), errors.As(err, &offPage):
		return protocol.CodeNotVisible
	case errors.As(err, &staleRef):
		return protocol.CodeStaleRef
	case errors.As(err, &unknown):
		return protocol.CodeBadRequest
	case errors.As(err, &covered):
		return protocol.CodeElementCovered
	case errors.As(err, &noHistory):
		return protocol.CodeNoHistory
	case errors.As(err, &in):
		return protocol.CodeBadRequest
	case errors.As(err, &wait):
		return protocol.CodeTimeout
	case errors.Is(err, cdpdriver.ErrDialogOpened):
		return protocol.CodeDialogOpen
	case errors.Is(err, cdpdriver.ErrPageCrashed):
		return protocol.CodePageCrashed
	case errors.Is(err, cdpdriver.ErrDocumentChanged):
		return protocol.CodeStaleFrame
	case errors.As(err, &sel):
		return protocol.CodeBadRequest
	case errors.As(err, &tooLarge):
		return protocol.CodeResultTooLarge
	case errors.As(err, &js), errors.As(err, &ser):
		return protocol.CodeJSError
	case errors.As(err, &timeout):
		return protocol.CodeTimeout
	case errors.Is(err, cdpdriver.ErrConnectionLost):
		return protocol.CodeTabClosed
	}
	return protocol.CodeInternal
}
