package actors

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// snapshotOf takes a snapshot and decodes its value.
func snapshotOf(t *testing.T, tab *Tab, a protocol.Action) snapshotValue {
	t.Helper()
	a.Type = "snapshot"
	r := cmdRead(t, tab, a)
	var v snapshotValue
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("snapshot value %s: %v", r.Value, err)
	}
	return v
}

// refFor finds the ref of the line that mentions want in a text snapshot.
func refFor(t *testing.T, text, want string) string {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, want) {
			if m := regexp.MustCompile(`\[ref=(e\d+)\]`).FindStringSubmatch(line); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("no ref on a line with %q in\n%s", want, text)
	return ""
}

// Refs click the element they were taken for; an element removed makes
// its ref stale (stale_ref, never re-bound); an element inserted before
// does not move it; hidden elements never appear.
func TestSnapshotRefs(t *testing.T) {
	tab, _, _ := tabAt(t, "/refs.html")
	s := snapshotOf(t, tab, protocol.Action{})
	if s.Settled == nil || s.NetworkWait != "" || s.Interactive != 3 {
		t.Fatalf("snapshot: %+v", s)
	}
	for _, hidden := range []string{"Hidden", "Aria hidden"} {
		if strings.Contains(s.Text, `"`+hidden+`"`) {
			t.Fatalf("hidden element %q in the snapshot:\n%s", hidden, s.Text)
		}
	}
	for _, want := range []string{`- heading "Refs" [level=1]`, `- button "Alpha" [ref=`, `- textbox "Query" [ref=`} {
		if !strings.Contains(s.Text, want) {
			t.Fatalf("snapshot lacks %q:\n%s", want, s.Text)
		}
	}
	alpha, beta := refFor(t, s.Text, `"Alpha"`), refFor(t, s.Text, `"Beta"`)

	// An element inserted before: the ref still clicks the same element.
	cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "insertBefore()"})
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: beta})
	cmdExpect(t, tab, "window.clicked", `"b"`)
	// The same element keeps its ref in a later snapshot.
	if again := snapshotOf(t, tab, protocol.Action{NoIdle: true}); refFor(t, again.Text, `"Beta"`) != beta {
		t.Fatalf("Beta changed ref:\n%s", again.Text)
	}
	// Refs work in other element-taking actions too.
	q := refFor(t, s.Text, `"Query"`)
	cmdMutate(t, tab, protocol.Action{Type: "type", Selector: q, Text: "hi"})
	cmdExpect(t, tab, "document.getElementById('q').value", `"hi"`)

	// Removed: stale_ref naming the ref, in every kind of action.
	cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "document.getElementById('a').remove()"})
	for _, a := range []protocol.Action{
		{Type: "click", Selector: alpha},
		{Type: "focus", Selector: alpha},
		{Type: "text", Selector: alpha},
		{Type: "snapshot", Selector: alpha},
	} {
		res := cmdFails(t, tab, a, protocol.CodeStaleRef)
		if !strings.Contains(res.Error, alpha) {
			t.Fatalf("%s of a removed ref: %+v", a.Type, res)
		}
	}
	cmdExpect(t, tab, "window.clicked", `"b"`) // nothing else was clicked
	// wait-for --gone on a stale ref is done at once.
	cmdRead(t, tab, protocol.Action{Type: "wait-for", Selector: alpha, Gone: true, Timeout: protocol.Duration(time.Second)})

	// A ref no snapshot gave out is a mistake, not a page change.
	n := 0
	for _, m := range regexp.MustCompile(`\[ref=e(\d+)\]`).FindAllStringSubmatch(snapshotOf(t, tab, protocol.Action{NoIdle: true}).Text, -1) {
		k, _ := strconv.Atoi(m[1])
		n = max(n, k)
	}
	last := "e" + strconv.Itoa(n)
	for _, ref := range []string{"e" + strconv.Itoa(n+1), "e99999999999999999999"} {
		res := cmdFails(t, tab, protocol.Action{Type: "click", Selector: ref}, protocol.CodeBadRequest)
		if want := "unknown ref: " + ref + " was never given out on this tab (its snapshots gave out e1 to " + last + ")"; !strings.HasPrefix(res.Error, want) {
			t.Fatalf("click on ref %s: %q, want %q", ref, res.Error, want)
		}
	}

	// A new document: the old refs are stale.
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/refs.html")})
	cmdFails(t, tab, protocol.Action{Type: "click", Selector: beta}, protocol.CodeStaleRef)
	// Also when the new page was snapshotted (its frame's content, at a
	// new URL): its refs are new numbers, so an old ref names nothing on
	// it rather than the element that now has its number.
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/refs.html?again"), Wait: true})
	cmdFails(t, tab, protocol.Action{Type: "click", Selector: beta}, protocol.CodeStaleRef)
	cmdExpect(t, tab, "window.clicked === undefined", `true`)
	if again := snapshotOf(t, tab, protocol.Action{NoIdle: true}); refFor(t, again.Text, `"Beta"`) == beta {
		t.Fatalf("Beta on a new page has the old page's ref %s:\n%s", beta, again.Text)
	}
}

