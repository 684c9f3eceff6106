package cdpdriver

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
)

// Event is a page event the tab actor cares about. The concrete types are
// below; every other CDP event is dropped at the codec.
type Event interface{ isEvent() }

// FrameNavigated: a frame committed a new document (Page.frameNavigated).
type FrameNavigated struct {
	FrameID, LoaderID, URL string
	Main                   bool
	// UnreachableURL is set when the committed document is Chromium's error
	// page for a failed load of that URL.
	UnreachableURL string
	// generation is the document generation a main-frame commit began.
	generation uint64
}

// SameDocumentNavigated: the URL changed without a new document (pushState,
// replaceState, fragment). Page.navigatedWithinDocument.
type SameDocumentNavigated struct {
	FrameID, URL string
	Main         bool
}

// NavigationRequested: a frame asked to navigate (link click, form
// submission, script, meta refresh). From Page.frameRequestedNavigation
// and Page.frameStartedNavigating; LoaderID is known only from the latter.
type NavigationRequested struct {
	FrameID, URL, Reason, LoaderID string
	Main                           bool
	// ByDocument: the frame's document asked (Page.frameRequestedNavigation:
	// a link, a form, a script, a meta refresh, location.reload). Chromium
	// sends that only for navigations its renderer starts; the address bar,
	// reload (F5) and a DevTools client's Page.navigate start in the
	// browser, and so does every history navigation, whoever asked.
	ByDocument bool
	// Type is Page.frameStartedNavigating's navigationType (differentDocument,
	// reload, historyDifferentDocument, historySameDocument, ...): every
	// navigation has one, sent when it starts, with its LoaderID.
	Type string
}

// DocumentRequested: the request of a frame's document is sent
// (Network.requestWillBeSent of a Document, not of its redirects).
// UserGesture is Chromium's hasUserGesture. For a navigation the document
// asked for, it says whether input was behind it (a click, a key, within
// the 5 s a user activation lasts: a person's, or a DevTools client's
// Input events); for one the browser started it says little (Chromium
// 156: true for the address bar and every history navigation, false for
// F5 and Page.navigate).
type DocumentRequested struct {
	FrameID, LoaderID string
	Main              bool
	UserGesture       bool
}

// DocumentResponse: the HTTP response a frame's document came with
// (Network.responseReceived of a Document), the last of any redirects.
type DocumentResponse struct {
	FrameID, LoaderID string
	Status            int
	Main              bool
}

// DocumentFailed: the request of a document failed (Network.loadingFailed
// of a Document); Text is Chromium's net::ERR_... text. A navigation's
// request id is its loader id.
type DocumentFailed struct {
	LoaderID, Text string
}

// LoadingStarted and LoadingStopped bracket a frame's loading
// (Page.frameStartedLoading / frameStoppedLoading). A stop without a
// commit means a requested navigation ended without a new document
// (a download, a 204, a cancelled navigation).
type LoadingStarted struct {
	FrameID string
	Main    bool
}

type LoadingStopped struct {
	FrameID string
	Main    bool
}

// Lifecycle is a Page.lifecycleEvent: "init", "DOMContentLoaded", "load",
// "networkAlmostIdle", "networkIdle", ... tied to the document's loader.
type Lifecycle struct {
	FrameID, LoaderID, Name string
	Main                    bool
}

// TitleChanged: the page's title or URL as the browser reports it
// (Target.targetInfoChanged for this page's target).
type TitleChanged struct{ Title, URL string }

// Crashed: the renderer crashed (Inspector.targetCrashed).
type Crashed struct{}

// Detached: the browser detached the debugger (Inspector.detached), e.g.
// the tab was closed.
type Detached struct{ Reason string }

// DialogOpening: a JavaScript alert/confirm/prompt/beforeunload is open and
// blocks the page until answered (Page.javascriptDialogOpening).
type DialogOpening struct {
	Type, Message, DefaultPrompt, URL string
}

// DialogClosed: the open dialog was answered (Page.javascriptDialogClosed).
type DialogClosed struct {
	Accepted  bool
	UserInput string
}

