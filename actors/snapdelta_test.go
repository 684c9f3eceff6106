package actors

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/snaptext"
)

// A snapshot since one the agent holds is the change from it: applied to
// what the agent holds, it is the snapshot, byte for byte. On a page
// changed at random (elements added, removed and moved in the light DOM,
// a shadow tree and an iframe; texts, states and values changed; elements
// hidden and shown), step after step.
func TestSnapshotDeltaIsExact(t *testing.T) {
	tab, _, _ := tabAt(t, "/mutations.html")
	held := snapshotOf(t, tab, protocol.Action{})

	// A menu opens: the button's state and the menu's items, and the
	// rest of the page is not repeated.
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#menu"})
	d := snapshotOf(t, tab, protocol.Action{Since: held.ID, NoIdle: true})
	whole := snapshotOf(t, tab, protocol.Action{NoIdle: true})
	if d.Delta == "" || d.Since != held.ID || d.Text != "" || d.ID != whole.ID {
		t.Fatalf("no delta since %s: %+v", held.ID, d)
	}
	for _, want := range []string{`menuitem "Settings"`, "[expanded]", "changed e"} {
		if !strings.Contains(d.Delta, want) {
			t.Errorf("the delta lacks %q:\n%s", want, d.Delta)
		}
	}
	if strings.Contains(d.Delta, "Lamp") {
		t.Errorf("the delta repeats what did not change:\n%s", d.Delta)
	}
	applied(t, held.Text, d, whole.Text)
	held = whole

	shorter := 0
	for seed := 1; seed <= 80; seed++ {
		cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "mutate(" + strconv.Itoa(seed) + ")"})
		d := snapshotOf(t, tab, protocol.Action{Since: held.ID, NoIdle: true})
		whole := snapshotOf(t, tab, protocol.Action{NoIdle: true})
		if d.ID != whole.ID {
			t.Fatalf("seed %d: the page changed between two snapshots (%s, %s)", seed, d.ID, whole.ID)
		}
		if d.Delta == "" {
			if d.Text != whole.Text || d.Full == "" {
				t.Fatalf("seed %d: neither a delta nor the whole snapshot: %+v", seed, d)
			}
		} else {
			applied(t, held.Text, d, whole.Text)
			shorter++
		}
		held = whole
	}
	if shorter < 60 {
		t.Errorf("%d of 80 changes came as a delta", shorter)
	}
}

// applied checks that delta d applied to base is want.
func applied(t *testing.T, base string, d snapshotValue, want string) {
	t.Helper()
	got, err := snaptext.Apply(base, d.Delta)
	if err != nil || got != want {
		t.Fatalf("the delta applied: %v\nbase:\n%s\ndelta:\n%s\ngot:\n%s\nwant:\n%s", err, base, d.Delta, got, want)
	}
}

// A delta is only from a snapshot the caller can hold: a frame's own
// content, or a snapshot the tab gave out, of this document. Anything
// else gets the whole snapshot, saying why.
func TestSnapshotDeltaBases(t *testing.T) {
	tab, _, seq := tabAt(t, "/mutations.html")
	// The frame's content is a base: since its frame alone.
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#menu"})
	d := snapshotOf(t, tab, protocol.Action{Since: strconv.FormatInt(seq, 10)})
	if d.Delta == "" || !strings.HasPrefix(d.Since, strconv.FormatInt(seq, 10)+"#") {
		t.Fatalf("no delta since the navigate's frame %d: %+v", seq, d)
	}
	held := snapshotOf(t, tab, protocol.Action{NoIdle: true})
	for since, why := range map[string]string{
		strconv.FormatInt(seq, 10) + "#00000000": "is not kept",
		"9999":                                   "not made yet",
	} {
		v := snapshotOf(t, tab, protocol.Action{Since: since, NoIdle: true})
		if v.Delta != "" || v.Text != held.Text || !strings.Contains(v.Full, why) {
			t.Errorf("since %s: %+v, want the whole snapshot because it %s", since, v, why)
		}
	}
	// Nothing changed: a delta of no change, in a line.
	v := snapshotOf(t, tab, protocol.Action{Since: held.ID, NoIdle: true})
	if v.Changes == nil || *v.Changes != 0 || strings.Count(v.Delta, "\n") != 1 {
		t.Errorf("no change since %s: %+v", held.ID, v)
	}
	// Another document: its refs named other elements.
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/refs.html")})
	v = snapshotOf(t, tab, protocol.Action{Since: held.ID})
	if v.Delta != "" || !strings.Contains(v.Full, "another document") || !strings.Contains(v.Text, `"Alpha"`) {
		t.Errorf("since %s, of another document: %+v", held.ID, v)
	}
	for _, bad := range []string{"x", "0", "3#xyz", "-1"} {
		cmdFails(t, tab, protocol.Action{Type: "snapshot", Since: bad}, protocol.CodeBadRequest)
	}
	cmdFails(t, tab, protocol.Action{Type: "snapshot", Since: "1", Format: "json"}, protocol.CodeBadRequest)
}