// Options: a subtree, interactive only, depth and node caps, JSON.
func TestSnapshotOptions(t *testing.T) {
	tab, _, _ := tabAt(t, "/search.html?q=lamps")
	sub := snapshotOf(t, tab, protocol.Action{Selector: "ol"})
	if !strings.HasPrefix(sub.Text, "- list:") || strings.Contains(sub.Text, "heading") {
		t.Fatalf("subtree:\n%s", sub.Text)
	}
	inter := snapshotOf(t, tab, protocol.Action{Interactive: true})
	if strings.Contains(inter.Text, "listitem") || !strings.Contains(inter.Text, `- link "Desk lamp"`) {
		t.Fatalf("interactive only:\n%s", inter.Text)
	}
	shallow := snapshotOf(t, tab, protocol.Action{Depth: 1})
	if strings.Contains(shallow.Text, "\n  -") {
		t.Fatalf("depth 1 has nested lines:\n%s", shallow.Text)
	}
	capped := snapshotOf(t, tab, protocol.Action{MaxNodes: 3})
	if !capped.Truncated || capped.Count != 3 || !strings.Contains(capped.Text, "truncated after 3 nodes") {
		t.Fatalf("capped: %+v", capped)
	}
	js := snapshotOf(t, tab, protocol.Action{Format: "json"})
	if js.Text != "" || len(js.Nodes) == 0 || js.Nodes[0].Role != "heading" {
		t.Fatalf("json: %+v", js)
	}
	cmdFails(t, tab, protocol.Action{Type: "snapshot", Selector: "#missing"}, protocol.CodeElementNotFound)
}

// The wait for network idle before a snapshot (networkIdle) is bounded:
// on timeout the snapshot is taken anyway and says so.
func TestSnapshotNetworkIdleTimeout(t *testing.T) {
	tab, _, _ := tabAt(t, "/fetchslow.html")
	s := snapshotOf(t, tab, protocol.Action{NetworkIdle: true, IdleTimeout: protocol.Duration(300 * time.Millisecond)})
	if s.NetworkIdle || !strings.Contains(s.Note, "network idle") || !strings.Contains(s.Text, "1500 ms") {
		t.Fatalf("snapshot during a slow fetch: %+v", s)
	}
	// A short action timeout bounds the wait too, leaving the snapshot
	// time to be taken.
	tab, _, _ = tabAt(t, "/fetchslow.html")
	s = snapshotOf(t, tab, protocol.Action{NetworkIdle: true, Timeout: protocol.Duration(time.Second)})
	if s.NetworkIdle || !strings.Contains(s.Note, "timed out after") || strings.Contains(s.Note, "5s") {
		t.Fatalf("snapshot with a 1s timeout during a slow fetch: %+v", s)
	}
}

// Frames carry the snapshot as their fullPage by default, refs included.
func TestFrameContentIsTheSnapshot(t *testing.T) {
	tab, frames, _ := tabAt(t, "/")
	r := cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/refs.html")})
	f := frames.until(r.Sequence)
	if f.FullPageFormat != "snapshot" || f.FullPage == nil || !strings.Contains(*f.FullPage, `- button "Alpha" [ref=`) {
		t.Fatalf("frame %+v", f)
	}
}

