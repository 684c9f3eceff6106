package protocol

import (
	"bytes"
	"encoding/json"
	"time"
)

// Sources of a frame: who caused the change it records.
const (
	SourceAgent   = "agent"   // an action from a plan
	SourcePage    = "page"    // the page itself: a script or meta redirect, a timer, pushState, a crash
	SourceUser    = "user"    // a person at the browser: the address bar, a click, back or forward, a form they submit
	SourceBrowser = "browser" // the tab being opened
	SourceNode    = "node"    // the node itself: a tab it brought back after it restarted
)

// Actions a frame can name besides the action types of a plan.
const (
	FrameOpen         = "open"          // the tab's first frame
	FrameNavigation   = "navigation"    // the page loaded a new document on its own
	FrameSameDocument = "same-document" // the page changed its URL without a new document (pushState, hash)
	FrameCrash        = "crash"         // the renderer crashed
	// FrameRestore: the node restarted and brought the tab back under its
	// id, its page loaded again at the last frame's URL in a new page:
	// what the old page held in memory (script state, form input,
	// scroll) is gone. Its note says what happened.
	FrameRestore = "restore"
	// FrameClose is the tab's last frame: the tab closed (a close
	// request, its page closed in the browser, its browser closed or
	// gone). Its URL and title are the page's as it closed; nothing
	// follows it. A node that stops (or dies) makes none: its tabs end
	// with it, and watchers learn that from its liveness.
	FrameClose = "close"
)

// Frame is one numbered state of a tab. Sequence starts at 1 and grows by
// exactly one per state change; a plan's action runs only while the frame
// it names is the tab's latest.
type Frame struct {
	Version  int    `json:"version"`
	Tab      string `json:"tab"`
	Sequence int64  `json:"sequence"`
	// Node is the name of the node whose browser runs the tab.
	Node  string `json:"node,omitempty"`
	URL   string `json:"url"`
	Title string `json:"title"`
	// Status is the HTTP status the frame's document came with (404 for
	// a page not found); absent when it came with none (about:blank,
	// data: URLs, Chromium's error page).
	Status int       `json:"status,omitempty"`
	Action string    `json:"action"`
	Source string    `json:"source"`
	PlanID string    `json:"planId,omitempty"`
	Agent  string    `json:"agent,omitempty"`
	Time   time.Time `json:"time"`
	// FullPage is the page content, present when the URL changed from the
	// previous frame. FullPageFormat says what it is (html, text, ...).
	FullPage       *string `json:"fullPage,omitempty"`
	FullPageFormat string  `json:"fullPageFormat,omitempty"`
	// FullPageSince is the frame whose snapshot a "snapshot-delta"
	// FullPage is the change from (fullPagePolicy delta): applied to it
	// (snaptext.Apply) it is this frame's snapshot.
	FullPageSince int64 `json:"fullPageSince,omitempty"`
	// FullPageRef stands in for FullPage when the content is larger than
	// the bus carries in one message: fetch it in chunks (ContentRequest).
	FullPageRef *ContentRef `json:"fullPageRef,omitempty"`
	// Control is on the frames that change who drives the tab
	// (handoff, takeover, handback): see docs/people.md.
	Control *Control `json:"control,omitempty"`
	// Note explains an unusual frame, e.g. content left out because the
	// document was replaced before it finished loading.
	Note string `json:"note,omitempty"`
}

// DecodeFrame parses a frame message.
func DecodeFrame(data []byte) (Frame, error) {
	var f Frame
	if err := json.Unmarshal(data, &f); err != nil {
		return Frame{}, badRequest("frame: invalid JSON: %v", err)
	}
	return f, nil
}

// ContentRef says where a frame's content too large for one message is:
// in the JetStream object store Bucket under Object (kept as long as the
// frame is in the history), or, on a bus without JetStream, in chunks
// 0..Chunks-1 that Subject answers ContentRequests for (kept by the tab,
// for its latest large contents only).
type ContentRef struct {
	Bucket   string `json:"bucket,omitempty"`
	Object   string `json:"object,omitempty"`
	Subject  string `json:"subject,omitempty"`
	Sequence int64  `json:"sequence"`
	Bytes    int    `json:"bytes"`
	Chunks   int    `json:"chunks"`
}

// ContentRequest asks for one chunk of a frame's content, or (Latest)
// for the sequence of the last frame the tab published.
type ContentRequest struct {
	Sequence int64 `json:"sequence"`
	Chunk    int   `json:"chunk"`
	// Latest asks for the tab's last published frame: the reply's
	// Sequence, no data. The history may still be storing it (it lags
	// the live frames), so a reader of the history learns here what it
	// is to wait for.
	Latest bool `json:"latest,omitempty"`
}

// ContentReply is one chunk of a frame's content, or an error (the
// content is no longer kept: code bad_request), or the tab's last frame
// (ContentRequest.Latest).
type ContentReply struct {
	OK       bool   `json:"ok"`
	Error    string `json:"error,omitempty"`
	Code     Code   `json:"code,omitempty"`
	Sequence int64  `json:"sequence"`
	Chunk    int    `json:"chunk"`
	Chunks   int    `json:"chunks"`
	Data     string `json:"data"`
}

// Marshal is json.Marshal as framebus writes JSON: without HTML escaping,
// so page content, selectors and messages keep their <, > and & as they
// are (readable, and a page's HTML is not inflated by \u003c escapes).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// CancelRequest cancels a tab's plan by its id: the one running (its
// action is cut short, as at a deadline) or one still queued (it is
// answered cancelled when its turn comes).
type CancelRequest struct {
	PlanID string `json:"planId"`
}

// CancelReply: Cancelled says a plan of that id was running and is cut
// short; otherwise one that comes (or is queued) later is answered
// cancelled.
type CancelReply struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error,omitempty"`
	Code      Code   `json:"code,omitempty"`
	Cancelled bool   `json:"cancelled"`
}
