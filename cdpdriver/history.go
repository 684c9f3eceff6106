package cdpdriver

import (
	"context"

	"github.com/mafredri/cdp/protocol/page"
)

// Reload reloads the page bypassing the cache: DR-013's reload is always
// hard. It returns once Chromium has started it; the commit arrives as a
// FrameNavigated event.
func (p *Page) Reload(ctx context.Context) error {
	err := whileInactive(ctx, func() error {
		return p.client.Page.Reload(ctx, page.NewReloadArgs().SetIgnoreCache(true))
	})
	return p.wrap(ctx, "reload", err)
}

// NoHistoryError: back at the first entry, or forward at the last.
type NoHistoryError struct{ Back bool }

func (e *NoHistoryError) Error() string {
	if e.Back {
		return "no previous page in history"
	}
	return "no next page in history"
}

// HistoryEntry is the entry a history step goes to.
type HistoryEntry struct {
	URL string
	// SameDocument: the step stays in the current document (an entry made
	// by pushState or a fragment), so no new document will commit.
	SameDocument bool
}

// GoHistory moves delta entries through the tab's history (-1 back, +1
// forward) as DR-013 specifies: read the navigation history, check the
// target entry exists, navigate to it.
func (p *Page) GoHistory(ctx context.Context, delta int) (HistoryEntry, error) {
	var h *page.GetNavigationHistoryReply
	err := whileInactive(ctx, func() (err error) {
		h, err = p.client.Page.GetNavigationHistory(ctx)
		return err
	})
	if err != nil {
		return HistoryEntry{}, p.wrap(ctx, "read history", err)
	}
	target := h.CurrentIndex + delta
	if target < 0 || target >= len(h.Entries) {
		return HistoryEntry{}, &NoHistoryError{Back: delta < 0}
	}
	to, cur := h.Entries[target], h.Entries[h.CurrentIndex]
	err = whileInactive(ctx, func() error {
		return p.client.Page.NavigateToHistoryEntry(ctx, page.NewNavigateToHistoryEntryArgs(to.ID))
	})
	if err != nil {
		return HistoryEntry{}, p.wrap(ctx, "navigate history", err)
	}
	return HistoryEntry{URL: to.URL, SameDocument: sameDocument(cur.URL, to.URL)}, nil
}

// sameDocument guesses whether two history entries share a document: only
// the fragment differs. (pushState entries may share one too; the caller
// settles by events either way.)
func sameDocument(a, b string) bool {
	strip := func(u string) string {
		for i := 0; i < len(u); i++ {
			if u[i] == '#' {
				return u[:i]
			}
		}
		return u
	}
	return a != b && strip(a) == strip(b)
}