func (FrameNavigated) isEvent()        {}
func (DocumentResponse) isEvent()      {}
func (SameDocumentNavigated) isEvent() {}
func (NavigationRequested) isEvent()   {}
func (LoadingStarted) isEvent()        {}
func (LoadingStopped) isEvent()        {}
func (Lifecycle) isEvent()             {}
func (TitleChanged) isEvent()          {}
func (Crashed) isEvent()               {}
func (Detached) isEvent()              {}
func (DialogOpening) isEvent()         {}
func (DialogClosed) isEvent()          {}
func (DocumentFailed) isEvent()        {}
func (DocumentRequested) isEvent()     {}

// eventDecoder turns raw CDP events into Events. It knows the page's main
// frame and target id, and follows main-frame changes.
type eventDecoder struct {
	targetID    string
	mainFrameID string // written only by the reader goroutine after setup
	// generation counts main-frame documents, so cached remote objects of
	// an old document are known to be stale.
	generation atomic.Uint64
	net        *netTracker
	// requests is the page's request log (see requestlog.go).
	requests *requestLog
	// console, while Console reads, collects the console's events.
	console atomic.Pointer[consoleCollector]
	// newDocument, when set, is told of each new main-frame document, from
	// the reader goroutine: it must not block.
	newDocument func(frameID string)
	// committed is closed at the next main-frame commit (see
	// nextDocument); nil until someone asks.
	commitMu  sync.Mutex
	committed chan struct{}
}

// nextDocument is closed when the main frame commits its next document.
func (d *eventDecoder) nextDocument() <-chan struct{} {
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	if d.committed == nil {
		d.committed = make(chan struct{})
	}
	return d.committed
}

// commit closes the channel nextDocument gave out.
func (d *eventDecoder) commit() {
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	if d.committed != nil {
		close(d.committed)
		d.committed = nil
	}
}

