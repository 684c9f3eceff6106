package cdpdriver

import (
	"context"

	"github.com/mafredri/cdp/protocol/input"
)

// pointJS scrolls the element into view when it is not, and answers the
// centre of its first visible box in viewport coordinates. With hitTest it
// also checks that the element (or a descendant) is what a click at that
// point would hit, and names the element that would be hit instead.
const pointJS = `function (selector, hitTest) {` + findElementJS + describeJS + `
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
	return {x, y};
}`

type point struct {
	elementReply
	X, Y float64
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
func (p *Page) Click(ctx context.Context, selector string, o ClickOptions) error {
	pt, err := p.point(ctx, selector, true)
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
	if err := p.postMouseMove(pt.X, pt.Y); err != nil {
		return p.wrap(ctx, "mouse move", err)
	}
	for n := 1; n <= clicks; n++ {
		if err := p.mouse(ctx, "mousePressed", pt.X, pt.Y, button, buttonsOf(button), n); err != nil {
			return err
		}
		if err := p.mouse(ctx, "mouseReleased", pt.X, pt.Y, button, 0, n); err != nil {
			return err
		}
	}
	return nil
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
	for i := 1; i < dragSteps; i++ {
		x := src.X + (dst.X-src.X)*float64(i)/dragSteps
		y := src.Y + (dst.Y-src.Y)*float64(i)/dragSteps
		ev := input.NewDispatchMouseEventArgs("mouseMoved", x, y).SetButton(left).SetButtons(1)
		if err := p.codec.post("Input.dispatchMouseEvent", ev); err != nil {
			return p.wrap(ctx, "drag", err)
		}
	}
	if err := p.mouse(ctx, "mouseMoved", dst.X, dst.Y, left, 1, 0); err != nil {
		return err
	}
	return p.mouse(ctx, "mouseReleased", dst.X, dst.Y, left, 0, 1)
}

// postMouseMove moves the mouse without waiting for the move's
// acknowledgement (see Click).
func (p *Page) postMouseMove(x, y float64) error {
	return p.codec.post("Input.dispatchMouseEvent", input.NewDispatchMouseEventArgs("mouseMoved", x, y).SetButton(input.MouseButtonNone))
}

func (p *Page) mouse(ctx context.Context, typ string, x, y float64, button input.MouseButton, buttons, clickCount int) error {
	ev := input.NewDispatchMouseEventArgs(typ, x, y).SetButton(button).SetButtons(buttons)
	if clickCount > 0 {
		ev.SetClickCount(clickCount)
	}
	return p.wrap(ctx, "mouse "+typ, p.client.Input.DispatchMouseEvent(ctx, ev))
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
