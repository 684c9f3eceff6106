package cdpdriver

import (
	"context"
	"time"

	"github.com/mafredri/cdp/protocol/page"
)

// ScreenFrame is one picture of the page from Chromium's screencast: a
// JPEG of the viewport and what it shows.
type ScreenFrame struct {
	JPEG []byte
	// DeviceWidth and DeviceHeight are the viewport in CSS pixels (a
	// person's input at x, y of the picture scaled to them lands there);
	// OffsetTop is the part of the picture above the page (none headless).
	DeviceWidth, DeviceHeight, OffsetTop float64
	ScrollX, ScrollY                     float64
	// Drawn is when Chromium drew it.
	Drawn time.Time
}

// ScreencastOptions shape a screencast: pictures at most MaxWidth by
// MaxHeight pixels, of JPEG Quality (0-100), and at most one per
// Interval.
type ScreencastOptions struct {
	MaxWidth, MaxHeight, Quality int
	// Interval is the least time from one picture's acknowledgement to
	// the next's, asked again while it waits (a watcher that wants more
	// pictures shortens the wait at once).
	Interval func() time.Duration
}

// intervalRecheck is how often a wait for the next acknowledgement asks
// Interval again.
const intervalRecheck = 50 * time.Millisecond

// Screencast gives each picture of the page to each until ctx ends.
// Chromium draws one only when the page changed, and sends the next only
// once the last is acknowledged: acknowledging no sooner than Interval
// after the last bounds the rate, and what comes then is the page as it
// is, not a queue of what it was.
func (p *Page) Screencast(ctx context.Context, o ScreencastOptions, each func(ScreenFrame)) error {
	frames, err := p.client.Page.ScreencastFrame(ctx)
	if err != nil {
		return p.wrap(ctx, "screencast", err)
	}
	defer frames.Close()
	args := page.NewStartScreencastArgs().SetFormat("jpeg").SetQuality(o.Quality).SetMaxWidth(o.MaxWidth).SetMaxHeight(o.MaxHeight).SetEveryNthFrame(1)
	if err := p.client.Page.StartScreencast(ctx, args); err != nil {
		return p.wrap(ctx, "screencast", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.client.Page.StopScreencast(sctx)
	}()
	var last time.Time
	for {
		ev, err := frames.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return p.wrap(ctx, "screencast", err)
		}
		m := ev.Metadata
		f := ScreenFrame{JPEG: ev.Data, DeviceWidth: m.DeviceWidth, DeviceHeight: m.DeviceHeight, OffsetTop: m.OffsetTop,
			ScrollX: m.ScrollOffsetX, ScrollY: m.ScrollOffsetY, Drawn: time.Now()}
		if m.Timestamp != 0 {
			f.Drawn = m.Timestamp.Time()
		}
		each(f)
		for wait := o.Interval() - time.Since(last); wait > 0; wait = o.Interval() - time.Since(last) {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(min(wait, intervalRecheck)):
			}
		}
		last = time.Now()
		if err := p.client.Page.ScreencastFrameAck(ctx, page.NewScreencastFrameAckArgs(ev.SessionID)); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return p.wrap(ctx, "screencast", err)
		}
	}
}
