package cdpdriver

import (
	"errors"
	"fmt"
	"time"
)

// ErrConnectionLost means a connection to Chromium is gone (tab closed,
// browser exited or given up): a session on the browser's pipe, or a
// websocket to an attached browser. It is decided from the connection's own state, never from the
// text of an error.
var ErrConnectionLost = errors.New("connection to Chromium lost")

// NavigationError is a load the browser refused or failed; Text is
// Chromium's net::ERR_... text.
type NavigationError struct {
	URL  string
	Text string
}

func (e *NavigationError) Error() string { return e.Text }

// InvalidURLError is a URL the browser refused to load because it cannot
// parse it (Page.navigate's "Cannot navigate to invalid URL").
type InvalidURLError struct{ URL string }

func (e *InvalidURLError) Error() string {
	return fmt.Sprintf("URL %q is not one the browser can parse", e.URL)
}

// ErrDocumentChanged: the page committed a new document after the
// document was pinned (PinDocument) and before an element function ran
// in it. Chromium holds a command back while a navigation is on its way
// and runs it in the next document; this is how framebus learns that it
// would have, so the action did nothing.
var ErrDocumentChanged = errors.New("the page changed to a new document before the action could run; nothing was done")

// ErrRanInNewDocument is ErrDocumentChanged for an evaluation that
// Chromium had run in the new document before framebus could tell.
var ErrRanInNewDocument = fmt.Errorf("%w (but Chromium ran the evaluation in the new document)", ErrDocumentChanged)

// InputSentError is the error of an input action that failed after some
// of its events were sent (it timed out waiting for the page to handle
// them, or a later event was refused): the page may have acted on them.
type InputSentError struct{ Err error }

// Error says, of a timeout, that the input went: a retry would repeat it
// (type the text twice).
func (e *InputSentError) Error() string {
	var timeout *TimeoutError
	if errors.As(e.Err, &timeout) {
		return e.Err.Error() + " (the input was sent; the page may still act on it)"
	}
	return e.Err.Error()
}
func (e *InputSentError) Unwrap() error { return e.Err }

// ElementNotFoundError: no element matches the selector.
type ElementNotFoundError struct{ Selector string }

func (e *ElementNotFoundError) Error() string { return "element not found: " + e.Selector }

// ElementNotVisibleError: the element exists but has no box to click,
// or none a user could reach (Why says so).
type ElementNotVisibleError struct{ Selector, Why string }

func (e *ElementNotVisibleError) Error() string {
	if e.Why != "" {
		return "element not visible: " + e.Selector + " (" + e.Why + ")"
	}
	return "element not visible: " + e.Selector
}

// ElementOffPageError: the element lies outside the part of the page a
// user can scroll to (an off-canvas menu at left:-300px, or beyond the
// right edge of a page that does not scroll sideways), so nothing a user
// does short of opening it reaches it. X, Y are the centre of its box in
// page coordinates, Side the edges it lies beyond ("left", "top-left"),
// Area the part of the page a user can scroll to (left, top, right,
// bottom), or, for a box fixed to the screen, the part on the screen.
type ElementOffPageError struct {
	Selector string
	X, Y     int
	Side     string
	Fixed    bool
	Area     [4]int
}

func (e *ElementOffPageError) Error() string {
	where := "the page scrolls from"
	if e.Fixed {
		where = "it is fixed to the screen, which shows"
	}
	return fmt.Sprintf("element not visible: %s lies off the page beyond its %s edge, at %d,%d, where no scrolling reaches (%s %d,%d to %d,%d); it may be in a closed menu or panel: open it first",
		e.Selector, e.Side, e.X, e.Y, where, e.Area[0], e.Area[1], e.Area[2], e.Area[3])
}

// InvalidSelectorError: the selector is not valid CSS.
type InvalidSelectorError struct{ Selector, Reason string }

func (e *InvalidSelectorError) Error() string {
	return fmt.Sprintf("invalid selector %q: %s", e.Selector, e.Reason)
}

// JSError is an exception thrown by page JavaScript; Text is its description
// ("ReferenceError: x is not defined"). Ran: the script started before it
// threw, so it may have changed the page; a syntax error stops it first.
type JSError struct {
	Text string
	Ran  bool
}

func (e *JSError) Error() string { return e.Text }

// SerializationError: the value cannot be returned as JSON.
type SerializationError struct{ Reason string }

func (e *SerializationError) Error() string { return "failed to serialize result: " + e.Reason }

// TimeoutError: an operation passed its deadline. The page and the
// connection stay usable.
type TimeoutError struct {
	Op    string // e.g. "evaluation", "waiting for page load"
	After time.Duration
}

func (e *TimeoutError) Error() string {
	if e.After > 0 {
		return fmt.Sprintf("%s timed out after %s", e.Op, e.After)
	}
	return e.Op + " timed out"
}

// ElementCoveredError: another element covers the centre of the element,
// so the action's mouse would land on it. By describes it (div#overlay);
// Action names the action ("click", "hover", "drag"; "" reads as click).
type ElementCoveredError struct{ Selector, By, Action string }

func (e *ElementCoveredError) Error() string {
	action := e.Action
	if action == "" {
		action = "click"
	}
	return fmt.Sprintf("element covered: %s is covered by %s, which would receive the %s", e.Selector, e.By, action)
}

// OptionNotFoundError: a <select> has no option with that value or text.
type OptionNotFoundError struct{ Selector, Value string }

func (e *OptionNotFoundError) Error() string {
	return fmt.Sprintf("option not found: %q in %s (no option has that value or text)", e.Value, e.Selector)
}

// InputError: the operation cannot apply to its input (a select on an
// element that is not a <select>, a missing upload file, an unknown key).
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// ErrDialogOpened: a JavaScript dialog opened while the operation waited
// on the page, and blocks the page until it is answered.
var ErrDialogOpened = errors.New("a JavaScript dialog opened")

// StaleRefError: a snapshot ref whose element is gone from the page (it
// was removed, or the page changed). Refs are never re-bound.
type StaleRefError struct{ Ref string }

func (e *StaleRefError) Error() string {
	return fmt.Sprintf("stale ref: %s no longer points to an element on the page (removed, or the page changed); take a new snapshot", e.Ref)
}

// UnknownRefError: a ref no snapshot of this tab gave out (mistyped, or
// taken from another tab). Last is the last ref its snapshots gave out,
// 0 when none has.
type UnknownRefError struct {
	Ref  string
	Last int
}

func (e *UnknownRefError) Error() string {
	if e.Last == 0 {
		return fmt.Sprintf("unknown ref: %s was never given out on this tab, where no snapshot has given refs yet; take a snapshot and use its refs", e.Ref)
	}
	return fmt.Sprintf("unknown ref: %s was never given out on this tab (its snapshots gave out e1 to e%d); take a snapshot and use its refs", e.Ref, e.Last)
}
