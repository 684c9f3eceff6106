package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// Navigations that load no document (204, a download) fail at once with
// the browser's text and produce no frame; fragment navigations, repeated
// or not, settle at once into one frame each.
func TestNavigateEdgeCases(t *testing.T) {
	tab := openTab(t)
	seq := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/links.html")})).Sequence
	cases := []struct {
		path   string
		code   protocol.Code
		frames int64
	}{
		{"/no-content", protocol.CodeNavigationFailed, 0},
		{"/download", protocol.CodeNavigationFailed, 0},
		{"/links.html#section", "", 1},
		{"/links.html#section", "", 1},
		{"/links.html#other", "", 1},
		{"/links.html", "", 1},
	}
	for _, tc := range cases {
		// The deadline is long so that waiting for something that never
		// comes shows up as a timeout code, not as a slow pass.
		res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site(tc.path), Timeout: protocol.Duration(20 * time.Second), BasedOnSequence: protocol.Based(seq)}))
		if res.Code != tc.code || res.Sequence != seq+tc.frames {
			t.Fatalf("navigate %s: %+v", tc.path, res)
		}
		if tc.code == protocol.CodeNavigationFailed && res.Error != "net::ERR_ABORTED" {
			t.Fatalf("navigate %s: error %q", tc.path, res.Error)
		}
		if tc.code == "" && res.Results[0].URL != site(tc.path) {
			t.Fatalf("navigate %s reported %q", tc.path, res.Results[0].URL)
		}
		seq = res.Sequence
	}
}

// DR-013: navigate answers at commit, not at load. The frame of the new
// document is published once its content is the loaded page; an action
// that comes before the load waits for it (up to the settle timeout), so
// the frame's content is read before the page changes again.
func TestNavigateAnswersAtCommitFrameWaitsForLoad(t *testing.T) {
	tab := openTab(t, func(o *TabOptions) { o.SettleTimeout = time.Second })
	frames := watchFrames(t, testConn, protocol.DefaultSubjects.TabFrames(tab.ID()))
	// The image is held back for 60s: the load cannot fire during the test.
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/slowload.html")}))
	if !res.OK || res.Results[0].URL != site("/slowload.html") {
		t.Fatalf("navigate: %+v", res)
	}
	seq := res.Sequence
	if v := send(t, tab.ID(), one(protocol.Action{Type: "url"})); !v.OK || v.Sequence != seq {
		t.Fatalf("a read-only action after the commit: %+v", v)
	}
	select {
	case m := <-frames.ch:
		if f, _ := protocol.DecodeFrame(m.Data); f.Sequence == seq {
			t.Fatalf("frame %d published before its page loaded or the next action came: %+v", seq, f)
		}
	default:
	}
	// The next state-changing action waits out the settle timeout, then
	// the frame goes out with the content as it was, and says so.
	ev := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "window.loadFired", BasedOnSequence: protocol.Based(seq)}))
	if !ev.OK || string(ev.Results[0].Value) != "false" {
		t.Fatalf("eval after the commit: %+v", ev)
	}
	f := frames.until(seq)
	if f.FullPage == nil || !strings.Contains(*f.FullPage, "holds back") || !strings.Contains(f.Note, "did not finish loading within 1s") {
		t.Fatalf("frame of a page that did not load: %+v", f)
	}
	if f2 := frames.next(); f2.Sequence != seq+1 || f2.Action != "eval" {
		t.Fatalf("next frame %+v", f2)
	}
}

// navigate --wait answers once its document has loaded, and its frame's
// content is read after the reply: observers still get every frame, in
// order, each with the loaded page's content, URL and title as the reply
// said, whether the next plan comes at once or the next action is in the
// same plan.
func TestNavigateWaitFrameCarriesItsContent(t *testing.T) {
	tab := openTab(t)
	frames := watchFrames(t, testConn, protocol.DefaultSubjects.TabFrames(tab.ID()))
	check := func(r protocol.ActionResult, url, title, text string) {
		t.Helper()
		if !r.OK || r.URL != url || r.Title != title {
			t.Fatalf("navigate --wait to %s answered %+v", url, r)
		}
		f := frames.until(r.Sequence)
		if f.URL != url || f.Title != title || f.FullPage == nil || !strings.Contains(*f.FullPage, text) || f.Note != "" {
			t.Fatalf("frame %d of %s: %+v", r.Sequence, url, f)
		}
	}
	read, form := site("/read.html"), site("/form.html")
	for range 3 { // plan after plan, at once
		a := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: read, Wait: true}))
		b := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: form, Wait: true}))
		check(a.Results[0], read, "Read page", "Read page")
		check(b.Results[0], form, "Form", "Query")
	}
	both := send(t, tab.ID(), protocol.Plan{Actions: []protocol.Action{
		{Type: "navigate", URL: read, Wait: true},
		{Type: "navigate", URL: form, Wait: true},
	}})
	if !both.OK || len(both.Results) != 2 || both.Results[1].Sequence != both.Results[0].Sequence+1 {
		t.Fatalf("two navigations in one plan: %+v", both)
	}
	check(both.Results[0], read, "Read page", "Read page")
	check(both.Results[1], form, "Form", "Query")
}
