package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/snaptext"
)

// Emitting frames: settling a change into a frame, capturing its content,
// and publishing frames in sequence order.
//
// A frame for a new document is appended when the document commits, so the
// action that caused it answers at commit (DR-013), but its content is the
// loaded page: the frame stays pending, unpublished, until the document's
// load event, a change that replaces it, the settle timeout, or the next
// action (which waits for the load first, so the content is read before the
// page changes again). Frames after a pending one wait behind it.

// pendingFrame is a frame appended without its content, waiting for its
// document to load.
type pendingFrame struct {
	seq      int64
	change   frames.Change
	loaderID string
	timer    *time.Timer // fires at the settle timeout
	// content: the frame carries the page's content, read at the load;
	// else only its title is.
	content bool
	note    string // what the frame says whatever its content
}

// frameFor turns change c into the next frame.
func (t *Tab) frameFor(ctx context.Context, c pageChange, change frames.Change) protocol.Frame {
	change.URL, change.Title, change.Status = c.url, t.nav.title, c.status
	change.NewDocument = c.kind == frameNavigation
	if t.pending != nil {
		t.completePending(ctx, pendingCutNote(c), false)
	}
	// A new document's frame waits for its load: for its content, or at
	// least for its title, which is seldom parsed at commit.
	wants := t.frames.WantsContent(change) // against the frame before it
	note := ""
	if c.unreachable != "" {
		// The URL is Chromium's (chrome-error://...); say which page
		// could not be loaded, whatever action led there.
		note = c.unreachable + " could not be loaded: this is Chromium's error page"
	}
	note = joinNote(t.restoring, note)
	if change.NewDocument && t.nav.dialog == nil && !t.nav.crashed {
		// A document that loaded already (navigate --wait) still goes
		// pending when the action's frame wants its content: the
		// frame's sequence, URL and title are known, so the plan is
		// answered first and the content, read right after the reply
		// (see run), follows on the frame, which observers get whole.
		if !t.nav.loaded[c.loaderID] || (wants && change.Source == protocol.SourceAgent) {
			f := t.appendFrame(change, nil, note)
			t.outbox = append(t.outbox, f)
			t.pending = &pendingFrame{seq: f.Sequence, change: change, loaderID: c.loaderID, timer: time.NewTimer(t.settleTimeout), content: wants, note: note}
			t.storeInfo(f)
			return f
		}
		if !wants {
			// Loaded already (a fast page, a slow actor): the title
			// read at commit may be none yet, or the static one.
			change.Title = cmp.Or(t.loadedTitle(ctx, change), change.Title)
		}
	}
	return t.emit(ctx, change, note, true)
}

// pendingCutNote says why a pending frame goes out without its content:
// change c came before its document loaded.
func pendingCutNote(c pageChange) string {
	switch c.kind {
	case frameSameDocument:
		// The document is still there, but no longer at the frame's URL.
		return "the page moved to " + c.url + " before it finished loading; content left out (the next frame has it)"
	case frameCrash:
		return "the page crashed before it finished loading; content left out"
	}
	return "document replaced before it finished loading; content left out"
}

// pendingExpired is the pending frame's timer channel; nil (never ready)
// when no frame is pending.
func (t *Tab) pendingExpired() <-chan time.Time {
	if t.pending == nil {
		return nil
	}
	return t.pending.timer.C
}

// settlePending completes the pending frame if its document has loaded,
// has been replaced, or ran out of time. With wait it first waits for one
// of those (up to the settle timeout).
//
// An action that waits gives it at most until by: the frame's content is
// worth a wait, but not the action's own deadline; when by comes first,
// the content is captured as it is.
func (t *Tab) settlePending(ctx context.Context, wait bool, by time.Time) {
	p := t.pending
	if p == nil {
		return
	}
	done := func() bool { return t.nav.loaded[p.loaderID] || len(t.nav.changes) > 0 || t.nav.dialog != nil }
	expired, cut := false, false
	if wait && !done() {
		select {
		case <-p.timer.C:
			expired = true
		default:
			wctx, cancel := context.WithDeadline(ctx, by)
			expired = !t.waitForOr(wctx, done, p.timer.C)
			cut = expired && wctx.Err() != nil
			cancel()
		}
	}
	switch {
	case len(t.nav.changes) > 0:
		t.completePending(ctx, pendingCutNote(t.nav.changes[0]), false)
	case t.nav.dialog != nil:
		t.completePending(ctx, "content unavailable: a JavaScript dialog is open", false)
	case t.nav.loaded[p.loaderID]:
		t.completePending(ctx, "", true)
	case cut:
		t.completePending(ctx, "page had not finished loading when the next action came, with too short a timeout to wait for it; content captured before load", true)
	case expired:
		t.completePending(ctx, fmt.Sprintf("page did not finish loading within %s; content captured before load", t.settleTimeout), true)
	}
}

