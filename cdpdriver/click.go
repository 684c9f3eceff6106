package cdpdriver

import (
	"context"
	"errors"

	"github.com/mafredri/cdp/protocol/input"
)

// pointJS scrolls the element into view when it is not, and answers the
// centre of its first visible box in viewport coordinates. With hitTest it
// also checks that the element (or a descendant, or one of its labels:
// a checkbox drawn by its label) is what a click at that point would hit,
// and names the element that would be hit instead. An element in a
// same-origin frame's document (a snapshot ref reaches those) is placed
// in the top viewport through its frames, each of which must be what is
// hit there too. A centre that is covered (a sticky header over an
// element scrolled just into view) or outside the viewport gets one more
// try with the element scrolled to the middle; one still outside (placed
// off the page, as visually hidden content is) is refused, never clicked
// where nothing of it is. One that lies where no scrolling a user can do
// reaches (offPageJS) is refused before anything is scrolled: a script
// can scroll a page that hides its overflow, a user cannot.
const pointJS = `function (selector, hitTest, enabled) {` + findElementJS + describeJS + offPageJS + `
	if (enabled && el.matches(":disabled")) return {error: "input", reason: "element " + selector + " is disabled: a click on it does nothing"};
	if (getComputedStyle(el).visibility === "hidden") return {error: "invisible"};
	const off = offPageChecker((n) => getComputedStyle(n))(el);
	if (off) return {error: "offpage", offpage: off};
	const offscreen = (x, y) => ({error: "invisible", reason: "it is outside the visible page, at " + Math.round(x) + "," + Math.round(y) + ", and scrolling does not bring it in"});
	const outside = (w, x, y) => x < 0 || y < 0 || x >= w.innerWidth || y >= w.innerHeight;
	const inLabel = (hit) => Array.from(el.labels || []).some(l => l.contains(hit));
	const locate = () => {
		let r = null;
		for (const c of el.getClientRects()) if (c.width > 0 && c.height > 0) { r = c; break; }
		if (!r) return {error: "invisible"};
		let x = r.left + r.width / 2, y = r.top + r.height / 2;
		let w = el.ownerDocument.defaultView;
		if (outside(w, x, y)) return offscreen(x, y);
		if (hitTest) {
			const root = el.getRootNode();
			const hit = (root.elementFromPoint ? root : el.ownerDocument).elementFromPoint(x, y);
			if (!hit) return offscreen(x, y);
			if (hit !== el && !el.contains(hit) && !inLabel(hit)) return {error: "covered", by: describe(hit)};
		}
		for (; w && w.frameElement; w = w.parent) {
			const f = w.frameElement, box = f.getBoundingClientRect(), s = getComputedStyle(f);
			x += box.left + f.clientLeft + parseFloat(s.paddingLeft);
			y += box.top + f.clientTop + parseFloat(s.paddingTop);
			if (outside(w.parent, x, y)) return offscreen(x, y);
			if (hitTest) {
				const hit = f.ownerDocument.elementFromPoint(x, y);
				if (hit !== f) return {error: "covered", by: describe(hit)};
			}
		}
		return {x, y};
	};
	if (el.scrollIntoViewIfNeeded) el.scrollIntoViewIfNeeded(true);
	else el.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
	let at = locate();
	if (at.error === "covered" || at.reason) {
		el.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
		at = locate();
	}
	return at;
}`

// pointFunction is pointJS installed (see installed.go): a click's
// locate round trip is a sixth shorter.
var pointFunction = newInstalledFunction("__framebusPoint", pointJS)

type point struct {
	elementReply
	X, Y float64
}

// point resolves selector to the point a pointer action aims at. With
// enabled, a disabled control is refused (a click would do nothing). A
// covered element's error names the action, which the cover would get.
func (p *Page) point(ctx context.Context, action, selector string, hitTest, enabled bool) (point, error) {
	var pt point
	err := p.callInstalled(ctx, "locate element", selector, pointFunction, false, &pt, hitTest, enabled)
	var covered *ElementCoveredError
	if errors.As(err, &covered) {
		covered.Action = action
	}
	return pt, err
}

// ClickOptions vary a click.
type ClickOptions struct {
	Double bool // two clicks, the second with clickCount 2 (dblclick)
	Right  bool // the right button (contextmenu)
}

