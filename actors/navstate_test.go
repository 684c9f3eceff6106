package actors

import (
	"testing"
	"time"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// Chromium reports a page without a title (yet) with its URL, less the
// scheme, as the title; that is not the page's title.
func TestURLTitle(t *testing.T) {
	for _, tc := range []struct {
		title, url string
		want       bool
	}{
		{"127.0.0.1:3000/meta.html", "http://127.0.0.1:3000/meta.html", true},
		{"example.com", "https://example.com/", true},
		{"example.com/", "https://example.com/", true},
		{"Example Domain", "https://example.com/", false},
		{"about:blank", "about:blank", true},
		{"", "http://x/", false},
	} {
		if got := urlTitle(tc.title, tc.url); got != tc.want {
			t.Errorf("urlTitle(%q, %q) = %v", tc.title, tc.url, got)
		}
	}
}

// Navigation state is keyed by loaderId: the load event of a document
// that was replaced arrives late and completes nothing of the new one.
func TestNavStateLateLoadOfOldDocument(t *testing.T) {
	s := newNavState(false)
	s.observe([]cdpdriver.Event{
		cdpdriver.FrameNavigated{LoaderID: "old", URL: "http://a/", Main: true},
		cdpdriver.FrameNavigated{LoaderID: "new", URL: "http://b/", Main: true},
		cdpdriver.Lifecycle{LoaderID: "old", Name: "load", Main: true}, // late
	})
	if s.loaderID != "new" || s.url != "http://b/" {
		t.Fatalf("current document %s at %s, want new at http://b/", s.loaderID, s.url)
	}
	if s.loaded["new"] || !s.committed("new") {
		t.Fatalf("the old document's load counted for the new one: loaded %v", s.loaded)
	}
	s.observe([]cdpdriver.Event{cdpdriver.Lifecycle{LoaderID: "new", Name: "DOMContentLoaded", Main: true}})
	if s.loaded["new"] {
		t.Fatal("DOMContentLoaded taken for load")
	}
	s.observe([]cdpdriver.Event{cdpdriver.Lifecycle{LoaderID: "new", Name: "load", Main: true}})
	if !s.loaded["new"] {
		t.Fatal("the new document's load was not seen")
	}
}

// Who caused a change, from the events Chromium 156 sends for it
// (recorded in a headed browser under Xvfb, driven by xdotool; the table
// is in docs/protocol.md, "Frame sources").
func TestNavStateSource(t *testing.T) {
	const u, v = "http://h/a.html", "http://h/b.html"
	asked := func(reason string) cdpdriver.Event {
		return cdpdriver.NavigationRequested{URL: v, Reason: reason, Main: true, ByDocument: true}
	}
	started := func(kind, loader string) cdpdriver.Event {
		return cdpdriver.NavigationRequested{URL: v, Reason: kind, Type: kind, LoaderID: loader, Main: true}
	}
	request := func(loader string, gesture bool) cdpdriver.Event {
		return cdpdriver.DocumentRequested{LoaderID: loader, Main: true, UserGesture: gesture}
	}
	commit := func(loader string) cdpdriver.Event {
		return cdpdriver.FrameNavigated{LoaderID: loader, URL: v, Main: true}
	}
	within := cdpdriver.SameDocumentNavigated{URL: v + "#x", Main: true}
	for _, tc := range []struct {
		name   string
		events []cdpdriver.Event
		want   string
	}{
		{"address bar", []cdpdriver.Event{started("differentDocument", "L2"), request("L2", true), commit("L2")}, protocol.SourceUser},
		{"reload button (F5), no gesture", []cdpdriver.Event{started("reload", "L2"), request("L2", false), commit("L2")}, protocol.SourceUser},
		{"link clicked by a person", []cdpdriver.Event{asked("anchorClick"), started("differentDocument", "L2"), request("L2", true), commit("L2")}, protocol.SourceUser},
		{"form submitted by a person", []cdpdriver.Event{asked("formSubmissionPost"), started("differentDocument", "L2"), request("L2", true), commit("L2")}, protocol.SourceUser},
		{"script on a person's click", []cdpdriver.Event{asked("scriptInitiated"), started("differentDocument", "L2"), request("L2", true), commit("L2")}, protocol.SourceUser},
		{"script on a timer", []cdpdriver.Event{asked("scriptInitiated"), started("differentDocument", "L2"), request("L2", false), commit("L2")}, protocol.SourcePage},
		{"link clicked by a timer's script", []cdpdriver.Event{asked("anchorClick"), started("differentDocument", "L2"), request("L2", false), commit("L2")}, protocol.SourcePage},
		{"meta refresh", []cdpdriver.Event{asked("metaTagRefresh"), started("differentDocument", "L2"), request("L2", false), commit("L2")}, protocol.SourcePage},
		{"asked, its request unseen", []cdpdriver.Event{asked("scriptInitiated"), started("differentDocument", "L2"), commit("L2")}, protocol.SourcePage},
		// A back-forward cache restore commits the old document's loader,
		// after the frame stopped loading.
		{"back (Alt+Left, or history.back())", []cdpdriver.Event{started("historyDifferentDocument", "L3"), cdpdriver.LoadingStopped{Main: true}, commit("L1")}, protocol.SourceUser},
		{"back, not from the cache", []cdpdriver.Event{started("historyDifferentDocument", "L3"), request("L3", true), commit("L3")}, protocol.SourceUser},
		{"back within the document", []cdpdriver.Event{started("historySameDocument", "L3"), within}, protocol.SourceUser},
		{"pushState or a fragment link", []cdpdriver.Event{within}, protocol.SourcePage},
		{"commit of a navigation not seen to start", []cdpdriver.Event{started("differentDocument", "L2"), commit("L9")}, protocol.SourcePage},
		{"crash", []cdpdriver.Event{cdpdriver.Crashed{}}, protocol.SourcePage},
		{"pushState after a back that never committed", []cdpdriver.Event{started("historySameDocument", "L3"), cdpdriver.LoadingStopped{Main: true}, within}, protocol.SourcePage},
		{"pushState after a back to an entry of the same URL", []cdpdriver.Event{started("historySameDocument", "L3"), cdpdriver.SameDocumentNavigated{URL: u, Main: true}, within}, protocol.SourcePage},
		{"fragment typed into the address bar", []cdpdriver.Event{started("sameDocument", "L3"), within}, protocol.SourceUser},
		{"another DevTools client's Page.navigate", []cdpdriver.Event{started("differentDocument", "L2"), request("L2", false), commit("L2")}, protocol.SourceUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newNavState(true)
			s.observe([]cdpdriver.Event{cdpdriver.FrameNavigated{LoaderID: "L1", URL: u, Main: true}})
			s.takeChanges()
			s.observe(tc.events)
			c := s.takeChanges()
			if len(c) != 1 || c[0].source != tc.want {
				t.Fatalf("changes %+v, want one of source %q", c, tc.want)
			}
		})
	}
}