// completePending reads the pending frame's content (if capture) and
// releases it, and the frames behind it, for publishing.
func (t *Tab) completePending(ctx context.Context, note string, capture bool) {
	p := t.pending
	t.pending = nil
	p.timer.Stop()
	var content *string
	title := ""
	switch {
	case capture && p.content:
		content, title, note = t.capture(ctx, p.change, note)
	case capture:
		title = t.loadedTitle(ctx, p.change)
	}
	f, ok := t.frames.Complete(p.seq, t.frames.FormatOf(p.change), title, content, joinNote(p.note, note))
	if !ok {
		return
	}
	t.keepContent(f)
	for i := range t.outbox {
		if t.outbox[i].Sequence == p.seq {
			t.outbox[i] = f
		}
	}
	if t.frames.Sequence() == f.Sequence {
		t.storeInfo(f)
	}
}

// emit captures content if the policy wants it and capture allows, and
// appends the frame to the outbox.
func (t *Tab) emit(ctx context.Context, change frames.Change, note string, capture bool) protocol.Frame {
	var content, whole *string
	switch {
	case capture && t.frames.WantsContent(change):
		var title string
		content, title, note = t.capture(ctx, change, note)
		if title != "" {
			change.Title = title
		}
	case capture && t.frames.WantsDelta(change):
		var title string
		whole, title, note = t.capture(ctx, change, note)
		if title != "" {
			change.Title = title
		}
		content = whole
		if whole != nil {
			content, change.DeltaSince = t.frameDelta(*whole)
		}
	}
	f := t.appendFrame(change, content, note)
	if whole != nil && change.DeltaSince > 0 {
		t.bases.keep(f.Sequence, keptSnapshot{doc: t.page.Document(), url: f.URL, title: f.Title, text: *whole, frame: true}) // the next frame's base
	}
	t.outbox = append(t.outbox, f)
	t.storeInfo(f)
	return f
}

// frameDelta is a frame's content under the delta policy: the change
// from the last frame of the document that carried its snapshot, and
// that frame; the whole snapshot (and 0) when there is none to diff
// against, or the change is no shorter.
func (t *Tab) frameDelta(whole string) (*string, int64) {
	base, ok := t.bases.lastFrame(t.page.Document())
	if !ok {
		return &whole, 0
	}
	d, ok := snaptext.Diff(base.text, whole)
	if !ok || len(d.Text) >= len(whole) {
		return &whole, 0
	}
	return &d.Text, base.id.Frame
}

// appendFrame numbers the next frame, marking its sequence before any
// reply or frame can name it (seqmark.go).
func (t *Tab) appendFrame(change frames.Change, content *string, note string) protocol.Frame {
	f := t.frames.Append(change, content, note)
	t.markNumbered(f.Sequence)
	// The frame shows the page as a person's input left it.
	t.person.input.changed = false
	switch change.Action {
	case protocol.FrameOpen, protocol.FrameRestore, protocol.FrameCrash:
		change.NewDocument = true
	}
	if change.NewDocument {
		t.bases.newDocument(f.Sequence)
	}
	t.keepContent(f)
	return f
}

// keepContent keeps a frame's snapshot, for deltas from it.
func (t *Tab) keepContent(f protocol.Frame) {
	if f.FullPage != nil && f.FullPageFormat == string(frames.FormatSnapshot) {
		t.bases.keep(f.Sequence, keptSnapshot{doc: t.page.Document(), url: f.URL, title: f.Title, text: *f.FullPage, frame: true})
	}
}

// loadedTitle reads the title of change's document, now loaded, when the
// frame carries no content to read it with; "" if the page moved on.
func (t *Tab) loadedTitle(ctx context.Context, change frames.Change) string {
	if t.nav.dialog != nil || t.nav.crashed {
		return ""
	}
	cctx, cancel := context.WithTimeout(ctx, t.settleTimeout)
	defer cancel()
	url, title, err := t.page.Location(cctx)
	if err != nil || url != change.URL {
		return ""
	}
	t.nav.title = title
	return title
}