// Click clicks the element matching selector with real mouse events, as
// DR-013 specifies, plus what makes a click land where a user's would: the
// element is scrolled into view, the mouse moved over it first (hover
// handlers fire), and a hit test refuses to click when another element
// covers its centre (*ElementCoveredError names it); a disabled control
// is refused, since a click on it does nothing. Then the button is
// pressed and released at the centre; twice for Double.
func (p *Page) Click(ctx context.Context, selector string, o ClickOptions) error {
	pt, err := p.point(ctx, "click", selector, true, true)
	if err != nil {
		return err
	}
	button := input.MouseButtonLeft
	if o.Right {
		button = input.MouseButtonRight
	}
	clicks := 1
	if o.Double {
		clicks = 2
	}
	// The move is posted, not awaited: Chromium acknowledges a mouse move
	// only at the next animation frame (~16ms), while the press that
	// follows it in the same queue is handled, after the move, at once.
	// A mouse already there (the last click's) is not moved: a real one
	// would not be either, and the move costs the renderer a hover update.
	var posted []uint64
	if !p.pointerAt(pt.X, pt.Y) {
		id, err := p.postMouse(mouseEvent("mouseMoved", pt.X, pt.Y, input.MouseButtonNone, 0, 0))
		if err != nil {
			return p.postedErrors(ctx, posted, p.wrap(ctx, "mouse move", err))
		}
		posted = append(posted, id)
	}
	// Only the last release is awaited: the browser runs a session's
	// input commands in order, and each waits for the renderer, so
	// awaiting every one would add a renderer round trip per event.
	for n := 1; n <= clicks; n++ {
		id, err := p.postMouse(mouseEvent("mousePressed", pt.X, pt.Y, button, buttonsOf(button), n))
		if err != nil {
			err = p.postedErrors(ctx, posted, p.wrap(ctx, "mouse mousePressed", err))
			if n > 1 {
				err = &InputSentError{Err: err} // the first click went
			}
			return err
		}
		posted = append(posted, id)
		if n == clicks {
			break
		}
		if id, err = p.postMouse(mouseEvent("mouseReleased", pt.X, pt.Y, button, 0, n)); err != nil {
			return &InputSentError{Err: p.postedErrors(ctx, posted, p.wrap(ctx, "mouse mouseReleased", err))}
		}
		posted = append(posted, id)
	}
	err = p.mouse(ctx, "mouseReleased", pt.X, pt.Y, button, 0, clicks)
	if err = p.postedErrors(ctx, posted, err); err != nil && !errors.As(err, new(*InputSentError)) {
		err = &InputSentError{Err: err} // the press went
	}
	return err
}

// Hover moves the mouse to the centre of the element (scrolled into view),
// so mouseover, mouseenter and :hover apply.
func (p *Page) Hover(ctx context.Context, selector string) error {
	pt, err := p.point(ctx, "hover", selector, true, false)
	if err != nil {
		return err
	}
	return p.mouse(ctx, "mouseMoved", pt.X, pt.Y, input.MouseButtonNone, 0, 0)
}

// dragSteps is how many mouse moves a drag makes between its ends, so
// pages that track mousemove see a path, not a jump.
const dragSteps = 8

// Drag presses the left button on the centre of from, moves the mouse in
// steps to the centre of to, and releases it there. The target is not hit
// tested: the dragged element itself may be over it.
func (p *Page) Drag(ctx context.Context, from, to string) error {
	src, err := p.point(ctx, "drag", from, true, false)
	if err != nil {
		return err
	}
	left := input.MouseButtonLeft
	if err := p.mouse(ctx, "mouseMoved", src.X, src.Y, input.MouseButtonNone, 0, 0); err != nil {
		return err
	}
	if err := p.mouse(ctx, "mousePressed", src.X, src.Y, left, 1, 1); err != nil {
		return err
	}
	dst, err := p.point(ctx, "drag", to, false, false)
	if err != nil {
		// Let go where we are, so the page is not left mid-drag.
		_ = p.mouse(ctx, "mouseReleased", src.X, src.Y, left, 0, 1)
		return err
	}
	// The path is posted; only the last move is awaited (see Click).
	var posted []uint64
	for i := 1; i < dragSteps; i++ {
		x := src.X + (dst.X-src.X)*float64(i)/dragSteps
		y := src.Y + (dst.Y-src.Y)*float64(i)/dragSteps
		id, err := p.postMouse(mouseEvent("mouseMoved", x, y, left, 1, 0))
		if err != nil {
			return p.postedErrors(ctx, posted, p.wrap(ctx, "drag", err))
		}
		posted = append(posted, id)
	}
	err = p.mouse(ctx, "mouseMoved", dst.X, dst.Y, left, 1, 0)
	if err = p.postedErrors(ctx, posted, err); err != nil {
		return err
	}
	return p.mouse(ctx, "mouseReleased", dst.X, dst.Y, left, 0, 1)
}

