package actors

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/snaptext"
)

// DefaultSnapshotIdle bounds the wait for network idle before a snapshot.
const DefaultSnapshotIdle = 5 * time.Second

// snapshotValue is the value of a snapshot action.
type snapshotValue struct {
	URL         string                   `json:"url"`
	Title       string                   `json:"title"`
	Text        string                   `json:"text,omitempty"`  // format text
	Nodes       []cdpdriver.SnapshotNode `json:"nodes,omitempty"` // format json
	Count       int                      `json:"count"`
	Interactive int                      `json:"interactive"`
	Truncated   bool                     `json:"truncated,omitempty"`
	// ID names this snapshot (text format) for a later one's since, or a
	// cursor; Bytes is its text's length, whatever part of it Text is.
	ID    string `json:"id,omitempty"`
	Bytes int    `json:"bytes,omitempty"`
	// Since is the snapshot the delta is from (since asked for one);
	// Delta, in place of Text, what changed since it (Changes
	// operations, 0 when nothing did). Full says why the whole snapshot
	// came instead.
	Since   string `json:"since,omitempty"`
	Delta   string `json:"delta,omitempty"`
	Changes *int   `json:"changes,omitempty"`
	Full    string `json:"full,omitempty"`
	// Matches counts the nodes a search found; Shown, those in Text.
	Matches *int `json:"matches,omitempty"`
	Shown   *int `json:"shown,omitempty"`
	// Next is the cursor of the rest of the text (maxBytes cut it);
	// Context, the lines of the ancestors of a part's first line.
	Next    string `json:"next,omitempty"`
	Context string `json:"context,omitempty"`
	// NetworkIdle: with networkIdle, the network was idle when it was
	// taken (absent when the wait timed out, and without networkIdle).
	NetworkIdle bool `json:"networkIdle,omitempty"`
	// NetworkWait says what the wait for it did: "none" (idle already),
	// "waited" (until idle), "timeout" (taken anyway), "background" (a
	// page that keeps fetching: only the requests in flight were waited
	// for); absent with noIdle.
	NetworkWait string `json:"networkWait,omitempty"`
	// Settled says what a settle waited for (settle).
	Settled *settled `json:"settled,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// settled is what a snapshot's settle waited: how long, and the most
// short timers and requests it saw pending.
type settled struct {
	Waited   protocol.Duration `json:"waited"`
	Timers   int               `json:"timers,omitempty"`
	Requests int               `json:"requests,omitempty"`
	// RanOut: the page was still busy at the bound; Restless: it was
	// before, in this document, so this one waited less (see Note).
	RanOut   bool `json:"ranOut,omitempty"`
	Restless bool `json:"restless,omitempty"`
}

// DefaultPartBytes is the size of the parts a cursor reads when the
// action does not say (maxBytes).
const DefaultPartBytes = 32 << 10

// snapshot settles on the page's activity (what the last action started:
// bounded by its idle timeout and half its own), or waits for network
// idle when asked (on timeout it goes ahead and says so; on a page that
// keeps fetching, only for the requests in flight), then takes the
// accessibility snapshot. In its text form it may be answered as a
// delta (since), a search's matches (search) or a part (maxBytes, and
// cursor for the next, read from the snapshot kept, not taken again).
func (t *Tab) snapshot(ctx context.Context, a protocol.Action) (any, error) {
	if a.Cursor != "" {
		return t.snapshotPart(a)
	}
	v := snapshotValue{}
	switch {
	case a.NoIdle:
	case a.NetworkIdle:
		if err := t.settleForSnapshot(ctx, a, &v); err != nil {
			return nil, err
		}
	default: // settle
		sctx, cancel := context.WithTimeout(ctx, t.idleWait(ctx, a))
		if !t.settles {
			// From now on in every document of the tab, from its start
			// (failing that, the resolver puts it in before each action).
			_ = t.page.TrackActivity(sctx)
		}
		w, err := t.page.SettleActivity(sctx, t.actionStart)
		cancel()
		if err != nil {
			return nil, err
		}
		t.settles, t.tracked = true, t.page.Document()
		v.Settled = &settled{Waited: protocol.Duration(w.Waited), Timers: w.Timers, Requests: w.Requests, RanOut: w.RanOut, Restless: w.Restless}
		switch {
		case w.RanOut:
			v.Note = "taken before the page settled: it was still busy (timers, requests or DOM changes) at idleTimeout; " +
				"later snapshots of this document wait only for two renderings and the requests in flight"
		case w.Restless:
			v.Note = "taken after two renderings and the requests in flight: the page did not settle before in this document (it keeps changing)"
		}
	}
	opts := cdpdriver.SnapshotOptions{Selector: a.Selector, InteractiveOnly: a.Interactive, MaxDepth: a.Depth, MaxNodes: a.MaxNodes}
	if a.Since == "" && a.Search == "" && a.MaxBytes == 0 {
		opts.Limited = true // the whole goes in the reply
	} else {
		// The tab keeps the whole and answers a part of it (a delta, a
		// search's matches, a part): it is bounded as a frame's
		// content is, and the answer as a reply is.
		opts.MaxBytes = t.frames.MaxContentBytes()
	}
	doc := t.page.Document()
	s, err := t.page.Snapshot(ctx, opts)
	if err != nil {
		return nil, err
	}
	if t.page.Document() != doc {
		doc = 0 // a new document committed meanwhile: which one it read is not known
	}
	v.URL, v.Title, v.Count, v.Interactive, v.Truncated = s.URL, s.Title, s.Count, s.Interactive, s.Truncated
	if a.Format == "json" {
		v.Nodes = s.Nodes
		return v, nil
	}
	text := s.Text()
	v.Text, v.Bytes = text, len(text)
	switch {
	case a.Since != "":
		t.snapshotDelta(&v, a.Since, doc, a.MaxBytes) // before keep, which may let the base go
	case a.Search != "":
		r, _ := snaptext.Search(text, a.Search, 0, a.MaxBytes)
		v.Text, v.Matches, v.Shown = r.Text, &r.Matches, &r.Shown
		if a.MaxBytes > 0 && len(v.Text) > a.MaxBytes {
			// One match larger than maxBytes alone: its start, and where
			// the whole is (the snapshot, read in parts by cursor).
			v.Text, _, _, _ = snaptext.Part(v.Text, 0, a.MaxBytes)
			v.Note = joinNote(v.Note, "the first match alone is more than maxBytes: cut; read the snapshot in parts with a cursor")
		}
	}
	scoped := a.Selector != "" || a.Interactive || a.Depth > 0 || (a.MaxNodes > 0 && s.Truncated)
	id := t.bases.keep(t.frames.Sequence(), keptSnapshot{doc: doc, url: s.URL, title: s.Title, text: text, scoped: scoped, count: s.Count, interactive: s.Interactive})
	v.ID = id.String()
	if a.MaxBytes > 0 && a.Search == "" && v.Delta == "" && len(v.Text) > a.MaxBytes {
		// A part, and the cursor of the rest. (A search keeps to
		// maxBytes itself, in whole matches, and counts the rest.)
		part, next, _, _ := snaptext.Part(v.Text, 0, a.MaxBytes)
		v.Text = part
		if next > 0 {
			v.Next = cursorOf(id, next)
		}
	}
	return v, nil
}

// idleWait bounds a snapshot's wait before it is taken: its idle
// timeout, and half the action's time at most (the snapshot needs the
// rest).
func (t *Tab) idleWait(ctx context.Context, a protocol.Action) time.Duration {
	wait := cmp.Or(a.IdleTimeout.Std(), DefaultSnapshotIdle)
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, (time.Until(deadline) / 2).Round(time.Millisecond))
	}
	return wait
}

// settleForSnapshot waits for network idle before a snapshot, and says
// in v what the wait did.
func (t *Tab) settleForSnapshot(ctx context.Context, a protocol.Action, v *snapshotValue) error {
	ictx, cancel := cdpdriver.WithTimeout(ctx, t.idleWait(ctx, a))
	idle, err := t.page.SettleNetwork(ictx)
	cancel()
	var late *cdpdriver.TimeoutError
	switch {
	case errors.As(err, &late) && ctx.Err() == nil:
		v.NetworkWait, v.Note = "timeout", "taken before network idle: "+err.Error()
	case err != nil:
		return err
	case idle.Background:
		v.NetworkWait = "background"
		v.Note = "taken while the page keeps fetching in the background (a wait for network idle ran out on this page before), " +
			"after the requests in flight when it began: " + strconv.Itoa(idle.Pending)
	case idle.Already:
		v.NetworkIdle, v.NetworkWait = true, "none"
	default:
		v.NetworkIdle, v.NetworkWait = true, "waited"
	}
	return nil
}

// snapshotDelta puts in v, in place of its text, the change from the
// snapshot since names, when the tab has it, of document doc (the one v
// was taken in), and the change is shorter (and within maxBytes, when
// given); else v says why it has the whole.
func (t *Tab) snapshotDelta(v *snapshotValue, since string, doc uint64, maxBytes int) {
	id, err := protocol.ParseSnapshotID(since)
	if err != nil { // checked with the plan
		v.Full = err.Error()
		return
	}
	base, why := t.bases.base(id, t.frames.Sequence(), doc)
	if why != "" {
		v.Full = why
		return
	}
	d, ok := snaptext.Diff(base.text, v.Text)
	switch {
	case !ok:
		v.Full = "the snapshots are not both in the text form deltas take"
	case len(d.Text) >= len(v.Text):
		v.Full = "the change is no shorter than the snapshot"
	case maxBytes > 0 && len(d.Text) > maxBytes:
		v.Full = "the change is " + strconv.Itoa(len(d.Text)) + " bytes, more than maxBytes"
	default:
		v.Since, v.Delta, v.Changes, v.Text = base.id.String(), d.Text, &d.Changes, ""
	}
}

// snapshotPart answers a cursor: the next part of a snapshot the tab
// keeps, read from where the part before ended.
func (t *Tab) snapshotPart(a protocol.Action) (any, error) {
	id, from, err := protocol.ParseSnapshotCursor(a.Cursor)
	if err != nil {
		return nil, err
	}
	kept, why := t.bases.find(id, t.frames.Sequence())
	if why != "" {
		return nil, protocol.Errorf(protocol.CodeSnapshotGone, "cursor %s: %s; take the snapshot again", a.Cursor, why)
	}
	part, next, context, ok := snaptext.Part(kept.text, from, cmp.Or(a.MaxBytes, DefaultPartBytes))
	if !ok {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "cursor %s: byte %d is not where a part of snapshot %s starts", a.Cursor, from, id)
	}
	v := snapshotValue{URL: kept.url, Title: kept.title, ID: id.String(), Bytes: len(kept.text), Text: part, Context: context,
		Count: kept.count, Interactive: kept.interactive}
	if v.Count == 0 { // a frame's content: its lines are its nodes (and a note, if it was cut)
		v.Count = strings.Count(kept.text, "\n")
	}
	if next > 0 {
		v.Next = cursorOf(id, next)
	}
	return v, nil
}

// cursorOf is the cursor of snapshot id's text from byte at.
func cursorOf(id protocol.SnapshotID, at int) string {
	return id.String() + "@" + strconv.Itoa(at)
}
