package cdpdriver

import (
	"context"

	"github.com/mafredri/cdp/protocol/input"
)

// pointJS scrolls the element into view when it is not, and answers the
// centre of its first visible box in viewport coordinates. With hitTest it
// also checks that the element (or a descendant) is what a click at that
// point would hit, and names the element that would be hit instead. It
// answers how many real pointerups the document has seen, too (see
// settleClickJS).
const pointJS = `function (selector, hitTest) {` + countPointerUpsJS + findElementJS + describeJS + `
	if (el.scrollIntoViewIfNeeded) el.scrollIntoViewIfNeeded(true);
	else el.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
	let r = null;
	for (const c of el.getClientRects()) if (c.width > 0 && c.height > 0) { r = c; break; }
	if (!r || getComputedStyle(el).visibility === "hidden") return {error: "invisible"};
	const x = r.left + r.width / 2, y = r.top + r.height / 2;
	if (hitTest) {
		const root = el.getRootNode();
		const hit = (root.elementFromPoint ? root : document).elementFromPoint(x, y);
		if (hit && hit !== el && !el.contains(hit)) return {error: "covered", by: describe(hit)};
	}
	return {x, y, ups: window.__framebusPointerUps};
}`

// countPointerUpsJS has the document count the trusted pointerups it
// dispatches, in framebus's world: a page cannot raise the count, as it
// can dispatch only untrusted events.
const countPointerUpsJS = `
	if (window.__framebusPointerUps === undefined) {
		window.__framebusPointerUps = 0;
		addEventListener("pointerup", (e) => { if (e.isTrusted) window.__framebusPointerUps++; }, true);
	}
`

// settleClickJS reads what a click left: the pointerup count, and the
// page's URL and title.
const settleClickJS = `function () {
	return {ups: window.__framebusPointerUps, url: location.href, title: document.title};
}`

type clickSettled struct {
	elementReply
	Ups        int
	URL, Title string
}

type point struct {
	elementReply
	X, Y float64
	Ups  int // the document's pointerup count before the action
}

// Location is a page's URL and title, read in the renderer.
type Location struct {
	URL, Title string
}

// point resolves selector to the point a pointer action aims at.
func (p *Page) point(ctx context.Context, selector string, hitTest bool) (point, error) {
	var pt point
	err := p.callOnDocument(ctx, "locate element", selector, pointJS, false, &pt, hitTest)
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
// covers its centre (*ElementCoveredError names it). Then the button is
// pressed and released at the centre; twice for Double.
//
// When it can, Click also answers the page's location as it was once the
// click had been handled, so everything the click made the renderer
// report (a navigation it requested, a new title) has been received: the
// round trip a caller would otherwise make after it (see Location). It
// answers nil when it could not tell.
func (p *Page) Click(ctx context.Context, selector string, o ClickOptions) (*Location, error) {
	pt, err := p.point(ctx, selector, true)
	if err != nil {
		return nil, err
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
			return nil, p.postedErrors(ctx, posted, p.wrap(ctx, "mouse move", err))
		}
		posted = append(posted, id)
	}
	// Every event is posted: the browser runs a session's input commands
	// in order, and each waits for the renderer, so awaiting every one
	// would add a renderer round trip per event.
	var release uint64
	for n := 1; n <= clicks; n++ {
		id, err := p.postMouse(mouseEvent("mousePressed", pt.X, pt.Y, button, buttonsOf(button), n))
		if err != nil {
			return nil, p.postedErrors(ctx, posted, p.wrap(ctx, "mouse mousePressed", err))
		}
		posted = append(posted, id)
		if release, err = p.postMouse(mouseEvent("mouseReleased", pt.X, pt.Y, button, 0, n)); err != nil {
			return nil, p.postedErrors(ctx, posted, p.wrap(ctx, "mouse mouseReleased", err))
		}
		if n < clicks {
			posted = append(posted, release)
		}
	}
	// Then the page is read, at once. An input event reaches the renderer
	// by another path than this call, so the call may overtake it; but
	// when the document has counted the last release's pointerup, the
	// whole task that handled that release (its handlers, the default
	// action: a link followed, a form submitted) ran before this call,
	// and the renderer had reported what it did. That saves waiting for
	// the release's answer and then making a round trip to the renderer.
	var after clickSettled
	if err := p.callOnDocument(ctx, "settle click", "", settleClickJS, false, &after); err == nil && after.Ups >= pt.Ups+clicks {
		// The events were handled, so they were taken: their answers,
		// which may still be on their way, are of no more use.
		p.codec.postedError(release)
		return &Location{URL: after.URL, Title: after.Title}, p.postedErrors(ctx, posted, nil)
	}
	// Overtaken (or the pointerup went to a frame's document, or the
	// page changed): wait for the release as the browser reports it.
	err = p.wrap(ctx, "mouse mouseReleased", p.codec.awaitPosted(ctx, release))
	return nil, p.postedErrors(ctx, posted, err)
}

// Hover moves the mouse to the centre of the element (scrolled into view),
// so mouseover, mouseenter and :hover apply.
func (p *Page) Hover(ctx context.Context, selector string) error {
	pt, err := p.point(ctx, selector, true)
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
	src, err := p.point(ctx, from, true)
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
	dst, err := p.point(ctx, to, false)
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
	err := p.client.Input.DispatchMouseEvent(ctx, mouseEvent(typ, x, y, button, buttons, clickCount))
	if err != nil {
		p.pointer.known = false // it may not have got there
	}
	return p.wrap(ctx, "mouse "+typ, err)
}

// postMouse dispatches a mouse event without waiting (see Click); its id
// is for postedError.
func (p *Page) postMouse(ev *input.DispatchMouseEventArgs) (uint64, error) {
	p.pointer = pointer{x: ev.X, y: ev.Y, generation: p.decoder.generation.Load(), known: true}
	return p.codec.post("Input.dispatchMouseEvent", ev)
}

// postedErrors collects the posted events' outcomes once the event
// awaited after them has answered with err: the first error wins.
func (p *Page) postedErrors(ctx context.Context, posted []uint64, err error) error {
	for _, id := range posted {
		if perr := p.codec.postedError(id); perr != nil && err == nil {
			err = p.wrap(ctx, "mouse", perr)
		}
	}
	if err != nil {
		p.pointer.known = false // it may not have got there
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