// mouse dispatches a mouse event and waits for the renderer to handle it.
func (p *Page) mouse(ctx context.Context, typ string, x, y float64, button input.MouseButton, buttons, clickCount int) error {
	p.pointer = pointer{x: x, y: y, generation: p.decoder.generation.Load(), known: true}
	p.UnpinDocument()
	err := p.awaitInput(ctx, func(ctx context.Context) error {
		return p.client.Input.DispatchMouseEvent(ctx, mouseEvent(typ, x, y, button, buttons, clickCount))
	})
	if err != nil {
		p.pointer.known = false // it may not have got there
	}
	return sent(p.wrap(ctx, "mouse "+typ, err))
}

// sent marks the error of an input command that was sent but not
// answered in time (a page busy in a handler, a dialog it opened) as an
// *InputSentError: the page may act on it still. A refused command is
// left as it is.
func sent(err error) error {
	var timeout *TimeoutError
	if errors.As(err, &timeout) || errors.Is(err, ErrDialogOpened) {
		return &InputSentError{Err: err}
	}
	return err
}

// postMouse dispatches a mouse event without waiting (see Click); its id
// is for postedError.
func (p *Page) postMouse(ev *input.DispatchMouseEventArgs) (uint64, error) {
	p.pointer = pointer{x: ev.X, y: ev.Y, generation: p.decoder.generation.Load(), known: true}
	p.UnpinDocument()
	return p.codec.post("Input.dispatchMouseEvent", ev)
}

// postedErrors is postedOutcome for mouse events; after an error the
// mouse may not be where it was sent.
func (p *Page) postedErrors(ctx context.Context, posted []uint64, err error) error {
	if err = p.postedOutcome(ctx, "mouse", posted, err); err != nil {
		p.pointer.known = false
	}
	return err
}

// postedOutcome collects the posted commands' outcomes once the command
// awaited after them has answered with err: the first error wins.
func (p *Page) postedOutcome(ctx context.Context, op string, posted []uint64, err error) error {
	for _, id := range posted {
		if perr := p.codec.postedError(id); perr != nil && err == nil {
			err = p.wrap(ctx, op, perr)
		}
	}
	return err
}

// pointer is where framebus last put the page's mouse, in viewport
// coordinates, and in which document.
type pointer struct {
	x, y       float64
	generation uint64
	known      bool
}

// pointerAt says whether the mouse is at x, y in the current document.
func (p *Page) pointerAt(x, y float64) bool {
	return p.pointer.known && p.pointer.generation == p.decoder.generation.Load() && p.pointer.x == x && p.pointer.y == y
}

func mouseEvent(typ string, x, y float64, button input.MouseButton, buttons, clickCount int) *input.DispatchMouseEventArgs {
	ev := input.NewDispatchMouseEventArgs(typ, x, y).SetButton(button).SetButtons(buttons)
	if clickCount > 0 {
		ev.SetClickCount(clickCount)
	}
	return ev
}

// buttonsOf is the DOM "buttons" bitmask of a pressed button.
func buttonsOf(b input.MouseButton) int {
	switch b {
	case input.MouseButtonLeft:
		return 1
	case input.MouseButtonRight:
		return 2
	case input.MouseButtonMiddle:
		return 4
	}
	return 0
}

// awaitInput runs an input command and waits for its answer, but not past
// the commit of a new document: Chromium may never answer an input that
// the old document took with it (it would hold the action to its
// deadline). An input outlived so counts as delivered; the new document
// is the action's.
func (p *Page) awaitInput(ctx context.Context, call func(context.Context) error) error {
	next := p.decoder.nextDocument()
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	outlived := make(chan struct{})
	go func() {
		select {
		case <-next:
			close(outlived)
			cancel()
		case <-ictx.Done():
		}
	}()
	err := call(ictx)
	if err != nil {
		select {
		case <-outlived:
			return nil
		default:
		}
	}
	return err
}