func (d *eventDecoder) decode(method string, params json.RawMessage) (Event, bool) {
	switch method {
	case "Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded":
		if c := d.console.Load(); c != nil {
			c.add(method, params)
		}
		return nil, false
	}
	if strings.HasPrefix(method, "Network.") {
		d.requests.observe(method, params)
	}
	if d.net.observe(method, params) {
		switch method {
		case "Network.loadingFailed":
			return documentFailed(params)
		case "Network.requestWillBeSent":
			return d.documentRequested(params)
		}
		return nil, false
	}
	switch method {
	case "Network.responseReceived":
		var p struct {
			FrameID  string `json:"frameId"`
			LoaderID string `json:"loaderId"`
			Type     string `json:"type"`
			Response struct {
				URL    string `json:"url"`
				Status int    `json:"status"`
			} `json:"response"`
		}
		if json.Unmarshal(params, &p) != nil || p.Type != "Document" {
			return nil, false
		}
		if !httpURL(p.Response.URL) {
			// Chromium reports 200 for data: and file: documents, which
			// came with no HTTP status: the frame carries none.
			p.Response.Status = 0
		}
		return DocumentResponse{FrameID: p.FrameID, LoaderID: p.LoaderID, Status: p.Response.Status, Main: p.FrameID == d.mainFrameID}, true
	case "Page.frameNavigated":
		var p struct {
			Frame struct {
				ID             string  `json:"id"`
				ParentID       *string `json:"parentId"`
				LoaderID       string  `json:"loaderId"`
				URL            string  `json:"url"`
				URLFragment    string  `json:"urlFragment"`
				UnreachableURL string  `json:"unreachableUrl"`
			} `json:"frame"`
		}
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		main := p.Frame.ParentID == nil
		var generation uint64
		if main {
			d.mainFrameID = p.Frame.ID
			generation = d.generation.Add(1)
			d.commit()
			d.net.newDocument(p.Frame.LoaderID)
			d.requests.newDocument(p.Frame.LoaderID)
			if d.newDocument != nil {
				d.newDocument(p.Frame.ID)
			}
		}
		return FrameNavigated{FrameID: p.Frame.ID, LoaderID: p.Frame.LoaderID, URL: p.Frame.URL + p.Frame.URLFragment,
			Main: main, UnreachableURL: p.Frame.UnreachableURL, generation: generation}, true
	case "Page.navigatedWithinDocument":
		var p struct {
			FrameID string `json:"frameId"`
			URL     string `json:"url"`
		}
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		return SameDocumentNavigated{FrameID: p.FrameID, URL: p.URL, Main: p.FrameID == d.mainFrameID}, true
	case "Page.frameRequestedNavigation", "Page.frameStartedNavigating":
		var p struct {
			FrameID     string `json:"frameId"`
			URL         string `json:"url"`
			Reason      string `json:"reason"`
			LoaderID    string `json:"loaderId"`
			Type        string `json:"navigationType"`
			Disposition string `json:"disposition"`
		}
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		if p.Disposition != "" && p.Disposition != "currentTab" {
			return nil, false // opens elsewhere (a new tab or window, a download)
		}
		byDocument := method == "Page.frameRequestedNavigation"
		if p.Reason == "" {
			p.Reason = p.Type
		}
		return NavigationRequested{FrameID: p.FrameID, URL: p.URL, Reason: p.Reason, LoaderID: p.LoaderID, Main: p.FrameID == d.mainFrameID,
			ByDocument: byDocument, Type: p.Type}, true
	case "Page.frameStartedLoading", "Page.frameStoppedLoading":
		var p struct {
			FrameID string `json:"frameId"`
		}
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		if method == "Page.frameStartedLoading" {
			return LoadingStarted{FrameID: p.FrameID, Main: p.FrameID == d.mainFrameID}, true
		}
		return LoadingStopped{FrameID: p.FrameID, Main: p.FrameID == d.mainFrameID}, true
	case "Page.lifecycleEvent":
		var p struct {
			FrameID  string `json:"frameId"`
			LoaderID string `json:"loaderId"`
			Name     string `json:"name"`
		}
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		return Lifecycle{FrameID: p.FrameID, LoaderID: p.LoaderID, Name: p.Name, Main: p.FrameID == d.mainFrameID}, true
	case "Page.javascriptDialogOpening":
		var p struct {
			URL           string `json:"url"`
			Message       string `json:"message"`
			Type          string `json:"type"`
			DefaultPrompt string `json:"defaultPrompt"`
		}
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		return DialogOpening{Type: p.Type, Message: p.Message, DefaultPrompt: p.DefaultPrompt, URL: p.URL}, true
	case "Page.javascriptDialogClosed":
		var p struct {
			Result    bool   `json:"result"`
			UserInput string `json:"userInput"`
		}
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		return DialogClosed{Accepted: p.Result, UserInput: p.UserInput}, true
	case "Target.targetInfoChanged":
		var p struct {
			TargetInfo struct {
				TargetID string `json:"targetId"`
				Title    string `json:"title"`
				URL      string `json:"url"`
			} `json:"targetInfo"`
		}
		if json.Unmarshal(params, &p) != nil || p.TargetInfo.TargetID != d.targetID {
			return nil, false
		}
		return TitleChanged{Title: p.TargetInfo.Title, URL: p.TargetInfo.URL}, true
	case "Inspector.targetCrashed":
		return Crashed{}, true
	case "Inspector.detached":
		var p struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(params, &p)
		return Detached{Reason: p.Reason}, true
	}
	return nil, false
}

// documentFailed is the DocumentFailed event of a failed document
// request, if params are one.
func documentFailed(params json.RawMessage) (Event, bool) {
	var p struct {
		RequestID string `json:"requestId"`
		Type      string `json:"type"`
		ErrorText string `json:"errorText"`
	}
	if json.Unmarshal(params, &p) != nil || p.Type != "Document" || p.ErrorText == "" {
		return nil, false
	}
	return DocumentFailed{LoaderID: p.RequestID, Text: p.ErrorText}, true
}

// documentRequested is the DocumentRequested event of a document's first
// request (a redirect's carries the response it follows), if params are one.
func (d *eventDecoder) documentRequested(params json.RawMessage) (Event, bool) {
	var p struct {
		FrameID          string          `json:"frameId"`
		LoaderID         string          `json:"loaderId"`
		Type             string          `json:"type"`
		HasUserGesture   bool            `json:"hasUserGesture"`
		RedirectResponse json.RawMessage `json:"redirectResponse"`
	}
	if json.Unmarshal(params, &p) != nil || p.Type != "Document" || len(p.RedirectResponse) > 0 {
		return nil, false
	}
	return DocumentRequested{FrameID: p.FrameID, LoaderID: p.LoaderID, Main: p.FrameID == d.mainFrameID, UserGesture: p.HasUserGesture}, true
}

// httpURL reports whether u is an http or https URL, whose documents come
// with an HTTP status.
func httpURL(u string) bool {
	scheme, _, ok := strings.Cut(u, ":")
	return ok && (strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https"))
}