// A gesture while the agent's own input may have given it (a click the
// agent made a moment ago) is not a person's: the page's script that
// navigates a second after the agent's click is the page's.
func TestNavStateAgentGestureIsNotAPerson(t *testing.T) {
	s := newNavState(true)
	s.agentInput = time.Now()
	s.observe([]cdpdriver.Event{
		cdpdriver.NavigationRequested{URL: "http://h/", Main: true, ByDocument: true},
		cdpdriver.NavigationRequested{URL: "http://h/", LoaderID: "L", Type: "differentDocument", Main: true},
		cdpdriver.DocumentRequested{LoaderID: "L", Main: true, UserGesture: true},
		cdpdriver.FrameNavigated{LoaderID: "L", URL: "http://h/", Main: true},
	})
	if c := s.takeChanges(); len(c) != 1 || c[0].source != protocol.SourcePage {
		t.Fatalf("changes %+v, want one of source page", c)
	}
}

// In a browser no person can reach (headless, framebus's own), every
// change the agent did not cause is the page's: a page's history.back()
// is not taken for a person's.
func TestNavStateNoPerson(t *testing.T) {
	s := newNavState(false)
	s.observe([]cdpdriver.Event{
		cdpdriver.NavigationRequested{URL: "http://h/", LoaderID: "L", Type: "historyDifferentDocument", Main: true},
		cdpdriver.FrameNavigated{LoaderID: "L", URL: "http://h/", Main: true},
	})
	if c := s.takeChanges(); len(c) != 1 || c[0].source != protocol.SourcePage {
		t.Fatalf("changes %+v, want one of source page", c)
	}
}
