package actors

import (
	"strings"
	"time"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// pageChange is a change of the page's state seen in its events: a new
// document, a same-document URL change, or a crash.
type pageChange struct {
	kind     string // protocol.FrameNavigation, FrameSameDocument or FrameCrash
	url      string
	loaderID string // the new document's loader (FrameNavigation only)
	// unreachable: the new document is Chromium's error page for this
	// URL, which could not be loaded.
	unreachable string
	// failure is why it could not be: Chromium's net::ERR_... text, when
	// the browser said.
	failure string
	// status is the HTTP status of the document the page shows after the
	// change; 0 when it came with none (about:blank, a data: URL).
	status int
	// source is who caused it, when the agent did not: protocol.SourceUser
	// or SourcePage (see sourceOf).
	source string
}

// navState is what the tab actor knows of its page from the events it has
// drained: the committed document, whether it has loaded, and whether a
// navigation is under way. Only the tab goroutine touches it.
type navState struct {
	url      string
	title    string
	loaderID string // the current main-frame document's loader
	status   int    // the current document's HTTP status (0: none)
	// unreachable: the current document is Chromium's error page for
	// this URL.
	unreachable string
	loaded      map[string]bool
	// statuses are the HTTP statuses main-frame documents came with, by
	// loader; a document's arrives before its commit.
	statuses map[string]int
	// failed is the last main-frame document request that failed.
	failed cdpdriver.DocumentFailed
	// navigating: the main frame asked to navigate (or started loading) and
	// has neither committed nor stopped since; navigatingTo is where to,
	// when the browser said.
	navigating   bool
	navigatingTo string
	// asked is where the main frame's document last asked to go
	// (Page.frameRequestedNavigation), until that navigation starts;
	// started is the main frame's latest navigation that has started and
	// not yet committed: together they tell who caused it (sourceOf).
	asked   string
	started *navStart
	// agentInput is when the agent's last input action (a click, a key)
	// ended: the user activation it gave the page lasts a while.
	agentInput time.Time
	// persons: a person may act in the browser (TabOptions.UserFrames).
	persons bool
	// personControl: a person has the tab (person.go), and personInput
	// is when their last input reached the page.
	personControl bool
	personInput   time.Time
	changes       []pageChange // changes not yet turned into frames
	// dialog is the JavaScript dialog open now; dialogNotes are the
	// openings and closings not yet reported.
	dialog      *cdpdriver.DialogOpening
	dialogNotes []dialogNote
	// dialogsClosed counts the dialogs reported closed: the next may open
	// as soon as one closes.
	dialogsClosed int
	// blocked are the requests the whitelist refused, not yet reported.
	blocked  []cdpdriver.RequestBlocked
	detached bool
	// crashed: the renderer crashed and no document has committed since.
	crashed bool
}

// newNavState is the state of a new tab; persons says whether a person
// may act in its browser (TabOptions.UserFrames).
func newNavState(persons bool) *navState {
	return &navState{loaded: map[string]bool{}, statuses: map[string]int{}, persons: persons}
}

// observe folds events into the state, in order.
func (s *navState) observe(evs []cdpdriver.Event) {
	for _, ev := range evs {
		switch e := ev.(type) {
		case cdpdriver.FrameNavigated:
			if !e.Main {
				continue
			}
			s.navigating, s.crashed, s.asked = false, false, ""
			// The old document's title is not the new one's, which is
			// unknown until the browser reports it or the page is read.
			s.url, s.loaderID, s.title, s.unreachable = e.URL, e.LoaderID, "", e.UnreachableURL
			s.status = s.statuses[e.LoaderID]
			c := pageChange{kind: frameNavigation, url: e.URL, loaderID: e.LoaderID, unreachable: e.UnreachableURL, status: s.status,
				source: s.sourceOf(func(n *navStart) bool { return n.loaderID == e.LoaderID || n.kind == historyDifferentDocument })}
			if c.unreachable != "" {
				c.failure = s.failed.Text
			}
			s.changes = append(s.changes, c)
		case cdpdriver.DocumentFailed:
			s.failed = e
		case cdpdriver.DocumentResponse:
			if e.Main {
				s.statuses[e.LoaderID] = e.Status
			}
		case cdpdriver.SameDocumentNavigated:
			if !e.Main {
				continue
			}
			source := s.sourceOf(func(n *navStart) bool { return n.kind == historySameDocument || n.kind == browserSameDocument })
			if e.URL == s.url {
				continue
			}
			s.url = e.URL
			s.changes = append(s.changes, pageChange{kind: frameSameDocument, url: e.URL, status: s.status, source: source})
		case cdpdriver.NavigationRequested:
			if !e.Main {
				continue
			}
			s.navigating, s.navigatingTo = true, e.URL
			if e.ByDocument {
				s.asked = e.URL
			} else {
				s.started = &navStart{loaderID: e.LoaderID, kind: e.Type, byDocument: s.asked != "" && s.asked == e.URL}
				s.asked = ""
			}
		case cdpdriver.DocumentRequested:
			if n := s.started; e.Main && n != nil && n.loaderID == e.LoaderID {
				n.requested, n.gesture = true, e.UserGesture
			}
		case cdpdriver.LoadingStarted:
			if e.Main && !s.navigating {
				s.navigating, s.navigatingTo = true, ""
			}
		case cdpdriver.LoadingStopped:
			if !e.Main {
				continue
			}
			s.navigating, s.asked = false, ""
			if n := s.started; n != nil && n.kind != historyDifferentDocument {
				// A navigation that has not committed by now never will
				// (a download, a 204, one cancelled): it is no one's.
				// (A restore from the back-forward cache commits after
				// the stop.)
				s.started = nil
			}
		case cdpdriver.Lifecycle:
			if e.Main && e.Name == "load" {
				s.loaded[e.LoaderID] = true
			}
		case cdpdriver.TitleChanged:
			if (e.URL == s.url || s.url == "") && !urlTitle(e.Title, e.URL) {
				s.title = e.Title
			}
		case cdpdriver.Crashed:
			s.navigating, s.crashed = false, true
			s.changes = append(s.changes, pageChange{kind: frameCrash, url: s.url, status: s.status, source: protocol.SourcePage})
		case cdpdriver.Detached:
			s.detached = true
		case cdpdriver.RequestBlocked:
			s.blocked = append(s.blocked, e)
			if e.Document {
				s.navigating = false // aborted: no document is coming
			}
		case cdpdriver.DialogOpening:
			s.dialog = &e
			s.dialogNotes = append(s.dialogNotes, dialogNote{dialog: e, open: true})
		case cdpdriver.DialogClosed:
			if s.dialog != nil {
				s.dialogNotes = append(s.dialogNotes, dialogNote{dialog: *s.dialog, closed: e})
				if s.dialog.Type == "beforeunload" && !e.Accepted {
					// The user chose to stay: the navigation that asked is
					// cancelled, and Chromium sends no event that says so
					// (only Page.frameClearedScheduledNavigation, which it
					// also sends when a navigation goes ahead).
					s.navigating = false
				}
			}
			s.dialog = nil
			s.dialogsClosed++
		}
	}
	if len(s.loaded) > 64 { // keep only the current document's mark
		cur := s.loaded[s.loaderID]
		s.loaded = map[string]bool{s.loaderID: cur}
	}
	if len(s.statuses) > 64 { // and status: older documents are gone
		s.statuses = map[string]int{s.loaderID: s.status}
	}
}

// Page.frameStartedNavigating's navigation types that tell how a change
// came about.
const (
	historyDifferentDocument = "historyDifferentDocument" // back, forward, history.go
	historySameDocument      = "historySameDocument"      // the same, to an entry of this document
	browserSameDocument      = "sameDocument"             // a fragment typed into the address bar
)

// navStart is a main-frame navigation that has started: what Chromium
// says of who caused it.
type navStart struct {
	loaderID   string
	kind       string // its navigationType
	byDocument bool   // the document asked for it (see cdpdriver.NavigationRequested)
	requested  bool   // its document request was seen,
	gesture    bool   // with a person's input behind it
}

// sourceOf says who caused the change being committed, from the
// navigation that started it (the one matches takes), and forgets that
// navigation. What Chromium 156 tells apart (docs/protocol.md, "Frame
// sources"):
//
//   - A navigation the browser started, not the document (the address
//     bar, F5, back and forward, a fragment typed into the address
//     bar): a person's.
//   - One the document asked for: a person's when its request carried a
//     user gesture (a click on a link, a form a person submits, a script
//     that runs on their click), the page's without (a timer, a meta
//     refresh, a script on load), and the page's too while the gesture
//     may be the agent's own input (agentActivation).
//   - A history navigation (back, forward) is started by the browser
//     whether the person or the page's history.back() asked, and its
//     request (when it is not restored from the back-forward cache,
//     which sends none) carries a user gesture either way: both are the
//     person's, for CDP says nothing that tells them apart.
//   - Anything else (pushState, a fragment link, a crash, a commit whose
//     start was not seen): the page's.
func (s *navState) sourceOf(matches func(*navStart) bool) string {
	n := s.started
	if n == nil || !matches(n) {
		return protocol.SourcePage
	}
	s.started = nil
	switch {
	case s.personControl && (n.kind == historyDifferentDocument || n.kind == historySameDocument || !n.byDocument ||
		n.gesture && time.Since(s.personInput) < agentActivation):
		// The person who has the tab: their input gave the gesture.
		return protocol.SourceUser
	case !s.persons:
		return protocol.SourcePage // no one else is there
	case n.kind == historyDifferentDocument || n.kind == historySameDocument:
		return protocol.SourceUser
	case !n.byDocument:
		return protocol.SourceUser
	case n.requested && n.gesture && time.Since(s.agentInput) > agentActivation:
		return protocol.SourceUser
	}
	return protocol.SourcePage
}

// agentActivation is how long after the agent's input a user gesture
// may be the agent's: Chromium's user activation lasts 5 s (a script
// navigating 1 s after a click carries it, 6 s after does not), and
// events take a moment to arrive.
const agentActivation = 6 * time.Second

// dialogNote is a dialog that opened (open) or closed (with its answer).
type dialogNote struct {
	dialog cdpdriver.DialogOpening
	open   bool
	closed cdpdriver.DialogClosed
}

// pendingNavigation names the navigation under way, for messages.
func (s *navState) pendingNavigation() string {
	if s.navigatingTo == "" {
		return "a new document"
	}
	return s.navigatingTo
}

// takeChanges returns the changes not yet framed.
func (s *navState) takeChanges() []pageChange {
	c := s.changes
	s.changes = nil
	return c
}

// committed reports whether a document from loaderID has been committed.
func (s *navState) committed(loaderID string) bool {
	for _, c := range s.changes {
		if c.kind == frameNavigation && c.loaderID == loaderID {
			return true
		}
	}
	return false
}

// urlTitle says whether title is only Chromium's stand-in for a page with
// no title (yet): its URL without the scheme.
func urlTitle(title, url string) bool {
	if title == url {
		return title != ""
	}
	_, rest, ok := strings.Cut(url, "://")
	return ok && (title == rest || title == strings.TrimSuffix(rest, "/"))
}