// A snapshot of a 5 MB page read in parts: each within maxBytes, the
// parts together the snapshot, byte for byte, each read from the
// snapshot as it was taken (no snapshot taken again). A cursor of a
// snapshot the tab no longer keeps is snapshot_gone.
func TestSnapshotPartsCoverAPageOnce(t *testing.T) {
	tab, _, _ := tabAt(t, "/rows.html?n=18000") // a table: 5 MB of snapshot
	const budget = 256 << 10
	long := protocol.Duration(testscale.D(2 * time.Minute)) // a 5 MB snapshot under the race detector on a busy machine
	first := snapshotOf(t, tab, protocol.Action{MaxBytes: budget, NoIdle: true, Timeout: long})
	if first.Bytes < 5e6 || first.Next == "" || len(first.Text) > budget {
		t.Fatalf("the first part: %d bytes of %d, next %q", len(first.Text), first.Bytes, first.Next)
	}
	var whole strings.Builder
	whole.WriteString(first.Text)
	parts := 1
	for next := first.Next; next != ""; parts++ {
		p := snapshotOf(t, tab, protocol.Action{Cursor: next, MaxBytes: budget, Timeout: long})
		if len(p.Text) > budget || p.ID != first.ID || (p.Context == "" && !strings.HasPrefix(p.Text, "- ")) || p.Interactive != first.Interactive || p.Count != first.Count {
			t.Fatalf("part %d from %s: %d bytes, id %s, context %q, %d nodes and %d refs (the snapshot's: %d, %d)", parts, next, len(p.Text), p.ID, p.Context, p.Count, p.Interactive, first.Count, first.Interactive)
		}
		whole.WriteString(p.Text)
		next = p.Next
	}
	if snaptext.Hash(whole.String()) != strings.SplitN(first.ID, "#", 2)[1] || whole.Len() != first.Bytes {
		t.Fatalf("%d parts make %d bytes, not snapshot %s of %d", parts, whole.Len(), first.ID, first.Bytes)
	}
	// A search of it: the matches with their ancestors, counted.
	found := snapshotOf(t, tab, protocol.Action{Search: `"Order 12345"`, NoIdle: true, Timeout: long})
	if found.Matches == nil || *found.Matches != 1 || !strings.Contains(found.Text, `link "Order 12345" [ref=`) || len(found.Text) > 1000 {
		t.Fatalf("search: %+v", found)
	}
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/refs.html")})
	cmdFails(t, tab, protocol.Action{Type: "snapshot", Cursor: first.Next}, protocol.CodeSnapshotGone)
	for _, bad := range []protocol.Action{
		{Cursor: "12"}, {Cursor: "1#zz@3"}, {Cursor: first.Next, Search: "x"}, {Since: "1", Search: "x"}, {MaxBytes: -1},
	} {
		bad.Type = "snapshot"
		cmdFails(t, tab, bad, protocol.CodeBadRequest)
	}
}

