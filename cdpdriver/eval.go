package cdpdriver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/rpcc"
)

// Eval evaluates a JavaScript expression the way DR-014 specifies:
// Runtime.evaluate with awaitPromise, so promises are awaited, and the
// result returned by value as JSON. A nil value means undefined (or a value
// JSON cannot carry, like a DOM node); JSON null is "null", which NaN and
// ±Infinity also give, as JSON.stringify writes them. The value comes
// as Chromium's deep serialization (see jsvalue.go), returnByValue's
// superset, because plain returnByValue turns a DOM node into {}.
//
// timeout bounds the whole evaluation, including an awaited promise, and is
// also passed to Chromium so a synchronous endless loop is terminated. On
// timeout the error is a *TimeoutError and the page stays usable.
//
// A value longer than the page's result limit (SetResultLimit) is a
// *ResultTooLargeError at once: the page checks it before returning it,
// and so a thrown value and a promise's reason. Only an expression can be
// checked so; a script of statements (let x = ...; x), which cannot be
// wrapped in the check, is evaluated unchecked, and what it gives is
// bounded by the transport: a reply longer than the page's messages may
// be (see boundMessages) is discarded as it streams, and is a
// *ResultTooLargeError too.
func (p *Page) Eval(ctx context.Context, expression string, timeout time.Duration) (json.RawMessage, error) {
	ctx, cancel := WithTimeout(ctx, timeout)
	defer cancel()
	expression = p.objectLiteral(ctx, expression)
	if guarded, ok := guardedExpression(expression, p.resultLimit); ok {
		v, err := p.evaluate(ctx, guarded, timeout)
		var js *JSError
		if !errors.As(err, &js) || js.Ran {
			return v, err
		}
		// A syntax error in the check's parentheses: statements, or an
		// expression that does not parse, which then says so itself.
	}
	return p.evaluate(ctx, expression, timeout)
}

// evaluate is one evaluation of Eval, in the pinned document or nowhere.
func (p *Page) evaluate(ctx context.Context, expression string, timeout time.Duration) (json.RawMessage, error) {
	start := time.Now()
	if p.moved() {
		return nil, ErrDocumentChanged // known before it is sent
	}
	args := EvalArgs(expression, timeout)
	pinned := p.pinnedDocument()
	contextPinned := pinned && p.mainCtx != 0
	if contextPinned {
		// In the pinned document's context, or nowhere: Chromium holds a
		// command back for a navigation on its way and then runs it in
		// the next document, whose context this is not.
		args.SetContextID(p.mainCtx)
	}
	probe, probing := p.probeDocument(pinned && !contextPinned)
	reply, err := p.client.Runtime.Evaluate(ctx, args)
	if probing && isStaleObject(p.codec.postedError(probe)) {
		// The pinned document was gone when the evaluation came.
		if contextGone(err) {
			return nil, ErrDocumentChanged // and so it did not run
		}
		return nil, ErrRanInNewDocument
	}
	if pinned && contextGone(err) {
		return nil, ErrDocumentChanged
	}
	if err != nil {
		if tooLarge, ok := replyTooLong(err, "the eval value"); ok {
			return nil, tooLarge
		}
		var rerr *rpcc.ResponseError
		if errors.As(err, &rerr) && isSerializationFailure(rerr.Message) {
			return nil, &SerializationError{Reason: serializationReason(rerr.Message)}
		}
		if p.navigatedAway(err) {
			// An awaited promise whose document was replaced.
			return nil, &JSError{Text: "the page navigated away before the evaluation finished", Ran: true}
		}
		// When the termination lands while Chromium is wrapping up the
		// result, it answers with a bare internal error instead of the
		// "terminated" exception; past the deadline that is the timeout.
		if errors.As(err, &rerr) && rerr.Code == rpcInternalError && timeout > 0 && time.Since(start) >= timeout {
			return nil, &TimeoutError{Op: "evaluation", After: timeout}
		}
		return nil, p.wrap(ctx, "evaluation", err)
	}
	if !contextPinned && !probing && p.moved() {
		// Neither pin nor probe could be made, and a new document came
		// meanwhile: most likely Chromium held the evaluation back for
		// it and ran it there. (Pinned to its context, an evaluation
		// that answered ran in the pinned document, whatever came after.)
		return nil, ErrRanInNewDocument
	}
	if reply.ExceptionDetails != nil {
		if tooLarge, ok := tooLargeException(reply.ExceptionDetails); ok {
			return nil, tooLarge
		}
		if isTerminated(reply.ExceptionDetails) {
			return nil, &TimeoutError{Op: "evaluation", After: timeout}
		}
		return nil, exceptionError(reply.ExceptionDetails)
	}
	return resultValue(reply.Result, p.resultLimit)
}

