package cdpdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/rpcc"
)

// Page operations on an element run as one Runtime.callFunctionOn on the
// document: the selector and every other input are arguments, never spliced
// into source, so no selector can inject script. Each function starts with
// findElementJS and answers {error: ...} or its data, by value.

// lookupJS defines lookup(root, selector): the element a selector or a
// snapshot ref (e12) names, as {el} or {error}. A selector matches in the
// document first, then inside open shadow roots, each on its own (a
// selector does not span a shadow boundary). A ref is looked up in the
// page's ref registry (snapshot.js); a ref whose element is gone is
// "staleref", never re-bound to another element.
const lookupJS = `
	const lookup = (root, selector) => {
		if (/^e\d+$/.test(selector)) {
			const reg = window.__framebusRefs, w = reg && reg.byRef.get(selector);
			const el = w && w.deref();
			// A frame's document that was replaced or removed keeps its
			// elements connected to it, but has no window.
			return el && el.isConnected && el.ownerDocument.defaultView ? {el} : {error: "staleref"};
		}
		let el;
		try { el = root.querySelector(selector); } catch (e) { return {error: "invalid", reason: "" + e.message}; }
		// Not in the document's own tree: the first match inside an open
		// shadow root (web components), as a user sees them in the page.
		const inShadows = (scope) => {
			for (const host of scope.querySelectorAll("*")) {
				if (!host.shadowRoot) continue;
				const found = host.shadowRoot.querySelector(selector) || inShadows(host.shadowRoot);
				if (found) return found;
			}
			return null;
		};
		if (!el) el = inShadows(root);
		return el ? {el} : {error: "notfound"};
	};
`

// findElementJS is the prologue of an element function: it binds el or
// returns why it cannot.
const findElementJS = lookupJS + `
	const found = lookup(this, selector);
	if (found.error) return found;
	const el = found.el;
`

// describeJS names an element for messages: tag, id and up to two classes
// (div#overlay.modal.open).
const describeJS = `
	const describe = (n) => {
		if (!n || !n.tagName) return "" + n;
		let s = n.tagName.toLowerCase();
		if (n.id) s += "#" + n.id;
		for (const c of Array.from(n.classList || []).slice(0, 2)) s += "." + c;
		return s;
	};
`

// elementReply is the common part of an element function's answer.
type elementReply struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
	By     string `json:"by"`
	// Size and Limit of a value too large to return (Reason names it).
	Size  int `json:"size"`
	Limit int `json:"limit"`
	// OffPage says where an element out of the user's reach lies.
	OffPage *offPageReply `json:"offpage"`
}

// offPageReply is offPage's answer (offPageJS).
type offPageReply struct {
	X, Y  int
	Side  string
	Fixed bool
	Area  [4]int
}

// err turns the answer's error into the driver's error types.
func (r elementReply) err(selector string) error {
	switch r.Error {
	case "":
		return nil
	case "invalid":
		return &InvalidSelectorError{Selector: selector, Reason: r.Reason}
	case "notfound":
		return &ElementNotFoundError{Selector: selector}
	case "staleref":
		return &StaleRefError{Ref: selector}
	case "invisible":
		return &ElementNotVisibleError{Selector: selector, Why: r.Reason}
	case "offpage":
		if o := r.OffPage; o != nil {
			return &ElementOffPageError{Selector: selector, X: o.X, Y: o.Y, Side: o.Side, Fixed: o.Fixed, Area: o.Area}
		}
	case "covered":
		return &ElementCoveredError{Selector: selector, By: r.By}
	case "timeout":
		return &InputError{} // WaitFor turns it into a WaitTimeoutError
	case "nooption":
		return &OptionNotFoundError{Selector: selector, Value: r.Reason}
	case "uninstalled":
		return errUninstalled
	case "toolarge":
		return &ResultTooLargeError{What: r.Reason, Size: r.Size, Limit: r.Limit}
	}
	return &InputError{Msg: r.Reason}
}

// errUninstalled: a function framebus installs in a document once (see
// installed.go) is not there yet.
var errUninstalled = errors.New("not installed in this document")