// Under the delta policy a frame at the same URL carries what changed
// since the frame before it that carried the page: an observer that
// applies each to the page it has holds the page as each action left it
// (the snapshot the tab gives right after, byte for byte).
func TestFramesCarryDeltas(t *testing.T) {
	tab, frames, _ := tabAt(t, "/refs.html")
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/mutations.html"), Wait: true}))
	seq := res.Sequence
	pages := map[int64]string{}
	nav := frames.until(seq) // the navigation's frame: the whole page
	if nav.FullPage == nil || nav.FullPageFormat != "snapshot" {
		t.Fatalf("the navigation's frame: %+v", nav)
	}
	pages[seq] = *nav.FullPage
	actions := []protocol.Action{{Type: "click", Selector: "#menu"}}
	for i := 1; i <= 12; i++ {
		actions = append(actions, protocol.Action{Type: "eval", Expression: "mutate(" + strconv.Itoa(i*7) + ")"})
	}
	deltas := 0
	for _, a := range actions {
		before := tab.Info().Sequence
		a.BasedOnSequence = protocol.Based(before)
		res := send(t, tab.ID(), protocol.Plan{FullPagePolicy: "delta", Actions: []protocol.Action{a}})
		if !res.OK || res.Sequence != before+1 {
			t.Fatalf("%s: %+v", a.Type, res)
		}
		f := frames.until(res.Sequence)
		if f.FullPage == nil {
			t.Fatalf("frame %d carries nothing: %+v", f.Sequence, f)
		}
		page := *f.FullPage
		if f.FullPageFormat == "snapshot-delta" {
			base, ok := pages[f.FullPageSince]
			if !ok {
				t.Fatalf("frame %d: a delta since frame %d, which carried no page", f.Sequence, f.FullPageSince)
			}
			var err error
			if page, err = snaptext.Apply(base, *f.FullPage); err != nil {
				t.Fatalf("frame %d: %v", f.Sequence, err)
			}
			deltas++
		} else if f.FullPageFormat != "snapshot" {
			t.Fatalf("frame %d: format %q", f.Sequence, f.FullPageFormat)
		}
		pages[f.Sequence] = page
		now := snapshotOf(t, tab, protocol.Action{NoIdle: true})
		if now.ID != strconv.FormatInt(f.Sequence, 10)+"#"+snaptext.Hash(page) {
			t.Fatalf("frame %d's page is not the tab's snapshot %s:\n%s", f.Sequence, now.ID, page)
		}
	}
	if deltas < 10 {
		t.Errorf("%d of %d frames carried a delta", deltas, len(actions))
	}
	// A reload is a new document: its frame carries the whole page, not
	// a delta from the document before.
	res = send(t, tab.ID(), protocol.Plan{FullPagePolicy: "delta", Actions: []protocol.Action{{Type: "reload", Wait: true}}})
	if f := frames.until(res.Sequence); f.FullPage == nil || f.FullPageFormat != "snapshot" || f.FullPageSince != 0 {
		t.Errorf("a reload's frame under the delta policy: %s, since %d", f.FullPageFormat, f.FullPageSince)
	}
	// Without the policy, a frame at the same URL carries nothing.
	res = send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "mutate(99)"}))
	if f := frames.until(res.Sequence); f.FullPage != nil {
		t.Errorf("a frame under url-change carries %q", f.FullPageFormat)
	}
}

// A snapshot that settles after a fill has what the fill started: the
// suggestions a debounced autocomplete asks its server for 300 ms after
// the last key; a snapshot at once has none yet. On a field nothing
// listens to, the settle waits for nothing.
func TestSettleWaitsForWhatTheActionStarted(t *testing.T) {
	tab, _, _ := tabAt(t, "/autocomplete.html?delay=900") // long enough that a busy machine does not draw them before the snapshot at once
	snapshotOf(t, tab, protocol.Action{Settle: true})     // the page's first settle: from now on its timers are seen
	// The fill and a snapshot at once, in one plan: no round trip between.
	res := send(t, tab.ID(), protocol.Plan{Actions: []protocol.Action{
		{Type: "fill", Selector: "#q", Text: "la", BasedOnSequence: protocol.Based(tab.Info().Sequence)},
		{Type: "snapshot", NoIdle: true},
	}})
	var at snapshotValue
	if !res.OK || json.Unmarshal(res.Results[1].Value, &at) != nil {
		t.Fatalf("fill and snapshot: %+v", res)
	}
	if strings.Contains(at.Text, `option "Lamp"`) {
		t.Fatalf("the suggestions came at once: the test shows nothing:\n%s", at.Text)
	}
	s := snapshotOf(t, tab, protocol.Action{Settle: true})
	for _, want := range []string{`option "Lamp"`, `option "Lantern"`, `option "Ladder"`} {
		if !strings.Contains(s.Text, want) {
			t.Fatalf("after the settle (%+v) no %s:\n%s", s.Settled, want, s.Text)
		}
	}
	if s.Settled == nil || s.Settled.Timers+s.Settled.Requests == 0 {
		t.Errorf("the settle saw no timer and no request: %+v", s.Settled)
	}
	cmdMutate(t, tab, protocol.Action{Type: "fill", Selector: "#plain", Text: "quiet"})
	if s := snapshotOf(t, tab, protocol.Action{Settle: true}); s.Settled == nil || s.Settled.Timers != 0 || s.Settled.Requests != 0 {
		t.Errorf("a field nothing listens to: %+v", s.Settled)
	}
	cmdFails(t, tab, protocol.Action{Type: "snapshot", Settle: true, NoIdle: true}, protocol.CodeBadRequest)

	// A new document no settle has asked in yet: the tracker is put in
	// it before the first action, so the settle after it waits too.
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/autocomplete.html?delay=900"), Wait: true})
	res = send(t, tab.ID(), protocol.Plan{Actions: []protocol.Action{
		{Type: "fill", Selector: "#q", Text: "lan", BasedOnSequence: protocol.Based(tab.Info().Sequence)},
		{Type: "snapshot", Settle: true},
	}})
	var after snapshotValue
	if !res.OK || json.Unmarshal(res.Results[1].Value, &after) != nil || !strings.Contains(after.Text, `option "Lantern"`) {
		t.Fatalf("the first action of a new document was not waited for: %+v\n%s", res, after.Text)
	}

	// A page's own function where the tracker would be, answering
	// megabytes: the settle reads numbers only, and ends.
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/faketracker.html"), Wait: true})
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#go"})
	if s := snapshotOf(t, tab, protocol.Action{Settle: true, IdleTimeout: protocol.Duration(time.Second)}); s.Settled == nil || !strings.Contains(s.Text, `button "Go"`) {
		t.Errorf("a settle on a page with a fake tracker: %+v", s)
	}
}

