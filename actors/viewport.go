package actors

import (
	"context"
	"encoding/json"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// emulationOf is the driver's form of a viewport.
func emulationOf(vp protocol.Viewport) cdpdriver.Emulation {
	return cdpdriver.Emulation{Width: vp.Width, Height: vp.Height, DeviceScaleFactor: vp.DeviceScaleFactor,
		Mobile: vp.Mobile, Touch: vp.Touch, UserAgent: vp.UserAgent}
}

// resizeValue is the value of a resize: the viewport the tab now has, and
// whether the resize changed it.
type resizeValue struct {
	protocol.Viewport
	Changed bool `json:"changed"`
}

// resize lays the page out for another viewport. It makes its frame even
// when the viewport was already that one (changed false): every executed
// state-changing action makes exactly one, so a plan can count its
// frames ahead.
func (t *Tab) resize(ctx context.Context, a protocol.Action) (outcome, error) {
	vp, err := protocol.ActionViewport(a)
	if err != nil {
		return outcome{}, err
	}
	changed, err := t.page.Emulate(ctx, emulationOf(vp))
	if err != nil {
		return outcome{ran: changed}, err
	}
	t.viewport = vp
	if changed {
		// The page's resize listeners run before the frame is made.
		if err := t.page.SettleRendering(ctx); err != nil {
			return outcome{ran: true}, err
		}
	}
	raw, err := json.Marshal(resizeValue{Viewport: vp, Changed: changed})
	return outcome{value: raw, barrier: true}, err
}
