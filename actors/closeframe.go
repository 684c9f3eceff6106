package actors

import (
	"context"

	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/protocol"
)

// closeNote is what a tab's close frame says.
const closeNote = "the tab closed: no frame follows this one"

// emitClose appends the tab's last frame (protocol.FrameClose) as its
// actor ends: watchers and readers of the history learn that the tab is
// gone, in order after its last frame, instead of waiting for one that
// never comes. A tab that ends because its node stops makes none: the
// node may bring it back under its id (a restart with its state), and
// watchers learn of a node that stops from its liveness. It reports
// whether the tab is gone for good (it closed, and is not brought back).
func (t *Tab) emitClose() bool {
	select {
	case <-t.leaving: // nil without a node: never
		return false
	default:
	}
	last := t.frames.Last()
	if last.Sequence == 0 {
		return true
	}
	change := frames.Change{URL: last.URL, Title: last.Title, Status: last.Status, Action: protocol.FrameClose, Source: protocol.SourceBrowser}
	t.emit(context.Background(), change, closeNote, false)
	return true
}