// A snapshot settles by default. On a page whose DOM never stays still,
// a settle runs out once, says so, and later ones in that document wait
// only for renderings and the requests in flight; a new document is
// waited for again.
func TestSettleGivesUpOnARestlessDocument(t *testing.T) {
	tab, _, _ := tabAt(t, "/refs.html")
	if s := snapshotOf(t, tab, protocol.Action{}); s.Settled == nil || s.Settled.RanOut || s.Settled.Restless || s.NetworkWait != "" {
		t.Fatalf("a default snapshot of a quiet page: %+v", s)
	}
	restless := protocol.Action{Type: "eval", Expression: "setInterval(() => { document.body.dataset.tick = Date.now(); }, 10), 1"}
	for round := range 2 {
		cmdMutate(t, tab, restless)
		s := snapshotOf(t, tab, protocol.Action{IdleTimeout: protocol.Duration(500 * time.Millisecond)})
		if s.Settled == nil || !s.Settled.RanOut || s.Settled.Restless || !strings.Contains(s.Note, "before the page settled") {
			t.Fatalf("round %d: a page that keeps changing: want the settle to run out, got %+v", round, s)
		}
		s = snapshotOf(t, tab, protocol.Action{})
		if s.Settled == nil || s.Settled.RanOut || !s.Settled.Restless || !strings.Contains(s.Note, "did not settle before") {
			t.Fatalf("round %d: the next snapshot of that document: want it restless, got %+v", round, s)
		}
		cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/refs.html"), Wait: true})
	}
}

// Once a tab has settled, its every new document has the tracker before
// its own scripts run: a timer set through a setTimeout the page took as
// it started is waited for. Where the tracker came after the page's
// start, that timer is not seen (the control).
func TestSettleSeesTimersOfTheDocumentsStart(t *testing.T) {
	tab, _, _ := tabAt(t, "/refs.html")
	snapshotOf(t, tab, protocol.Action{}) // the tab's first settle
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/earlytimer.html"), Wait: true})
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#go"})
	if s := snapshotOf(t, tab, protocol.Action{}); s.Settled == nil || s.Settled.Timers == 0 || !strings.Contains(s.Text, "Done later") {
		t.Fatalf("a timer of a setTimeout taken at the page's start: %+v", s)
	}

	control, _, _ := tabAt(t, "/earlytimer.html") // no settle yet: the page started without the tracker
	snapshotOf(t, control, protocol.Action{})
	cmdMutate(t, control, protocol.Action{Type: "click", Selector: "#go"})
	if s := snapshotOf(t, control, protocol.Action{}); s.Settled == nil || s.Settled.Timers != 0 {
		t.Fatalf("control: the tracker came after the page took setTimeout, yet saw its timer: %+v", s.Settled)
	}
}

// The snapshot a plan takes right after its navigation is a base for
// the next plan's delta, every time: the page the agent was shown whole
// is not shown whole again after a small change.
func TestSnapshotAfterANavigationIsABase(t *testing.T) {
	tab, _, _ := tabAt(t, "/")
	for i := range 8 {
		res := send(t, tab.ID(), protocol.Plan{Actions: []protocol.Action{
			{Type: "navigate", URL: site(fmt.Sprintf("/refs.html?visit=%d", i)), BasedOnSequence: protocol.Based(tab.Info().Sequence)},
			{Type: "snapshot", Settle: true},
		}})
		var first snapshotValue
		if !res.OK || json.Unmarshal(res.Results[1].Value, &first) != nil || first.ID == "" {
			t.Fatalf("visit %d: navigate and snapshot: %+v", i, res)
		}
		res = send(t, tab.ID(), protocol.Plan{Actions: []protocol.Action{
			{Type: "eval", Expression: "document.body.append('one more line'), 1", BasedOnSequence: protocol.Based(tab.Info().Sequence)},
			{Type: "snapshot", Settle: true, Since: first.ID},
		}})
		var next snapshotValue
		if !res.OK || json.Unmarshal(res.Results[1].Value, &next) != nil {
			t.Fatalf("visit %d: eval and snapshot: %+v", i, res)
		}
		if next.Delta == "" || next.Full != "" {
			t.Fatalf("visit %d: the snapshot since %s, taken right after the navigation, is no base: %q", i, first.ID, next.Full)
		}
	}
}