// probeDocument posts, ahead of an evaluation that cannot be pinned to
// its document's context, a call on the pinned document that does
// nothing (it costs the renderer ~0.2 ms, so only then). The browser runs
// a session's commands in order, in the same document (both are held
// back for a navigation on its way, and run in the next document,
// together), so its failing says the evaluation did not run in the
// pinned document. It needs the document's object at hand (the frame's
// content read at load fetched it); without it there is no probe.
func (p *Page) probeDocument(pinned bool) (uint64, bool) {
	if !pinned {
		return 0, false
	}
	id, err := p.codec.post("Runtime.callFunctionOn", runtime.NewCallFunctionOnArgs("function () {}").SetObjectID(p.doc))
	return id, err == nil
}

// contextGone: the evaluation's context was gone before it could run.
func contextGone(err error) bool {
	var rerr *rpcc.ResponseError
	return errors.As(err, &rerr) && strings.Contains(rerr.Message, "Cannot find context with specified id")
}

// pinnedDocument says whether a document is pinned and its objects are
// at hand (the document's, its page context's).
func (p *Page) pinnedDocument() bool {
	pin := p.pin.Load()
	return pin != 0 && p.doc != "" && p.docGeneration == pin-1
}

// objectLiteral reads an expression in braces the way the DevTools console
// does, so DR-014's `{a: 1, b: 2}` is an object, not a block with a label
// that fails to parse: when it parses in parentheses it is wrapped in
// them, otherwise (`{ let x = 1; x }`) it is left as it is. The check
// evaluates `0 && (expression)`, which parses the expression and never
// runs it, so an exception can only be a syntax error; no eval() is
// involved, so a page's CSP cannot get in the way. Only expressions in
// braces pay for it.
func (p *Page) objectLiteral(ctx context.Context, expression string) string {
	t := strings.TrimSpace(expression)
	if !strings.HasPrefix(t, "{") || !strings.HasSuffix(t, "}") {
		return expression
	}
	// The newline keeps a trailing line comment from swallowing the ")".
	wrapped := "(" + expression + "\n)"
	r, err := p.client.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs("0 && "+wrapped).SetReturnByValue(true).SetSilent(true))
	if err != nil || r.ExceptionDetails != nil {
		return expression
	}
	return wrapped
}

// EvalArgs is the exact Runtime.evaluate command Eval sends, exported so a
// benchmark can send the same command on a raw connection.
func EvalArgs(expression string, timeout time.Duration) *runtime.EvaluateArgs {
	return runtime.NewEvaluateArgs(expression).
		SetAwaitPromise(true).
		SetSerializationOptions(deepSerialization).
		SetTimeout(runtime.TimeDelta(timeout.Milliseconds()))
}

// resultValue turns the evaluation's result into JSON of at most max
// bytes (0: no limit).
func resultValue(r runtime.RemoteObject, max int) (json.RawMessage, error) {
	d := r.DeepSerializedValue
	if d == nil {
		return nil, nil
	}
	switch d.Type { // primitives need no conversion
	case "undefined":
		return nil, nil
	case "null":
		return json.RawMessage("null"), nil
	case "string", "boolean":
		return d.Value, nil
	case "number":
		return jsonNumber(d.Value), nil
	}
	raw, err := json.Marshal(r.DeepSerializedValue)
	if err != nil {
		return nil, err
	}
	return jsonFromDeep(raw, max)
}

