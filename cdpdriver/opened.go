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

// WatchOpened reports the page targets created from now on, and those
// that exist already only if a page opened them, until the connection
// closes (then the channel is closed). Tabs opened through NewTarget are
// reported too: the caller tells them from the others by id.
func (b *Browser) WatchOpened(ctx context.Context) (<-chan PageOpened, error) {
	before, err := b.Targets(ctx)
	if err != nil {
		return nil, err
	}
	existing := map[string]bool{}
	for _, t := range before {
		existing[t.ID] = true
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
			if ti.Type != "page" || ti.OpenerID == nil && existing[string(ti.TargetID)] {
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
