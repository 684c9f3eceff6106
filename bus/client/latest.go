package client

import (
	"context"
	"time"

	"github.com/framebus/framebus/protocol"
)

// A tab publishes each frame live at once, and its node stores it in the
// history after that (actors/framestore.go): the history may lag the live
// frames by a moment, or by seconds while a cluster elects the stream's
// leader. A reader that has only the history (a watch catching up after
// it subscribed or reconnected, Current) asks the tab which frame it
// published last and reads the history on until that one is stored: a
// frame published while the watch was not subscribed reaches it only
// from the history, and no live frame may come after it to show it is
// missing.

// latestWait bounds the question to the tab; a tab that does not answer
// in time (its node is frozen, gone, or older than the question) leaves
// the reader with what the history has.
const latestWait = 2 * time.Second

// tabLatest is the sequence of the last frame tab published, as its node
// says; 0 when it cannot tell.
func (c *Client) tabLatest(ctx context.Context, tab string) int64 {
	ctx, cancel := context.WithTimeout(ctx, latestWait)
	defer cancel()
	var r protocol.ContentReply
	if err := c.Request(ctx, c.subj.TabContent(tab), protocol.ContentRequest{Latest: true}, &r); err != nil {
		return 0
	}
	return r.Sequence
}

// latestStored is the last stored frame on subject, tab's, once it is
// at least the last the tab published, for up to fillWait; nil when the
// history has no frame of the tab.
func (c *Client) latestStored(ctx context.Context, tab, subject string) (*storedMsg, error) {
	m, err := c.lastStored(ctx, subject)
	if err != nil {
		return nil, err
	}
	latest := c.tabLatest(ctx, tab)
	began := time.Now()
	for try := 1; latest > 0 && (m == nil || c.frameSeqOf(*m) < latest) && time.Since(began) < fillWait; try++ {
		if err := sleepCtx(ctx, min(time.Duration(try)*fillPause, fillPauseMax)); err != nil {
			return nil, err
		}
		if m, err = c.lastStored(ctx, subject); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// toLatest reads a one-tab watch's history on until it has the frame
// the tab published last (see above).
func (f *follower) toLatest(ctx context.Context) error {
	tab := f.spec.tab
	latest := f.c.tabLatest(ctx, tab)
	if last, ok := f.seen.last[tab]; latest == 0 || latest < f.seen.from || (ok && latest <= last) {
		return nil
	}
	return f.fill(ctx, tab, latest)
}

// toLatestOfEach does toLatest for every tab a watch of every tab has
// delivered frames of, with one listing of the tabs; a tab it has not
// met yet is left to its live frames (the history cannot tell which of
// its frames came after the watch began).
func (f *follower) toLatestOfEach(ctx context.Context) error {
	if len(f.seen.last) == 0 {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, latestWait)
	list, err := f.c.Tabs(lctx)
	cancel()
	if err != nil {
		return nil // the next catch-up, or the tab's next frame, makes up for it
	}
	for _, t := range list.Tabs {
		if last, ok := f.seen.last[t.Tab]; ok && t.Sequence > last {
			if err := f.fill(ctx, t.Tab, t.Sequence); err != nil {
				return err
			}
		}
	}
	return nil
}
