package cdpdriver

import (
	"context"
	"fmt"

	"github.com/mafredri/cdp/protocol/emulation"
	"github.com/mafredri/cdp/protocol/runtime"
)

// Emulation is what a page is laid out for: a viewport size in CSS
// pixels, device pixels per CSS pixel, and a phone's mobile layout, touch
// and user agent. It holds for the page's connection only: when that
// closes, Chromium drops it and the page has its window's size again.
type Emulation struct {
	Width, Height     int
	DeviceScaleFactor float64
	Mobile, Touch     bool
	UserAgent         string // "": the browser's own
}

// maxTouchPoints is what navigator.maxTouchPoints says of an emulated
// touch screen, as a phone's.
const maxTouchPoints = 5

// settleResizeJS waits for the page's next rendering update, where its
// resize and media-query listeners run, and at most 100ms (a page that
// renders nothing gets no animation frame).
const settleResizeJS = `new Promise(done => {
	requestAnimationFrame(() => setTimeout(done));
	setTimeout(done, 100);
})`

// Emulate lays the page out for e (window.screen included, so a page that
// reads it sees the same) and answers whether anything changed. Touch and
// the user agent are set only when they differ from what the page has, so
// a desktop tab costs one call. navigator.maxTouchPoints, the user agent,
// sizes, devicePixelRatio and media queries change at once; 'ontouchstart'
// in window and the User-Agent header of requests from the next document.
func (p *Page) Emulate(ctx context.Context, e Emulation) (changed bool, err error) {
	if e == p.emulation {
		return false, nil
	}
	c := p.client.Emulation
	metrics := emulation.NewSetDeviceMetricsOverrideArgs(e.Width, e.Height, e.DeviceScaleFactor, e.Mobile).
		SetScreenWidth(e.Width).SetScreenHeight(e.Height)
	if err := c.SetDeviceMetricsOverride(ctx, metrics); err != nil {
		return false, p.wrap(ctx, "set viewport", err)
	}
	p.emulated.Store(true)
	cur := &p.emulation
	cur.Width, cur.Height, cur.DeviceScaleFactor, cur.Mobile = e.Width, e.Height, e.DeviceScaleFactor, e.Mobile
	if e.Touch != cur.Touch {
		args := emulation.NewSetTouchEmulationEnabledArgs(e.Touch)
		if e.Touch {
			args.SetMaxTouchPoints(maxTouchPoints)
		}
		if err := c.SetTouchEmulationEnabled(ctx, args); err != nil {
			return true, p.wrap(ctx, "emulate touch", err)
		}
		cur.Touch = e.Touch
	}
	if e.UserAgent != cur.UserAgent {
		// An empty one gives the page the browser's own again.
		if err := c.SetUserAgentOverride(ctx, emulation.NewSetUserAgentOverrideArgs(e.UserAgent)); err != nil {
			return true, p.wrap(ctx, "set user agent", err)
		}
		cur.UserAgent = e.UserAgent
	}
	return true, nil
}

// clearEmulation gives the page its window's own metrics, no touch and
// the browser's own user agent again.
func (p *Page) clearEmulation(ctx context.Context) {
	c := p.client.Emulation
	_ = c.ClearDeviceMetricsOverride(ctx)
	_ = c.SetTouchEmulationEnabled(ctx, emulation.NewSetTouchEmulationEnabledArgs(false))
	_ = c.SetUserAgentOverride(ctx, emulation.NewSetUserAgentOverrideArgs(""))
}

// SettleRendering waits for the page's next rendering update, where its
// resize and media-query listeners run after an Emulate.
func (p *Page) SettleRendering(ctx context.Context) error {
	reply, err := p.client.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(settleResizeJS).SetAwaitPromise(true))
	if err != nil {
		return p.wrap(ctx, "settle rendering", err)
	}
	if reply.ExceptionDetails != nil {
		return fmt.Errorf("settle rendering: %w", exceptionError(reply.ExceptionDetails))
	}
	return nil
}
