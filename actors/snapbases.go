package actors

import (
	"strconv"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/snaptext"
)

// snapshotBases keeps the snapshots a tab gave out in its current
// document, as snapshot actions' values and as frames' content, so that
// a caller naming one (snapshot --since) gets only what changed since
// (snaptext). A snapshot of an earlier document is never a base: its
// refs named other elements. The tab's goroutine owns it.
type snapshotBases struct {
	docStart int64 // the current document's first frame
	kept     []keptSnapshot
	bytes    int
}

type keptSnapshot struct {
	id         protocol.SnapshotID
	doc        uint64 // the page's document it was taken in (cdpdriver's Document); 0: not known
	url, title string
	text       string
	// count and interactive are the snapshot's nodes and refs, when it
	// came from a snapshot action (a frame's content says none).
	count, interactive int
	frame              bool // the frame's own content
	scoped             bool // of a part of the page (a selector, interactive only, a depth, a node cap)
}

// Bounds of what a tab keeps: the latest snapshots first, the frame's
// content before the rest.
const (
	maxKeptSnapshots     = 16
	maxKeptSnapshotBytes = 16 << 20
)

// newDocument forgets the snapshots of the document before frame seq.
func (b *snapshotBases) newDocument(seq int64) {
	b.docStart, b.kept, b.bytes = seq, nil, 0
}

// keep records snapshot n, taken at frame seq, and returns its id.
func (b *snapshotBases) keep(seq int64, n keptSnapshot) protocol.SnapshotID {
	n.id = protocol.SnapshotID{Frame: seq, Hash: snaptext.Hash(n.text)}
	for i, k := range b.kept {
		if k.id == n.id { // the same again: now the latest
			k.frame, k.scoped = k.frame || n.frame, k.scoped && n.scoped
			k.count, k.interactive = max(k.count, n.count), max(k.interactive, n.interactive)
			b.kept = append(append(b.kept[:i:i], b.kept[i+1:]...), k)
			return n.id
		}
	}
	b.kept = append(b.kept, n)
	b.bytes += len(n.text)
	for len(b.kept) > 1 && (len(b.kept) > maxKeptSnapshots || b.bytes > maxKeptSnapshotBytes) {
		b.bytes -= len(b.kept[0].text)
		b.kept = b.kept[1:]
	}
	return n.id
}

// base is the snapshot since names, as a base for a delta to a snapshot
// of document doc, or why there is none: it must be of that document.
func (b *snapshotBases) base(since protocol.SnapshotID, current int64, doc uint64) (keptSnapshot, string) {
	k, why := b.find(since, current)
	if why == "" && (doc == 0 || k.doc != doc) {
		why = "snapshot " + k.id.String() + " is of another document (the page loaded a new one since)"
	}
	return k, why
}

// find is the snapshot since names, or why there is none: a frame alone
// names its content, else the last snapshot of the whole page taken at
// it.
func (b *snapshotBases) find(since protocol.SnapshotID, current int64) (keptSnapshot, string) {
	switch {
	case since.Frame > current:
		return keptSnapshot{}, "frame " + strconv.FormatInt(since.Frame, 10) + " is not made yet (the tab is at frame " + strconv.FormatInt(current, 10) + ")"
	case since.Frame < b.docStart:
		return keptSnapshot{}, "frame " + strconv.FormatInt(since.Frame, 10) + " is of another document (this one began at frame " + strconv.FormatInt(b.docStart, 10) + ")"
	}
	var found *keptSnapshot
	for i := len(b.kept) - 1; i >= 0; i-- {
		k := &b.kept[i]
		switch {
		case k.id.Frame != since.Frame:
		case since.Hash != "" && k.id.Hash == since.Hash:
			return *k, ""
		case since.Hash == "" && k.frame:
			return *k, ""
		case since.Hash == "" && found == nil && !k.scoped:
			found = k
		}
	}
	if found != nil {
		return *found, ""
	}
	return keptSnapshot{}, "snapshot " + since.String() + " is not kept by the tab (it keeps the last " + strconv.Itoa(maxKeptSnapshots) + " of a document)"
}

// lastFrame is the snapshot of the latest frame of document doc that
// carried one.
func (b *snapshotBases) lastFrame(doc uint64) (keptSnapshot, bool) {
	var last keptSnapshot
	found := false
	for _, k := range b.kept {
		if k.frame && doc != 0 && k.doc == doc && (!found || k.id.Frame >= last.id.Frame) {
			last, found = k, true
		}
	}
	return last, found
}
