package cdpdriver

import (
	"context"

	"github.com/mafredri/cdp/protocol/dom"
	"github.com/mafredri/cdp/protocol/input"
)

// Click clicks the element matching selector with real mouse events, as
// DR-013 specifies: the element is scrolled into view, its box model read,
// and a left button pressed and released at the centre of its content box.
func (p *Page) Click(ctx context.Context, selector string) error {
	el, err := p.element(ctx, selector)
	if err != nil {
		return err
	}
	defer p.release(el)
	box, err := p.client.DOM.GetBoxModel(ctx, &dom.GetBoxModelArgs{ObjectID: &el})
	if err != nil {
		if p.lost() || ctx.Err() != nil {
			return p.wrap(ctx, "click", err)
		}
		return &ElementNotVisibleError{Selector: selector}
	}
	x, y := quadCentre(box.Model.Content)
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		ev := input.NewDispatchMouseEventArgs(typ, x, y).SetButton(input.MouseButtonLeft).SetClickCount(1)
		if err := p.client.Input.DispatchMouseEvent(ctx, ev); err != nil {
			return p.wrap(ctx, "click", err)
		}
	}
	return nil
}

func quadCentre(q dom.Quad) (x, y float64) {
	if len(q) < 8 {
		return 0, 0
	}
	for i := 0; i < 8; i += 2 {
		x += q[i]
		y += q[i+1]
	}
	return x / 4, y / 4
}