// callOnDocument runs function(selector, args...) with this = document and
// decodes its by-value answer into out (nil when only an error matters).
// await makes a returned promise be awaited.
func (p *Page) callOnDocument(ctx context.Context, op, selector, fn string, await bool, out answer, args ...any) error {
	callArgs := make([]runtime.CallArgument, 0, len(args)+1)
	for _, a := range append([]any{selector}, args...) {
		raw, err := json.Marshal(a)
		if err != nil {
			return fmt.Errorf("%s: argument: %w", op, err)
		}
		callArgs = append(callArgs, runtime.CallArgument{Value: raw})
	}
	var res callReply
	err := p.withDocument(ctx, func(doc runtime.RemoteObjectID) (err error) {
		res = callReply{}
		return rpcc.Invoke(ctx, "Runtime.callFunctionOn", runtime.NewCallFunctionOnArgs(fn).
			SetObjectID(doc).
			SetArguments(callArgs).
			SetReturnByValue(true).
			SetAwaitPromise(await), &res, p.conn)
	})
	if err != nil {
		return p.wrap(ctx, op, err)
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("%s: %w", op, exceptionError(res.ExceptionDetails))
	}
	if len(res.Value) == 0 {
		return nil
	}
	if out == nil {
		out = &elementReply{}
	}
	head := out.head()
	*head = elementReply{} // a reused answer keeps no old error
	// Decoded once (the reply was checked whole on arrival), by the
	// answer itself when it knows a quicker way: a snapshot's is large.
	var derr error
	if u, ok := out.(json.Unmarshaler); ok {
		derr = u.UnmarshalJSON(res.Value)
	} else {
		derr = json.Unmarshal(res.Value, out)
	}
	if derr != nil {
		return fmt.Errorf("%s: unexpected answer %s: %w", op, truncateForError(res.Value), derr)
	}
	return p.refError(head.err(selector))
}

// refError tells a ref this tab never gave out from one whose element is
// gone: the page sees both as naming nothing.
func (p *Page) refError(err error) error {
	var stale *StaleRefError
	if !errors.As(err, &stale) {
		return err
	}
	if n, perr := strconv.Atoi(stale.Ref[1:]); perr != nil || n >= p.nextRef {
		return &UnknownRefError{Ref: stale.Ref, Last: max(p.nextRef-1, 0)}
	}
	return err
}

// callReply is Runtime.callFunctionOn's reply with the value left raw.
// Chromium writes a value returned by value as
// {"result":{"type":"object","value":VALUE}}: that value is cut where it
// stands, found with a scan that jumps over strings, not decoded twice
// as cdp's reply type would.
type callReply struct {
	Value            json.RawMessage
	ExceptionDetails *runtime.ExceptionDetails
}

func (r *callReply) UnmarshalJSON(b []byte) error {
	if rest, ok := bytes.CutPrefix(b, []byte(`{"result":{"type":"object","value":`)); ok {
		if end := objectEnd(rest); end > 0 && string(rest[end:]) == "}}" {
			r.Value = json.RawMessage(rest[:end])
			return nil
		}
	}
	var full struct {
		Result           runtime.RemoteObject      `json:"result"`
		ExceptionDetails *runtime.ExceptionDetails `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(b, &full); err != nil {
		return err
	}
	r.Value, r.ExceptionDetails = full.Result.Value, full.ExceptionDetails
	return nil
}

// answer is what a function called on the document answers: a struct that
// embeds elementReply, whose fields say what went wrong.
type answer interface{ head() *elementReply }

// head gives callOnDocument an answer's error fields.
func (r *elementReply) head() *elementReply { return r }

// truncateForError keeps an unexpected answer short in an error message.
func truncateForError(v []byte) []byte {
	const max = 200
	if len(v) <= max {
		return v
	}
	return append(v[:max:max], "..."...)
}

type runtimeObjectID = runtime.RemoteObjectID

// callOn is a by-value call of fn with this = obj and no arguments.
func callOn(obj runtime.RemoteObjectID, fn string) *runtime.CallFunctionOnArgs {
	return runtime.NewCallFunctionOnArgs(fn).SetObjectID(obj).SetReturnByValue(true)
}

func asInput(err error, target **InputError) bool { return errors.As(err, target) }
