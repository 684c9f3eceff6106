package cdpdriver

import (
	"context"
	"fmt"

	"github.com/mafredri/cdp/protocol/input"
)

// A person's input, forwarded from a viewer: the events a mouse and a
// keyboard make, one at a time, as they come. Unlike an agent's click
// nothing is looked up or checked: the person sees the page and aims.

// PersonMouse dispatches one mouse event of a person at x, y (CSS pixels
// of the viewport): event is move, down, up or wheel; button left,
// middle or right; clickCount counts a double click's second press.
func (p *Page) PersonMouse(ctx context.Context, event string, x, y float64, button string, clickCount int, deltaX, deltaY float64, modifiers int) error {
	b := input.MouseButtonLeft
	switch button {
	case "middle":
		b = input.MouseButtonMiddle
	case "right":
		b = input.MouseButtonRight
	}
	var ev *input.DispatchMouseEventArgs
	switch event {
	case "move":
		ev = input.NewDispatchMouseEventArgs("mouseMoved", x, y).SetButtons(p.personButtons)
		if p.personButtons != 0 {
			ev.SetButton(p.personPressed)
		}
	case "down":
		p.personButtons |= buttonsOf(b)
		p.personPressed = b
		ev = input.NewDispatchMouseEventArgs("mousePressed", x, y).SetButton(b).SetButtons(p.personButtons).SetClickCount(max(clickCount, 1))
	case "up":
		p.personButtons &^= buttonsOf(b)
		ev = input.NewDispatchMouseEventArgs("mouseReleased", x, y).SetButton(b).SetButtons(p.personButtons).SetClickCount(max(clickCount, 1))
	case "wheel":
		ev = input.NewDispatchMouseEventArgs("mouseWheel", x, y).SetDeltaX(deltaX).SetDeltaY(deltaY)
	default:
		return &InputError{Msg: fmt.Sprintf("mouse event %q is not move, down, up or wheel", event)}
	}
	ev.SetModifiers(modifiers)
	p.pointer = pointer{x: x, y: y, generation: p.decoder.generation.Load(), known: true}
	p.UnpinDocument()
	return sent(p.wrap(ctx, "mouse "+event, p.awaitInput(ctx, func(ctx context.Context) error {
		return p.client.Input.DispatchMouseEvent(ctx, ev)
	})))
}

// PersonKey dispatches a key going down or up: key is a DOM key value
// (a, A, Enter, ArrowLeft, Shift), as a browser's KeyboardEvent.key has
// it. A key that types a character types it on its down, unless Ctrl,
// Alt or Meta is held.
func (p *Page) PersonKey(ctx context.Context, event, key string, modifiers int) error {
	d, err := lookupKey(key)
	if err != nil {
		return err
	}
	// The person's Shift is in modifiers already, and key is what it
	// gave: type that, not its shifted form again.
	down, up := keyEvents(d, modifiers&^ModShift)
	down.SetModifiers(modifiers | modifierBits[d.key])
	up.SetModifiers(modifiers)
	ev := down
	if event == "up" {
		ev = up
	} else if event != "down" {
		return &InputError{Msg: fmt.Sprintf("key event %q is not down or up", event)}
	}
	p.UnpinDocument()
	return sent(p.wrap(ctx, "key "+key, p.awaitInput(ctx, func(ctx context.Context) error {
		return p.client.Input.DispatchKeyEvent(ctx, ev)
	})))
}

// holdsJS reports whether the page shows text (in its body's rendered
// text) and has an element matching selector; an empty one is not asked.
const holdsJS = `function (selector, text) {` + lookupJS + `
	if (selector) {
		const found = lookup(this, selector);
		if (found.error === "invalid") return found;
		if (found.error) return {holds: false};
	}
	if (text) {
		const body = document.body || document.documentElement;
		if (!body || !body.innerText.includes(text)) return {holds: false};
	}
	return {holds: true};
}`

// Holds reports whether the page shows text and has an element matching
// selector (a handoff's until): either may be empty.
func (p *Page) Holds(ctx context.Context, text, selector string) (bool, error) {
	var r struct {
		elementReply
		Holds bool `json:"holds"`
	}
	err := p.callOnDocument(ctx, "check the handoff's condition", selector, holdsJS, false, &r, text)
	return r.Holds, err
}
