package actors

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// Navigations that never commit: one a dismissed beforeunload dialog
// cancelled, and one whose server does not answer. Neither may leave the
// tab waiting out the deadline of every later action, and no action may
// run in a document other than the one its guard checked.

// hungSite serves testdata/site, and at /hung a page whose server answers
// only when the test releases it.
type hungSite struct {
	*httptest.Server
	requested chan struct{} // a request for /hung arrived
	aborted   chan struct{} // the browser gave one up before the answer
	answer    chan struct{} // closed by release: /hung answers
}

func startHungSite(t *testing.T) *hungSite {
	t.Helper()
	s := &hungSite{requested: make(chan struct{}, 16), aborted: make(chan struct{}, 16), answer: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("../testdata/site")))
	mux.HandleFunc("/hung", func(w http.ResponseWriter, r *http.Request) {
		s.requested <- struct{}{}
		select {
		case <-s.answer:
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprint(w, "<!doctype html><title>hung</title><p>arrived at last</p>")
		case <-r.Context().Done():
			s.aborted <- struct{}{}
		}
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)   // runs last: it waits for the handlers,
	t.Cleanup(s.release) // which release lets go
	return s
}

// release lets /hung answer, once.
func (s *hungSite) release() {
	select {
	case <-s.answer:
	default:
		close(s.answer)
	}
}

// await waits for a signal on ch, failing after a deadline.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: not within 20s", what)
	}
}

// hungTabAt opens a tab at path on s, watching its frames.
func hungTabAt(t *testing.T, s *hungSite, path string) (*Tab, *frameWatch, int64) {
	t.Helper()
	tab := openTab(t)
	frames := watchFrames(t, testConn, protocol.DefaultSubjects.TabFrames(tab.ID()))
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: s.URL + path, Wait: true}))
	if !res.OK {
		t.Fatalf("navigate %s: %+v", path, res)
	}
	frames.until(res.Sequence)
	return tab, frames, res.Sequence
}

// startPageNavigationToHung makes the page of tab, on its own (a timer),
// go to /hung, and returns once the browser has asked for it, with the
// sequence of the eval that set the timer.
func startPageNavigationToHung(t *testing.T, s *hungSite, tab *Tab, frames *frameWatch) int64 {
	t.Helper()
	r := cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "setTimeout(() => { location.href = '/hung'; }, 300), 1"})
	frames.until(r.Sequence)
	await(t, s.requested, "the page's request for /hung")
	return r.Sequence
}

// Dismissing a beforeunload dialog cancels the navigation that asked for
// it: the dialog action settles at once and the tab stays usable on the
// same page, whether a link or the page's own timer asked to leave.
func TestBeforeUnloadDismissedLeavesTabUsable(t *testing.T) {
	cases := []struct {
		name  string
		leave []string // clicks that make the page ask to leave
	}{
		{"link", []string{"#b", "#l"}}, // #b gives the page its user activation
		{"page timer", []string{"#later"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab, _, _ := tabAt(t, "/stuck-beforeunload.html")
			events := cmdWatchDialogs(t, tab)
			for _, sel := range tc.leave {
				cmdMutate(t, tab, protocol.Action{Type: "click", Selector: sel, Timeout: protocol.Duration(10 * time.Second)})
			}
			if ev := cmdNextDialog(t, events); !ev.Open || ev.Type != "beforeunload" {
				t.Fatalf("dialog event %+v, want an open beforeunload dialog", ev)
			}
			d := cmdMutate(t, tab, protocol.Action{Type: "dialog", Answer: "dismiss", Timeout: protocol.Duration(5 * time.Second)})
			if d.URL != site("/stuck-beforeunload.html") {
				t.Fatalf("dismissed, the page left: %+v", d)
			}
			if ev := cmdNextDialog(t, events); ev.Open || ev.Answer != "dismiss" {
				t.Fatalf("dialog event %+v, want it closed with dismiss", ev)
			}
			if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "location.href", Timeout: protocol.Duration(5 * time.Second)})); !r.OK || string(r.Results[0].Value) != `"`+site("/stuck-beforeunload.html")+`"` {
				t.Fatalf("eval after the dismissed beforeunload: %+v", r)
			}
			if r := send(t, tab.ID(), one(protocol.Action{Type: "text", Selector: "#b", Timeout: protocol.Duration(5 * time.Second)})); !r.OK {
				t.Fatalf("text after the dismissed beforeunload: %+v", r)
			}
			// Accepted, it leaves, as the dialog action's frame.
			cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#l", Timeout: protocol.Duration(10 * time.Second)})
			if ev := cmdNextDialog(t, events); !ev.Open || ev.Type != "beforeunload" {
				t.Fatalf("second dialog event %+v", ev)
			}
			if a := cmdMutate(t, tab, protocol.Action{Type: "dialog", Answer: "accept", Timeout: protocol.Duration(10 * time.Second)}); a.URL != site("/read.html") {
				t.Fatalf("accepted, the dialog's frame is at %s, want %s", a.URL, site("/read.html"))
			}
		})
	}
}

