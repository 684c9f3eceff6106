package actors

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/protocol"
)

// Emitting frames: settling a change into a frame, capturing its content,
// and publishing frames in sequence order.

// frameFor settles change c into a frame: for a new document it waits for
// its load (bounded) so the content is the loaded page, then publishes.
func (t *Tab) frameFor(ctx context.Context, c pageChange, change frames.Change) protocol.Frame {
	change.URL, change.Title = c.url, t.nav.title
	change.NewDocument = c.kind == frameNavigation
	if change.NewDocument {
		ctx, cancel := context.WithTimeout(ctx, t.settleTimeout)
		loaded := t.waitFor(ctx, func() bool { return t.nav.loaded[c.loaderID] || len(t.nav.changes) > 0 })
		cancel()
		if len(t.nav.changes) > 0 {
			// Replaced before it loaded: its content is gone.
			return t.emit(ctx, change, "document replaced before it finished loading; content left out", false)
		}
		if !loaded {
			return t.emit(ctx, change, fmt.Sprintf("page did not finish loading within %s; content captured before load", t.settleTimeout), true)
		}
	}
	return t.emit(ctx, change, "", true)
}

// emit captures content if the policy wants it and capture allows, appends
// the frame and publishes it.
func (t *Tab) emit(ctx context.Context, change frames.Change, note string, capture bool) protocol.Frame {
	var content *string
	if capture && t.nav.dialog != nil && t.frames.WantsContent(change) {
		capture = false // reading the page would wait for the dialog
		note = joinNote(note, "content unavailable: a JavaScript dialog is open")
	}
	if capture && t.frames.WantsContent(change) {
		cctx, cancel := context.WithTimeout(ctx, t.settleTimeout)
		url, title, text, err := t.page.Content(cctx, string(t.frames.Format()))
		cancel()
		switch {
		case err != nil:
			note = joinNote(note, "content unavailable: "+err.Error())
		case url != change.URL:
			// The document moved on while we read it; keep the frame honest.
			note = joinNote(note, "content unavailable: the page changed to "+url+" while it was read")
		default:
			content = &text
			change.Title = title
			t.nav.title = title
		}
	}
	f := t.frames.Append(change, content, note)
	t.outbox = append(t.outbox, f)
	t.info.Store(&protocol.TabInfo{Tab: t.id, URL: f.URL, Title: f.Title, Sequence: f.Sequence})
	return f
}

// flush publishes the frames in the outbox, in order.
func (t *Tab) flush() {
	for i, f := range t.outbox {
		t.publish(f)
		t.outbox[i] = protocol.Frame{}
	}
	t.outbox = t.outbox[:0]
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// publish sends a frame to the tab's frame subject. A
// frame too large for the bus is sent without its content, with a note,
// never dropped.
func (t *Tab) publish(f protocol.Frame) {
	data, err := json.Marshal(f)
	if err == nil && int64(len(data)) > t.nc.MaxPayload() && f.FullPage != nil {
		size := len(*f.FullPage)
		f.FullPage, f.FullPageFormat = nil, ""
		f.Note = joinNote(f.Note, fmt.Sprintf("content of %d bytes exceeds the bus payload limit; left out", size))
		data, err = json.Marshal(f)
	}
	if err == nil {
		err = t.nc.Publish(t.frameSubject, data)
	}
	if err != nil {
		t.log.Error().Err(err).Int64("sequence", f.Sequence).Msg("publish frame")
	}
}