// capture reads the page content for the frame of change, or says in the
// note why it could not.
func (t *Tab) capture(ctx context.Context, change frames.Change, note string) (content *string, title, outNote string) {
	if t.nav.dialog != nil {
		return nil, "", joinNote(note, "content unavailable: a JavaScript dialog is open") // reading would wait for it
	}
	if t.nav.crashed {
		return nil, "", joinNote(note, "content unavailable: the page crashed")
	}
	cctx, cancel := context.WithTimeout(ctx, t.settleTimeout)
	defer cancel()
	if change.NewDocument && t.settles {
		// A snapshot is likely next, and settles first: the page
		// renders for it while its content is read here.
		_ = t.page.AskRenderings(cctx, t.actionStart)
	}
	url, title, text, err := t.page.Content(cctx, string(t.frames.FormatOf(change)))
	var tooLarge *cdpdriver.ResultTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return nil, title, joinNote(note, fmt.Sprintf("content left out: %s is %d characters, more than the %d bytes a frame carries (frames.maxContent)", tooLarge.What, tooLarge.Size, tooLarge.Limit))
	case err != nil:
		// The title, at least, is worth a second try of its own; and a
		// page that moved on is why the read failed (its document went
		// away under it).
		u, tt, lerr := t.page.Location(cctx)
		switch {
		case lerr == nil && u == change.URL:
			return nil, tt, joinNote(note, "content unavailable: "+err.Error())
		case lerr == nil:
			return nil, "", joinNote(note, "content unavailable: the page changed to "+u+" while it was read")
		}
		return nil, "", joinNote(note, "content unavailable: "+err.Error())
	case url != change.URL:
		// The document moved on while we read it; keep the frame honest.
		return nil, "", joinNote(note, "content unavailable: the page changed to "+url+" while it was read")
	}
	t.nav.title = title
	return &text, title, note
}

func (t *Tab) storeInfo(f protocol.Frame) {
	info := &protocol.TabInfo{Tab: t.id, URL: f.URL, Title: f.Title, Sequence: f.Sequence, Node: t.node, Profile: t.profile}
	t.personInfo(info)
	t.info.Store(info)
}

// flush publishes the frames in the outbox, in order, up to a pending one.
func (t *Tab) flush() {
	n := 0
	for _, f := range t.outbox {
		if t.pending != nil && f.Sequence >= t.pending.seq {
			break
		}
		t.publish(f)
		n++
	}
	rest := copy(t.outbox, t.outbox[n:])
	clear(t.outbox[rest:])
	t.outbox = t.outbox[:rest]
}

func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// frameHeaderRoom is what a frame's message needs beside its JSON: the
// Nats-Msg-Id header (and, for the history, Nats-Expected-Stream), which
// counts against the bus's message size.
const frameHeaderRoom = 256

// publish sends a frame to the tab's frame subject, with its message id,
// as a plain publish: live subscribers get it now. With history the
// tab's frameStore then sends it to the stream, which may take a while
// (see framestore.go). A frame too large for the bus goes out with its
// content by reference (see content.go and history.go), never dropped or
// cut: live, the tab's own copy, which it serves in chunks.
func (t *Tab) publish(f protocol.Frame) {
	msg, err := frameMessage(f, t.frameSubject, t.nc.MaxPayload(), func(content string, max int64) (*protocol.ContentRef, string) {
		return keepChunks(t.content, t.subj.TabContent(t.id), f.Sequence, content, max)
	})
	if err == nil {
		err = t.nc.PublishMsg(msg)
	}
	if err != nil {
		t.log.Error().Err(err).Int64("sequence", f.Sequence).Msg("publish frame")
	}
	t.content.latest.Store(f.Sequence)
	if t.store != nil {
		t.store.add(f)
	}
}

// frameMessage is frame f's message on subject, with its message id (so
// the history stores it once). When it would be more than max bytes, its
// content goes by the reference and note that keep returns.
func frameMessage(f protocol.Frame, subject string, max int64, keep func(content string, max int64) (*protocol.ContentRef, string)) (*nats.Msg, error) {
	data, err := protocol.Marshal(f)
	if err == nil && int64(len(data)+frameHeaderRoom) > max && f.FullPage != nil {
		content := *f.FullPage
		f.FullPage = nil
		var note string
		f.FullPageRef, note = keep(content, max)
		f.Note = joinNote(f.Note, note)
		data, err = protocol.Marshal(f)
	}
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, protocol.FrameMsgID(f.Tab, f.Sequence))
	return msg, nil
}

// keepChunks keeps a frame's content too large for one message in the
// tab's chunk store (without history, or when the history's object store
// did not take it), which serves it on subject; it returns the frame's
// reference and note.
func keepChunks(store *contentStore, subject string, seq int64, content string, max int64) (*protocol.ContentRef, string) {
	chunks := store.keep(seq, content, max)
	ref := &protocol.ContentRef{Subject: subject, Sequence: seq, Bytes: len(content), Chunks: chunks}
	return ref, fmt.Sprintf("content of %d bytes is more than one bus message carries: fetch it in %d chunks (fullPageRef)", len(content), chunks)
}