// A click on a link whose server never answers fails with timeout when
// its deadline passes, saying so, and stops the load: the click ran, so
// it makes its frame, but nothing lands later, and the next actions run
// at once on the page the click left the tab on.
func TestClickOnHungLinkStopsItsNavigation(t *testing.T) {
	s := startHungSite(t)
	tab, frames, seq := hungTabAt(t, s, "/stuck-hung.html")
	res := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: "#lslow", Timeout: protocol.Duration(2 * time.Second), BasedOnSequence: protocol.Based(seq)}))
	if res.OK || res.Code != protocol.CodeTimeout || !strings.Contains(res.Error, s.URL+"/hung") || !strings.Contains(res.Error, "stopped") ||
		res.Sequence != seq+1 || len(res.Results) != 1 || res.Results[0].Sequence != seq+1 {
		t.Fatalf("click on a link that hangs: want a timeout saying the navigation was stopped, and frame %d; got %+v", seq+1, res)
	}
	if f := frames.next(); f.Sequence != seq+1 || f.Action != "click" || f.Source != protocol.SourceAgent || f.URL != s.URL+"/stuck-hung.html" {
		t.Fatalf("click's frame %+v", f)
	}
	await(t, s.aborted, "the browser giving up /hung")
	// Based on the click's frame: no page frame came in between.
	r := cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#b", Timeout: protocol.Duration(5 * time.Second)})
	if r.Sequence != seq+2 || r.URL != s.URL+"/stuck-hung.html" {
		t.Fatalf("click after: %+v", r)
	}
	if v := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "text", Selector: "#b", Timeout: protocol.Duration(5 * time.Second)})); v != "clicked" {
		t.Fatalf("text after: %q", v)
	}
	if n := cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: s.URL + "/read.html", Timeout: protocol.Duration(5 * time.Second)}); n.URL != s.URL+"/read.html" {
		t.Fatalf("navigate after: %+v", n)
	}
}

// While a navigation the page started hangs, an action that needs the
// renderer waits for it within its deadline, then fails saying why, and
// is never sent: Chromium would hold it back and run it in the next
// document, one its guard never checked.
func TestHungPageNavigationRunsNoActionLater(t *testing.T) {
	s := startHungSite(t)
	tab, frames, _ := hungTabAt(t, s, "/stuck-hung.html")
	seq := startPageNavigationToHung(t, s, tab, frames)
	for _, a := range []protocol.Action{
		{Type: "eval", Expression: "localStorage.setItem('evalRanIn', location.pathname), location.href", Timeout: protocol.Duration(2 * time.Second), BasedOnSequence: protocol.Based(seq)},
		{Type: "click", Selector: "#b", Timeout: protocol.Duration(time.Second), BasedOnSequence: protocol.Based(seq)},
		{Type: "text", Timeout: protocol.Duration(time.Second)},
	} {
		res := cmdFails(t, tab, a, protocol.CodeTimeout)
		if !strings.Contains(res.Error, s.URL+"/hung") || !strings.Contains(res.Error, "not sent") || len(res.Results) != 0 {
			t.Fatalf("%s while the page's navigation hangs: want a timeout naming it, the action not sent; got %+v", a.Type, res)
		}
	}
	// The server answers at last: the page's navigation lands as its frame.
	s.release()
	if f := frames.next(); f.Sequence != seq+1 || f.Source != protocol.SourcePage || f.URL != s.URL+"/hung" {
		t.Fatalf("page frame %+v", f)
	}
	// The eval ran in neither document.
	cmdExpect(t, tab, "[location.pathname, localStorage.getItem('evalRanIn')]", `["/hung",null]`)
}

// A navigate while a navigation the page started hangs replaces it at
// once, as a browser's address bar does: it neither waits out its
// deadline for it nor lets it land later.
func TestNavigateSupersedesAHungPageNavigation(t *testing.T) {
	s := startHungSite(t)
	tab, frames, _ := hungTabAt(t, s, "/stuck-hung.html")
	seq := startPageNavigationToHung(t, s, tab, frames)
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: s.URL + "/read.html", Timeout: protocol.Duration(5 * time.Second), BasedOnSequence: protocol.Based(seq)}))
	if !res.OK || res.Sequence != seq+1 || res.Results[0].URL != s.URL+"/read.html" {
		t.Fatalf("navigate while the page's navigation hangs: %+v", res)
	}
	await(t, s.aborted, "the browser giving up /hung")
	if f := frames.next(); f.Sequence != seq+1 || f.Action != "navigate" || f.URL != s.URL+"/read.html" {
		t.Fatalf("navigate's frame %+v", f)
	}
	r := cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "location.pathname", Timeout: protocol.Duration(5 * time.Second)})
	if string(r.Value) != `"/read.html"` || r.Sequence != seq+2 {
		t.Fatalf("eval after: %+v", r)
	}
}