// exceptionError is a thrown exception as DR-014 shows it:
// "ReferenceError: x is not defined" (the description without its stack).
//
// A syntax error found while compiling has no stack (nothing ran); one
// thrown by running code (JSON.parse) has one.
func exceptionError(d *runtime.ExceptionDetails) error {
	text, ran := d.Text, true
	if ex := d.Exception; ex != nil {
		switch {
		case ex.Type == "object" && (ex.Subtype == nil || *ex.Subtype != "error") && ex.Preview != nil && len(ex.Value) == 0:
			// A thrown or rejected value that is no Error: its
			// description is only its class ("Object", "Array(2)").
			text = "Uncaught " + previewText(*ex.Preview)
		case ex.Description != nil && *ex.Description != "":
			text = *ex.Description
			i := strings.Index(text, "\n    at ")
			if i >= 0 {
				text = text[:i]
			}
			ran = i >= 0 || ex.ClassName == nil || *ex.ClassName != "SyntaxError"
		case len(ex.Value) > 0:
			text = "Uncaught " + strings.Trim(string(ex.Value), `"`)
		}
	}
	return &JSError{Text: text, Ran: ran}
}

// previewText renders an object's preview as DevTools' console does:
// {a: 1, b: Array(2)}, [1, "x"], Map(1) {1 => 2}.
func previewText(p runtime.ObjectPreview) string {
	var b strings.Builder
	subtype := ""
	if p.Subtype != nil {
		subtype = *p.Subtype
	}
	desc := ""
	if p.Description != nil {
		desc = *p.Description
	}
	open, close := "{", "}"
	switch {
	case subtype == "array":
		open, close = "[", "]"
	case desc != "Object":
		b.WriteString(desc + " ") // a class: Map(1) {...}, Foo {...}
	}
	b.WriteString(open)
	n := 0
	sep := func() {
		if n > 0 {
			b.WriteString(", ")
		}
		n++
	}
	for _, prop := range p.Properties {
		if len(p.Entries) > 0 && prop.Name == "size" {
			continue // Map(1) says it
		}
		sep()
		if subtype != "array" {
			b.WriteString(prop.Name + ": ")
		}
		b.WriteString(propertyText(prop.Type, prop.Value))
	}
	for _, e := range p.Entries {
		sep()
		if e.Key != nil {
			b.WriteString(previewValue(*e.Key) + " => ")
		}
		b.WriteString(previewValue(e.Value))
	}
	if p.Overflow {
		sep()
		b.WriteString("…")
	}
	b.WriteString(close)
	return b.String()
}

// propertyText is a preview's value of a property: strings quoted.
func propertyText(typ string, value *string) string {
	if value == nil {
		return typ
	}
	if typ == "string" {
		q, _ := json.Marshal(*value)
		return string(q)
	}
	return *value
}

// previewValue is a collection entry's key or value.
func previewValue(p runtime.ObjectPreview) string {
	if p.Type == "object" && len(p.Properties) > 0 {
		return previewText(p)
	}
	return propertyText(p.Type, p.Description)
}

// errNavigatedAway is how Runtime.evaluate ends when the document it runs
// in is replaced before it answers (or the tab closes, which p.lost tells).
const errNavigatedAway = "Inspected target navigated or closed"

// navigatedAway: a call that waited in the page (an awaited promise) was
// cut short because its document was replaced, not because the tab went.
func (p *Page) navigatedAway(err error) bool {
	var rerr *rpcc.ResponseError
	return errors.As(err, &rerr) && rerr.Message == errNavigatedAway && !p.lost()
}

// rpcInternalError is JSON-RPC's "Internal error" code.
const rpcInternalError = -32603

// isTerminated: Chromium stopped the script because Runtime.evaluate's own
// timeout passed.
func isTerminated(d *runtime.ExceptionDetails) bool {
	return d.Exception == nil && strings.Contains(d.Text, "terminated")
}

func isSerializationFailure(msg string) bool {
	return strings.Contains(msg, "Object reference chain is too long") ||
		strings.Contains(msg, "Object couldn't be returned by value") ||
		strings.Contains(msg, "CBOR: stack limit exceeded") // nested deeper than Chromium encodes
}

func serializationReason(msg string) string {
	switch {
	case strings.Contains(msg, "reference chain is too long"):
		return "circular reference"
	case strings.Contains(msg, "CBOR: stack limit exceeded"):
		return "nested too deeply"
	}
	return msg
}
