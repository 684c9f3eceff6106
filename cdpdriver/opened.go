package cdpdriver

import (
	"context"

	"github.com/mafredri/cdp/protocol/target"
)

// PageOpened is a tab a page opened itself (window.open, a target=_blank
// link), reported so its owner can give it an actor of its own.
type PageOpened struct {
	TargetID, OpenerID, URL string
}

// WatchOpened reports the page targets that other pages open, until the
// connection closes (then the channel is closed). Tabs opened through
// NewTarget have no opener and are not reported.
func (b *Browser) WatchOpened(ctx context.Context) (<-chan PageOpened, error) {
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
			if ti.Type != "page" || ti.OpenerID == nil {
				continue
			}
			select {
			case out <- PageOpened{TargetID: string(ti.TargetID), OpenerID: string(*ti.OpenerID), URL: ti.URL}:
			case <-b.conn.Context().Done():
				return
			}
		}
	}()
	return out, nil
}
