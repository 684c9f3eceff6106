package cdpdriver

import (
	"context"
	"errors"
	"time"

	"github.com/mafredri/cdp/rpcc"
)

// Chromium answers a browser-side Page command (reading the history,
// navigating it, reloading, capturing a screenshot) with "Not attached to
// an active page" for a few milliseconds after a document is replaced: the
// DevTools page handler still points at the old document's frame host,
// which is no longer active, even after the new document has loaded. The
// command was refused before it did anything, so asking again is safe.
const errInactivePage = "Not attached to an active page"

// inactiveRetryMax bounds the pause between two tries.
const inactiveRetryMax = 50 * time.Millisecond

// whileInactive runs call, and again while Chromium refuses it because the
// page's frame host is being replaced, until it is taken or ctx ends; the
// last error is returned.
func whileInactive(ctx context.Context, call func() error) error {
	pause := 2 * time.Millisecond
	for {
		err := call()
		var rerr *rpcc.ResponseError
		if err == nil || !errors.As(err, &rerr) || rerr.Message != errInactivePage {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, inactiveRetryMax)
	}
}