// A plan can choose its frames' content (html, text, none) and when they
// carry it (always, document-change).
func TestPlanFullPageSettings(t *testing.T) {
	tab, frames, seq := tabAt(t, "/")
	plan := func(format, policy string, a protocol.Action) protocol.Frame {
		t.Helper()
		a.BasedOnSequence = protocol.Based(seq)
		res := send(t, tab.ID(), protocol.Plan{FullPage: format, FullPagePolicy: policy, Actions: []protocol.Action{a}})
		if !res.OK {
			t.Fatalf("plan %s/%s: %+v", format, policy, res)
		}
		seq = res.Sequence
		return frames.until(seq)
	}
	if f := plan("html", "", protocol.Action{Type: "navigate", URL: site("/search.html")}); f.FullPageFormat != "html" || !strings.Contains(*f.FullPage, `<ol id="results">`) {
		t.Fatalf("html: %+v", f)
	}
	if f := plan("text", "always", protocol.Action{Type: "click", Selector: "#result1"}); f.FullPageFormat != "text" || !strings.Contains(*f.FullPage, "Product 1") {
		t.Fatalf("text, always: %+v", f)
	}
	if f := plan("", "always", protocol.Action{Type: "eval", Expression: "1"}); f.FullPageFormat != "snapshot" || f.FullPage == nil {
		t.Fatalf("always: %+v", f)
	}
	if f := plan("", "", protocol.Action{Type: "reload", Wait: true}); f.FullPage != nil {
		t.Fatalf("url-change, reload: %+v", f)
	}
	if f := plan("", "document-change", protocol.Action{Type: "reload", Wait: true}); f.FullPage == nil {
		t.Fatalf("document-change, reload: %+v", f)
	}
	if f := plan("none", "", protocol.Action{Type: "navigate", URL: site("/")}); f.FullPage != nil || f.FullPageFormat != "" {
		t.Fatalf("none: %+v", f)
	}
	res := send(t, tab.ID(), []byte(`{"fullPage":"pdf","action":{"type":"eval","expression":"1"}}`))
	if res.Code != protocol.CodeBadRequest || !strings.Contains(res.Error, `fullPage: "pdf" is not one of snapshot, html, text, none`) {
		t.Fatalf("bad fullPage: %+v", res)
	}
}

// On a page that keeps fetching (a poll every 300 ms) the network is
// never idle: the first networkIdle snapshot's wait runs out, and the next ones do
// not run into their deadline again but wait only for the requests in
// flight. A network seen idle, with no request started since, is idle at
// once (a long poll that ends meanwhile does not undo it); a request
// started after that is waited for again.
func TestSnapshotNetworkIdleIsRemembered(t *testing.T) {
	tab, _, _ := tabAt(t, "/poll.html")
	cmdPoll(t, tab, "window.polls >= 2", 10*time.Second)
	first := snapshotOf(t, tab, protocol.Action{NetworkIdle: true, IdleTimeout: protocol.Duration(time.Second)})
	if first.NetworkIdle || first.NetworkWait != "timeout" {
		t.Fatalf("first snapshot of a polling page: want the wait to run out, got %+v", first)
	}
	for i := range 2 {
		s := snapshotOf(t, tab, protocol.Action{NetworkIdle: true})
		if s.NetworkIdle || s.NetworkWait != "background" || !strings.Contains(s.Note, "keeps fetching in the background") {
			t.Fatalf("snapshot %d of a polling page after a wait ran out: want only the requests in flight waited for, got %+v", i+2, s)
		}
	}
	// Polling stopped, the network is seen idle: from then on it is idle
	// at once, however often it is asked.
	cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "stopPolling(), 1"})
	cmdRead(t, tab, protocol.Action{Type: "ready", NetworkIdle: true, Timeout: protocol.Duration(10 * time.Second)})
	for i := range 2 {
		if s := snapshotOf(t, tab, protocol.Action{NetworkIdle: true}); !s.NetworkIdle || s.NetworkWait != "none" {
			t.Fatalf("snapshot %d of a page seen idle, no request since: want no wait, got %+v", i+1, s)
		}
	}
	// A request started after that is waited for.
	cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "fetchOnce('1s').then(() => { window.fetchedOnce = true; }), 1"})
	if s := snapshotOf(t, tab, protocol.Action{NetworkIdle: true}); !s.NetworkIdle || s.NetworkWait != "waited" {
		t.Fatalf("snapshot after a new request: want a wait for idle, got %+v", s)
	}
	cmdExpect(t, tab, "window.fetchedOnce", "true")
	// A request open past LongRequestAfter is taken for a long poll: the
	// network is idle without it, and its end does not undo that.
	cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "window.long = fetchOnce('3s').then(() => true), 1"})
	cmdRead(t, tab, protocol.Action{Type: "ready", NetworkIdle: true, Timeout: protocol.Duration(10 * time.Second)})
	cmdExpect(t, tab, "window.long", "true")
	if s := snapshotOf(t, tab, protocol.Action{NetworkIdle: true}); !s.NetworkIdle || s.NetworkWait != "none" {
		t.Fatalf("snapshot after a long poll seen idle ended: want no wait, got %+v", s)
	}
}
