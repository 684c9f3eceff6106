package cdpdriver

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/rpcc"
)

// objectGroup holds the remote objects framebus creates, so they can be
// released together.
const objectGroup = "framebus"

// resolveSelectorJS finds the element and scrolls it into view when it is
// not already. The selector is an argument, never spliced into source.
// It returns the element, null when none matches, or a string saying why
// the selector is invalid.
const resolveSelectorJS = `function (selector) {` + lookupJS + `
	const found = lookup(this, selector);
	if (found.error === "invalid") return found.reason;
	if (found.error) return found.error === "staleref" ? 0 : null;
	const el = found.el;
	if (el.scrollIntoViewIfNeeded) el.scrollIntoViewIfNeeded(true);
	else el.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
	return el;
}`

// element resolves selector in the main document to a remote object.
func (p *Page) element(ctx context.Context, selector string) (runtime.RemoteObjectID, error) {
	arg, _ := json.Marshal(selector)
	var res *runtime.CallFunctionOnReply
	err := p.withDocument(ctx, func(doc runtime.RemoteObjectID) (err error) {
		res, err = p.client.Runtime.CallFunctionOn(ctx, runtime.NewCallFunctionOnArgs(resolveSelectorJS).
			SetObjectID(doc).
			SetArguments([]runtime.CallArgument{{Value: arg}}).
			SetObjectGroup(objectGroup))
		return err
	})
	if err != nil {
		return "", p.wrap(ctx, "resolve element", err)
	}
	if res.ExceptionDetails != nil {
		return "", exceptionError(res.ExceptionDetails)
	}
	switch r := res.Result; {
	case r.Type == "number":
		return "", p.refError(&StaleRefError{Ref: selector})
	case r.Type == "string":
		var reason string
		_ = json.Unmarshal(r.Value, &reason)
		return "", &InvalidSelectorError{Selector: selector, Reason: reason}
	case r.ObjectID == nil:
		return "", &ElementNotFoundError{Selector: selector}
	default:
		return *r.ObjectID, nil
	}
}

// withDocument runs call with the object id of the current document,
// fetching it again when the document was replaced since it was cached.
// While the document is pinned, a call that ran (or would run) in a later
// document fails with ErrDocumentChanged instead; the first that runs in
// the pinned one unpins it.
func (p *Page) withDocument(ctx context.Context, call func(doc runtime.RemoteObjectID) error) error {
	for attempt := 0; ; attempt++ {
		if p.moved() {
			return ErrDocumentChanged
		}
		doc, err := p.document(ctx)
		if err == nil {
			err = call(doc)
		}
		// The commit of a document is read before the answer of any
		// command that ran in it; an object gone from a pinned document
		// means the same, even before that.
		stale := err != nil && isStaleObject(err)
		if p.moved() || p.pin.Load() != 0 && stale {
			return ErrDocumentChanged
		}
		p.UnpinDocument()
		if !stale || attempt > 0 {
			return err
		}
		p.doc = ""
	}
}

// PinDocument makes the page's element functions run only in the
// document of the last main-frame commit TakeEvents handed out, until one
// has run there: the one that locates the element an action acts on, so
// an action checked against a page never acts on the next (see
// ErrDocumentChanged). UnpinDocument ends it early.
func (p *Page) PinDocument() { p.pin.Store(p.taken + 1) }

// UnpinDocument ends PinDocument. Input unpins: it acts on whatever
// document is there, and a document after it is the input's doing.
func (p *Page) UnpinDocument() { p.pin.Store(0) }

// moved says whether a document was committed after the pinned one.
func (p *Page) moved() bool {
	pin := p.pin.Load()
	return pin != 0 && p.decoder.generation.Load() != pin-1
}

// isolatedWorld names the JavaScript world framebus's element functions
// run in, one per document. A page cannot reach into it: a script that
// redefines Map, WeakRef or querySelector, or a global framebus uses,
// changes its own world only, so a snapshot ref can never be re-bound to
// another element by the page. The DOM, and events dispatched on it, are
// shared; JavaScript state of the page (its variables, handlers it set as
// properties such as el.onclick) is not, which is what eval is for.
const isolatedWorld = "framebus"

