package cdpdriver

import (
	"context"

	"github.com/mafredri/cdp/protocol/target"
)

// PageOpened is a tab that appeared: one a page opened itself
// (window.open, a target=_blank link; OpenerID names the page), or one
// opened otherwise (a person's new tab in a headed or attached browser,
// NewTarget), reported so its owner can give it an actor of its own.
type PageOpened struct {
	TargetID, OpenerID, URL string
}

// WatchOpened reports the page targets that pages open, until the
// connection closes (then the channel is closed). With all, it also
// reports the other page targets created from now on (tabs opened through
// NewTarget among them: the caller tells them from the others by id).
// A browser framebus launched opens a blank tab of its own at start,
// possibly after this call, so all is for a browser someone else runs.
func (b *Browser) WatchOpened(ctx context.Context, all bool) (<-chan PageOpened, error) {
	existing := map[string]bool{}
	if all {
		before, err := b.Targets(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range before {
			existing[t.ID] = true
		}
	}
	created, err := b.client.Target.TargetCreated(b.conn.Context())
	if err != nil {
		return nil, b.wrap(ctx, "watch targets", err)
	}
	if err := b.client.Target.SetDiscoverTargets(ctx, target.NewSetDiscoverTargetsArgs(true)); err != nil {
		created.Close()
		return nil, b.wrap(ctx, "watch targets", err)
	}
	out := make(chan PageOpened, 16)
	go func() {
		defer close(out)
		defer created.Close()
		for {
			ev, err := created.Recv()
			if err != nil {
				return
			}
			ti := ev.TargetInfo
			if ti.Type != "page" || ti.OpenerID == nil && (!all || existing[string(ti.TargetID)]) {
				continue
			}
			o := PageOpened{TargetID: string(ti.TargetID), URL: ti.URL}
			if ti.OpenerID != nil {
				o.OpenerID = string(*ti.OpenerID)
			}
			select {
			case out <- o:
			case <-b.conn.Context().Done():
				return
			}
		}
	}()
	return out, nil
}
