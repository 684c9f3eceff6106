package mcpserver

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/snaptext"
)

// What a result shows of the page (Options.Page, and a call's page
// argument): what changed since the page the session was last shown
// (PageDelta), the whole page each time (PageFull), or none (PageNone).
// Whole pages past the budget (Options.PageBudget) come as a summary and
// a link to read them, in every mode.
const (
	PageDelta = "delta"
	PageFull  = "full"
	PageNone  = "none"
)

// PageModes are the values Options.Page takes.
var PageModes = []string{PageDelta, PageFull, PageNone}

// DefaultPageBudget is the most bytes of page a result shows by default:
// about 3,000 tokens, what a form or a shop's product page takes; a
// documentation page is ten to a hundred times more.
const DefaultPageBudget = 12 << 10

// pageParam is the argument that chooses a call's page mode.
const pageParam = "page"

// pageIdle bounds the settle after an action, before its page is read:
// what the action started (a search's suggestions, a form's answer) is
// in it, and a page that does nothing is read at once.
const pageIdle = 2 * time.Second

// pageTimeout bounds reading the page after an action (its wait for the
// network included): a page that takes longer is left for a snapshot.
const pageTimeout = 10 * time.Second

// heldPage is the page a session was last shown of a tab: the snapshot's
// id and text.
type heldPage struct {
	id   string
	text string
}

// held is the page the session was last shown of tab.
func (s *Server) held(ss *mcp.ServerSession, tab string) (heldPage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.shown[ss][tab]
	return h, ok
}

// hold remembers the page the session was shown of tab (id "": none).
func (s *Server) hold(ss *mcp.ServerSession, tab string, h heldPage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneSessions()
	if h.id == "" {
		delete(s.shown[ss], tab)
		return
	}
	if s.shown[ss] == nil {
		s.shown[ss] = map[string]heldPage{}
	}
	s.shown[ss][tab] = h
}

// pageMode is a call's page mode: its argument, else the server's.
func (s *Server) pageMode(args map[string]json.RawMessage) (string, error) {
	mode, err := takeString(args, pageParam)
	if err != nil {
		return "", err
	}
	switch mode {
	case "":
		return s.page, nil
	case PageDelta, PageFull, PageNone:
		return mode, nil
	}
	return "", protocol.Errorf(protocol.CodeBadRequest, "page: %q is not a page mode (delta, full or none)", mode)
}

// pageStep is the snapshot a plan ends with to show the page after its
// action: since the page the session holds in delta mode.
func pageStep(mode string, held heldPage) protocol.Action {
	a := protocol.Action{Type: "snapshot", Settle: true, IdleTimeout: protocol.Duration(pageIdle), Timeout: protocol.Duration(pageTimeout)}
	if mode == PageDelta {
		a.Since = held.id
	}
	return a
}

// pageView is what a result shows of the page, from a snapshot's value.
type pageView struct {
	ID      string `json:"snapshot,omitempty"` // the snapshot's id
	Since   string `json:"since,omitempty"`    // the snapshot the delta is from
	Changes *int   `json:"changes,omitempty"`
	Bytes   int    `json:"pageBytes,omitempty"` // the whole page's snapshot
	// Resource reads the whole snapshot, when the result shows less.
	Resource string `json:"pageResource,omitempty"`
	text     string // the result's text of it
}

// snapshotReply is the part of a snapshot action's value a page view
// reads.
type snapshotReply struct {
	URL     string `json:"url"`
	Title   string `json:"title"`
	Text    string `json:"text"`
	ID      string `json:"id"`
	Bytes   int    `json:"bytes"`
	Since   string `json:"since"`
	Delta   string `json:"delta"`
	Changes *int   `json:"changes"`
	Full    string `json:"full"`
	Matches *int   `json:"matches"`
	Next    string `json:"next"`
}

// view is what a result shows of a page snapshot for a session: the
// change from what it was shown, the whole page within the budget, or a
// summary and where to read it; it remembers what the session now has.
func (s *Server) view(ss *mcp.ServerSession, tab string, raw json.RawMessage, mode string, budget int) (pageView, bool) {
	var r snapshotReply
	if json.Unmarshal(raw, &r) != nil || r.ID == "" {
		return pageView{}, false
	}
	v := pageView{ID: r.ID, Bytes: r.Bytes}
	held, _ := s.held(ss, tab)
	text := r.Text
	if r.Delta != "" {
		var err error
		if text, err = snaptext.Apply(held.text, r.Delta); err != nil || held.id != r.Since {
			text = "" // what the session holds is not the base: it is shown whole, next time
		}
		s.hold(ss, tab, heldPage{id: r.ID, text: text})
		v.Since, v.Changes = r.Since, r.Changes
		if *r.Changes == 0 {
			v.text = "the page did not change since snapshot " + r.Since
			return v, true
		}
		if len(r.Delta) <= budget {
			// As the tab made it: a program applies it to the snapshot
			// it names (the resource), and it is short anyway.
			v.text = fmt.Sprintf("what changed on the page since snapshot %s:\n%s", r.Since, r.Delta)
			return v, true
		}
		if text == "" {
			v.text = fmt.Sprintf("the page changed since snapshot %s (%d changes, %d bytes); take browser_snapshot with page \"full\" to see it", r.Since, *r.Changes, len(r.Delta))
			return v, true
		}
	} else {
		s.hold(ss, tab, heldPage{id: r.ID, text: text})
	}
	shown, folded := text, 0
	if mode == PageDelta {
		// The regions every page of a site repeats (header, navigation,
		// footer) are folded: the main region is what a model reads.
		shown, folded = snaptext.Fold(text)
	}
	if shown = lean(shown); len(shown) <= budget {
		why := ""
		if r.Full != "" && held.id != "" && !strings.Contains(r.Full, "another document") {
			why = " (whole: " + r.Full + ")"
		}
		v.text = "page (snapshot " + r.ID + ")" + why + ":\n" + shown
		if folded > 0 {
			v.text += foldedNote
		}
		return v, true
	}
	v.Resource = SnapshotURI(tab, r.ID)
	var b strings.Builder
	fmt.Fprintf(&b, "page (snapshot %s): too long to show (%d bytes, the budget is %d). ", r.ID, len(text), budget)
	b.WriteString("Read it whole at " + v.Resource + ", a part at a time with browser_snapshot {\"cursor\": \"" + r.ID + "@0\", \"maxBytes\": 20000}, ")
	b.WriteString("or the nodes that hold a text with browser_snapshot {\"search\": \"...\"}.\n")
	b.WriteString(snaptext.Summary(text))
	v.text = b.String()
	return v, true
}

// foldedNote follows a page shown with regions folded.
const foldedNote = `(folded regions: browser_snapshot {"search": "..."} finds what is in them, {"page": "full"} shows them)
`

// locatorAttr matches the attributes a snapshot gives interactive
// elements for programs to find them by other means (id, name, test id,
// an aria-label the name already says): a model acts by ref, and they
// are a sixth of a page's snapshot. The href stays: it says where a link
// goes.
var locatorAttr = regexp.MustCompile(` \[(?:id|name|testid|aria-label)="(?:[^"\\]|\\.)*"\]`)

// lean is a snapshot's text as a result shows it to a model: without the
// locator attributes. The resource and a cursor read the snapshot as the
// tab keeps it, whole, and deltas are of that.
func lean(text string) string { return locatorAttr.ReplaceAllString(text, "") }