// prepareWorld has the browser make framebus's world in a new document
// while it loads, so the first action on the page does not wait ~10 ms
// for it: document's createIsolatedWorld then finds it made. It is
// called from the reader goroutine, which must never wait on a write
// (the browser may be waiting for us to read), so the command is sent
// from a goroutine of its own and its answer is not awaited.
func (p *Page) prepareWorld(frameID string) {
	go func() {
		_ = p.codec.postBlind("Page.createIsolatedWorld", page.NewCreateIsolatedWorldArgs(page.FrameID(frameID)).SetWorldName(isolatedWorld))
	}()
}

// WarmDocument makes the current document's handle for element
// functions now (framebus's world, its document object), as the page
// loads, so the first function called after the load does not wait for
// it. A failure is the first call's to meet again.
func (p *Page) WarmDocument(ctx context.Context) { _, _ = p.document(ctx) }

func (p *Page) document(ctx context.Context) (runtime.RemoteObjectID, error) {
	gen := p.decoder.generation.Load()
	if p.doc != "" && p.docGeneration == gen {
		return p.doc, nil
	}
	// Meanwhile, the page's own world is learnt, for evaluations that
	// must run in this document or not at all (see Eval).
	p.mainCtx = 0
	main := make(chan runtime.ExecutionContextID, 1)
	go func() { main <- p.mainWorld(ctx) }()
	defer func() {
		if id := <-main; id != 0 && p.docGeneration == gen {
			p.mainCtx = id
		}
	}()
	// framebus's own functions run in an isolated world: the page's
	// scripts share its DOM but not its JavaScript, so they can neither see
	// nor poison the refs registry, the snapshot function or the built-ins
	// these functions use (see isolatedWorld).
	world, err := p.client.Page.CreateIsolatedWorld(ctx, page.NewCreateIsolatedWorldArgs(page.FrameID(p.targetID)).SetWorldName(isolatedWorld))
	if err != nil {
		return "", err
	}
	reply, err := p.client.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs("document").
		SetContextID(world.ExecutionContextID).SetObjectGroup(objectGroup))
	if err != nil {
		return "", err
	}
	if reply.Result.ObjectID == nil {
		return "", errors.New("page has no document")
	}
	p.doc, p.docGeneration = *reply.Result.ObjectID, gen
	return p.doc, nil
}

// mainWorld is the id of the page's own JavaScript context, 0 when it
// cannot be told. CDP says it only in events of Runtime.enable, which
// pages can detect; V8 also writes it in the ids of the remote objects
// it makes there ("isolate.context.object"). Should that form change, an
// evaluation goes without the pin, and probeDocument still tells.
func (p *Page) mainWorld(ctx context.Context) runtime.ExecutionContextID {
	r, err := p.client.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs("document").SetObjectGroup(objectGroup))
	if err != nil || r.Result.ObjectID == nil {
		return 0
	}
	parts := strings.Split(string(*r.Result.ObjectID), ".")
	if len(parts) != 3 {
		return 0
	}
	id, err := strconv.Atoi(parts[1])
	if err != nil || id <= 0 {
		return 0
	}
	return runtime.ExecutionContextID(id)
}

// isStaleObject: the cached object belonged to a context that is gone.
func isStaleObject(err error) bool {
	var rerr *rpcc.ResponseError
	if !errors.As(err, &rerr) {
		return false
	}
	for _, m := range []string{"Cannot find context", "Could not find object", "Execution context was destroyed", "Cannot find default execution context", "Inspected target navigated or closed"} {
		if strings.Contains(rerr.Message, m) {
			return true
		}
	}
	return false
}

// release frees a remote object without waiting for the answer.
func (p *Page) release(id runtime.RemoteObjectID) {
	go func() { _ = p.client.Runtime.ReleaseObject(p.conn.Context(), runtime.NewReleaseObjectArgs(id)) }()
}
