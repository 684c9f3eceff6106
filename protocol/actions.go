package protocol

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ParamKind is the type of an action parameter, used by validation and by
// the CLI to parse arguments and flags.
type ParamKind int

const (
	KindString ParamKind = iota
	KindBool
	KindDuration
	KindStrings // a list; on the CLI the positional rest of the line
	KindInt     // a non-negative integer
	KindNumber  // a non-negative decimal number
	KindMap     // names to strings (a JSON object); on the CLI "Name: value", repeated
)

// Param declares one parameter of an action.
type Param struct {
	Name       string // JSON field name, also the CLI flag name
	Kind       ParamKind
	Positional bool // a positional argument on the CLI, in declaration order
	// Required: the action needs it. A positional parameter that is not
	// required is filled only when the line has more arguments than the
	// required ones (`type [selector] <text>`).
	Required bool
	// MayBeEmpty: a required string that may be empty or left out of a
	// plan (fill's text: an empty one clears the field); the action's
	// Check says when it may not. The CLI still wants it on the line.
	MayBeEmpty bool
	// Rest: the last positional parameter takes the rest of the line,
	// joined with spaces (`eval 1 + 1`).
	Rest    bool
	Choices []string // the allowed values, when limited
	// Upper: the value is taken in upper case (HTTP methods: post is POST).
	Upper bool
	// Min is the least value an integer parameter takes when given (its
	// zero value is "not given": the default).
	Min     int
	Aliases []string // other JSON names accepted for it (the frame seed's "element")
	// ClientOnly: handled by the client (the CLI), never sent in a plan.
	ClientOnly bool
	// Short is the flag's one-letter CLI shorthand, if any (DR-014's -t).
	Short string
	Help  string
}

// ActionSpec declares an action once: its name, what it does, whether it
// changes page state (and so produces a frame), and its parameters. The
// protocol validator, the CLI, the REPL and `framebus help` all read this
// table; the tab actor keys its handlers by Type.
type ActionSpec struct {
	Type    string
	Summary string
	// Mutates: a state-changing action produces exactly one frame when it
	// runs; a read-only one produces none.
	Mutates bool
	// DefaultTimeout bounds the action when the plan gives none.
	DefaultTimeout time.Duration
	Params         []Param
	// Check validates what the parameters cannot say one by one (which
	// combinations are allowed); nil when there is nothing to check.
	Check func(a Action) error
	// Person: the action waits for a person (handoff, ask): the tab
	// serves everything else meanwhile.
	Person bool
	// Resource is "http" or "search" for an action of a resource beside
	// the browser: it touches no tab, so alone (the CLI, the REPL) it is
	// a request to the resource's subject, and in a plan the tab's node
	// carries it out; "" for the browser's actions.
	Resource string
}

// The resources beside the browser (ADR-006).
const (
	ResourceHTTP   = "http"
	ResourceSearch = "search"
)

// DefaultActionTimeout is the deadline of an action that declares none.
const DefaultActionTimeout = 30 * time.Second

func timeoutParam(what string) Param {
	return Param{Name: "timeout", Kind: KindDuration, Short: "t",
		Help: "deadline for " + what + " (500ms, 2s, 1m; a bare number is milliseconds; default " + DefaultActionTimeout.String() + " unless the node sets its own)"}
}

var keysParam = Param{Name: "keys", Kind: KindBool, Help: "press a key per character, as a user types, instead of inserting the text at once: for fields that filter or format as you type, or move focus on (code boxes)"}

var waitParam = Param{Name: "wait", Kind: KindBool, Help: "answer after the load event instead of at commit"}

func selectorParam(help string) Param {
	return Param{Name: "selector", Positional: true, Required: true, Aliases: []string{"element"}, Help: help}
}

var actionSpecs = []ActionSpec{
	{Type: "navigate", Mutates: true,
		Summary: "load a URL (example.com -> https; localhost and IPs -> http; /path is relative to the page)",
		Params: []Param{
			{Name: "url", Positional: true, Required: true, Help: "the URL to load"},
			waitParam, timeoutParam("the navigation"),
		}},
	{Type: "reload", Mutates: true, Summary: "reload the page, bypassing the cache",
		Params: []Param{waitParam, timeoutParam("the reload")}},
	{Type: "back", Mutates: true, Summary: "go to the previous page in the tab's history",
		Params: []Param{waitParam, timeoutParam("the navigation")}},
	{Type: "forward", Mutates: true, Summary: "go to the next page in the tab's history",
		Params: []Param{waitParam, timeoutParam("the navigation")}},
	{Type: "click", Mutates: true, Summary: "click an element with real mouse events (hover, press, release)",
		Params: []Param{
			selectorParam("CSS selector of the element"),
			{Name: "double", Kind: KindBool, Help: "double-click"},
			{Name: "right", Kind: KindBool, Help: "right-click (context menu)"},
			timeoutParam("the click"),
		},
		Check: func(a Action) error { return exclusive(a, "double", "right") }},
	{Type: "hover", Mutates: true, Summary: "move the mouse over an element",
		Params: []Param{selectorParam("CSS selector of the element"), timeoutParam("the hover")}},
	{Type: "drag", Mutates: true, Summary: "drag one element onto another with the mouse",
		Params: []Param{
			{Name: "from", Positional: true, Required: true, Help: "CSS selector of the element to drag"},
			{Name: "to", Positional: true, Required: true, Help: "CSS selector of where to drop it"},
			timeoutParam("the drag"),
		}},
	{Type: "type", Mutates: true, Summary: "type text into the focused element, or into the selector's element after focusing it",
		Params: []Param{
			{Name: "selector", Positional: true, Aliases: []string{"element"}, Help: "CSS selector of the element to focus first"},
			{Name: "text", Positional: true, Required: true, MayBeEmpty: true, Help: "the text to insert"},
			{Name: "key", Help: "a key to press after the text (Enter, Tab, ...)"},
			{Name: "clear", Kind: KindBool, Help: "clear the field first (select all, delete)"},
			keysParam,
			timeoutParam("typing"),
		},
		Check: checkType},
	{Type: "fill", Mutates: true, Summary: "clear a field and type text into it",
		Params: []Param{
			selectorParam("CSS selector of the field"),
			{Name: "text", Positional: true, Required: true, MayBeEmpty: true, Help: "the text; empty ('') clears the field"},
			keysParam,
			timeoutParam("typing"),
		}},
	{Type: "focus", Mutates: true, Summary: "focus an element",
		Params: []Param{selectorParam("CSS selector of the element"), timeoutParam("focusing")}},
	{Type: "key", Mutates: true, Summary: "press a key on the focused element, with modifiers",
		Params: []Param{
			{Name: "key", Positional: true, Required: true, Help: "the key: a character, or Enter, Tab, Escape, Backspace, Delete, Insert, Arrow*, Home, End, PageUp, PageDown, Space, F1-F12"},
			{Name: "ctrl", Kind: KindBool, Help: "hold Ctrl"},
			{Name: "alt", Kind: KindBool, Help: "hold Alt"},
			{Name: "shift", Kind: KindBool, Help: "hold Shift"},
			{Name: "meta", Kind: KindBool, Help: "hold Meta (Command)"},
			timeoutParam("the key press"),
		}},
	{Type: "select", Mutates: true, Summary: "choose an option of a native <select> by value (or text)",
		Params: []Param{
			selectorParam("CSS selector of the <select>"),
			{Name: "value", Positional: true, Required: true, Help: "the option's value or text"},
			timeoutParam("selecting"),
		}},
	{Type: "scroll", Mutates: true, Summary: "scroll an element into view, or the page (or an element) to or by x,y (instantly)",
		Params: []Param{
			{Name: "selector", Positional: true, Aliases: []string{"element"}, Help: "CSS selector of the element to scroll into view; with --to or --by, of the element to scroll"},
			{Name: "to", Help: "scroll the page (or the selector's element) to x,y"},
			{Name: "by", Help: "scroll the page (or the selector's element) by x,y"},
			timeoutParam("scrolling"),
		},
		Check: checkScroll},
	{Type: "upload", Mutates: true, Summary: "set the files of an <input type=file>",
		Params: []Param{
			selectorParam("CSS selector of the file input"),
			{Name: "files", Kind: KindStrings, Positional: true, Rest: true, Help: "the files: on the command line, yours, sent over the bus; in a plan, paths on the node's machine, which must lie under its files.roots"},
			{Name: "staged", Kind: KindStrings, Help: "ids of files staged for this tab (on <prefix>.tab.<tab>.stage), instead of files"},
			{Name: "onNode", Kind: KindBool, ClientOnly: true, Help: "the files are paths on the node's machine (under its files.roots), sent as they are, instead of yours"},
			timeoutParam("the upload"),
		},
		Check: checkUpload},
	{Type: "dialog", Mutates: true, Summary: "answer the open JavaScript dialog (alert, confirm, prompt)",
		Params: []Param{
			{Name: "answer", Positional: true, Required: true, Choices: []string{"accept", "dismiss"}, Help: "accept or dismiss"},
			{Name: "text", Positional: true, Help: "the text to answer a prompt with"},
			timeoutParam("answering"),
		}},
	{Type: "eval", Mutates: true, Summary: "evaluate a JavaScript expression in the page; promises are awaited",
		Params: []Param{
			{Name: "expression", Positional: true, Required: true, Rest: true, Help: "the JavaScript expression"},
			timeoutParam("the evaluation"),
		}},
	{Type: "ready", Summary: "wait until the page has loaded (and, with --network-idle, the network is quiet)",
		Params: []Param{
			{Name: "networkIdle", Kind: KindBool, Help: "also wait for no requests in flight for 500ms (websockets, event streams and media ignored)"},
			timeoutParam("waiting"),
		}},
	{Type: "wait-for", Summary: "wait until an element is in the page (or visible, hidden, gone)",
		Params: []Param{
			selectorParam("CSS selector of the element"),
			{Name: "visible", Kind: KindBool, Help: "wait until it is visible"},
			{Name: "hidden", Kind: KindBool, Help: "wait until it is hidden or absent"},
			{Name: "gone", Kind: KindBool, Help: "wait until it is not in the page"},
			timeoutParam("waiting"),
		},
		Check: func(a Action) error { return exclusive(a, "visible", "hidden", "gone") }},
	{Type: "text", Summary: "the visible text of the page or of an element, whitespace collapsed",
		Params: []Param{
			{Name: "selector", Positional: true, Aliases: []string{"element"}, Help: "CSS selector of the element (default: the whole page)"},
			timeoutParam("reading"),
		}},
	{Type: "html", Summary: "the HTML of the page or of an element",
		Params: []Param{
			{Name: "selector", Positional: true, Aliases: []string{"element"}, Help: "CSS selector of the element (default: the whole document)"},
			timeoutParam("reading"),
		}},
	{Type: "screenshot", Summary: "a PNG of the viewport, the full page or an element",
		Params: []Param{
			{Name: "fullPage", Kind: KindBool, Help: "the whole page, not only the viewport"},
			{Name: "selector", Help: "only this element"},
			{Name: "out", ClientOnly: true, Help: "write the PNG to this file instead of printing it as base64"},
			timeoutParam("the screenshot"),
		}},
	{Type: "snapshot", Summary: "the page's accessibility tree: roles, names, states, and a ref for every interactive element",
		Params: []Param{
			{Name: "selector", Positional: true, Aliases: []string{"element"}, Help: "CSS selector or ref of the subtree's root (default: the whole page)"},
			{Name: "interactive", Kind: KindBool, Help: "only interactive elements (and headings)"},
			{Name: "depth", Kind: KindInt, Help: "the tree's maximum depth (0: unbounded)"},
			{Name: "maxNodes", Kind: KindInt, Help: "at most this many nodes; a longer snapshot is cut and marked truncated (0: unbounded)"},
			{Name: "format", Choices: []string{"text", "json"}, Help: "text (one line per node) or json (the tree)"},
			{Name: "since", Help: "the snapshot you hold, as a frame (12) or a snapshot's id (12#1a2b3c4d): answer only what changed since, as a delta (docs/deltas.md); the whole snapshot when it cannot"},
			{Name: "search", Help: "only the nodes whose line holds this text (any case), each under its ancestors and with what is under it"},
			{Name: "maxBytes", Kind: KindInt, Help: "at most this many bytes of text, in whole lines; the rest comes with cursor, the answer's next"},
			{Name: "cursor", Help: "the next part of a snapshot cut by maxBytes (the answer's next: 12#1a2b3c4d@32768), read from the snapshot as it was taken"},
			{Name: "settle", Kind: KindBool, Help: "the default: first wait for what the last action started: its short timers, the requests in flight, two renderings (what loads as the page scrolls), then the page's DOM to stay still for 50 ms (an autocomplete's suggestions); about 30 ms on a page that does nothing"},
			{Name: "networkIdle", Kind: KindBool, Help: "instead of settling, wait for network idle first: no request in flight for 500 ms (websockets, event streams and media ignored)"},
			{Name: "noIdle", Kind: KindBool, Help: "take it at once, neither settling nor waiting for network idle"},
			{Name: "idleTimeout", Kind: KindDuration, Help: "how long to settle (or wait for network idle) before taking it anyway (default 5s)"},
			timeoutParam("the snapshot"),
		},
		Check: checkSnapshot},
	{Type: "resize", Mutates: true,
		Summary: "lay the page out for another viewport size, or emulate a device (desktop, iPhone 13, Pixel 7, ...)",
		Params: []Param{
			{Name: "width", Kind: KindInt, Positional: true, Help: "the viewport's width in CSS pixels (100 to 7680)"},
			{Name: "height", Kind: KindInt, Positional: true, Help: "the viewport's height in CSS pixels (100 to 7680)"},
			{Name: "device", Choices: DeviceNames(), Help: "emulate a device: its size, pixel ratio, mobile layout, touch and user agent (width and height, if given, override its size)"},
			{Name: "mobile", Kind: KindBool, Help: "lay pages out as a phone does (a page without a viewport meta tag gets a 980px layout, zoomed out)"},
			{Name: "touch", Kind: KindBool, Help: "emulate a touch screen (navigator.maxTouchPoints at once; 'ontouchstart' in window from the next document)"},
			{Name: "userAgent", Help: "the user agent the page and its requests see (default: the device's, else the browser's own)"},
			{Name: "deviceScaleFactor", Kind: KindNumber, Help: "device pixels per CSS pixel (devicePixelRatio), 0.5 to 4 (default: the device's, else 1)"},
			timeoutParam("the resize"),
		},
		Check: func(a Action) error { _, err := ActionViewport(a); return err }},
	{Type: "fetch", Resource: ResourceHTTP, DefaultTimeout: 30 * time.Second,
		Summary: "an HTTP request without the browser (the http resource), under the browser's whitelist, every redirect hop checked; answers status, headers, redirects and the body",
		Params: []Param{
			{Name: "url", Positional: true, Required: true, Help: "the URL (http or https)"},
			{Name: "method", Short: "X", Choices: FetchMethods, Upper: true, Help: "the HTTP method (default GET)"},
			{Name: "headers", Kind: KindMap, Short: "H", Help: "request headers; on the command line 'Name: value', repeated"},
			{Name: "body", Short: "d", Help: "the request body: text, or base64 with body-base64"},
			{Name: "bodyBase64", Kind: KindBool, Help: "the body is base64 of bytes (binary)"},
			{Name: "readable", Kind: KindBool, Help: "add the main text of an HTML page (a reader view's title, byline and text)"},
			{Name: "maxRedirects", Kind: KindInt, Help: "follow at most this many redirects (default 10)"},
			{Name: "noRedirects", Kind: KindBool, Help: "follow no redirect: answer the redirect itself"},
			{Name: "maxBytes", Kind: KindInt, Help: "keep at most this many bytes of the body (default and most: the node's http.maxBytes); past it the body is cut and truncated is set"},
			{Name: "cookiesFrom", Help: "send the cookies a browser profile holds for each URL (opt-in: a logged-in profile's session goes with the request)"},
			timeoutParam("the request, redirects and body included"),
		},
		Check: checkFetch},
	{Type: "search", Resource: ResourceSearch, DefaultTimeout: 30 * time.Second,
		Summary: "a web search without the browser (the search resource): title, URL and snippet of each result, ads and the engine's own links removed",
		Params: []Param{
			{Name: "query", Positional: true, Required: true, Rest: true, Help: "what to search for"},
			{Name: "engine", Choices: SearchEngines, Help: "the engine: duckduckgo (its HTML results) or google (the Custom Search JSON API, when the node has its key); default: the node's"},
			{Name: "limit", Kind: KindInt, Min: 1, Help: fmt.Sprintf("at most this many results (1 to %d, default %d)", MaxSearchLimit, DefaultSearchLimit)},
			{Name: "site", Help: "only results from this site (example.com)"},
			{Name: "region", Help: "the engine's region or language (DuckDuckGo's kl, e.g. de-de; Google's gl, e.g. de)"},
			timeoutParam("the search"),
		},
		Check: checkSearch},
	{Type: "fill-form", Mutates: true,
		Summary: "fill several fields of a form in one action, in document order: text and textareas take the text (as fill), checkboxes and radios true or false, a <select> an option's value or text, a range a number",
		Params: []Param{
			{Name: "fields", Kind: KindMap, Required: true, Help: "CSS selector or ref of each field, and its value; on the command line 'selector: value', repeated"},
			timeoutParam("filling the form"),
		},
		Check: checkFillForm},
	{Type: "console", Summary: "the console messages and uncaught errors of the page since its document loaded (the browser keeps the last " + strconv.Itoa(ConsoleKept) + ")",
		Params: []Param{
			{Name: "level", Choices: ConsoleLevels, Help: "only messages of this level or more severe (error > warning > info, log > debug)"},
			{Name: "limit", Kind: KindInt, Min: 1, Help: "at most this many, the latest"},
			{Name: "clear", Kind: KindBool, Help: "forget them once read: the next console answers only newer ones"},
			timeoutParam("reading"),
		}},
	{Type: "network", Summary: "the requests the page made since its document loaded: method, URL, type, status, and whether one failed or the whitelist blocked it",
		Params: []Param{
			{Name: "filter", Help: "only requests whose URL contains this"},
			{Name: "static", Kind: KindBool, Help: "also images, fonts, stylesheets and media that loaded (a failed or blocked one is always listed)"},
			{Name: "limit", Kind: KindInt, Min: 1, Help: "at most this many, the latest"},
			timeoutParam("reading"),
		}},
	{Type: "handoff", Mutates: true, Person: true, DefaultTimeout: DefaultHandoffTimeout,
		Summary: "hand the tab to a person (a login, a captcha, a payment) and wait until they hand it back, until holds, or the timeout; the plan goes on from the frame they leave",
		Params: []Param{
			{Name: "message", Positional: true, Required: true, Rest: true, Help: "what the person is asked to do, shown to them"},
			{Name: "until", Kind: KindMap, Help: "ends the handoff by itself when every condition given holds: url (a pattern, * for any run of characters), text (present on the page), selector (an element present), timeout (as --timeout)"},
			{Name: "timeout", Kind: KindDuration, Short: "t", Help: "how long the person has (default " + DefaultHandoffTimeout.String() + "); then the tab is the agents' again and the action fails with timeout"},
		},
		Check: checkUntil},
	{Type: "ask", Person: true, DefaultTimeout: DefaultHandoffTimeout,
		Summary: "ask a person a question and wait for their answer (the tab stays the agents'; the question and answer are events on the bus)",
		Params: []Param{
			{Name: "question", Positional: true, Required: true, Rest: true, Help: "the question"},
			{Name: "choices", Kind: KindStrings, Help: "the answers the person may give; any text when none"},
			{Name: "timeout", Kind: KindDuration, Short: "t", Help: "how long to wait for the answer (default " + DefaultHandoffTimeout.String() + ")"},
		},
		Check: checkAsk},
	{Type: "title", Summary: "the page's title", Params: []Param{timeoutParam("reading")}},
	{Type: "url", Summary: "the page's URL", Params: []Param{timeoutParam("reading")}},
}

// exclusive allows at most one of the named boolean parameters.
func exclusive(a Action, names ...string) error {
	var set []string
	for _, n := range names {
		if *(a.field(n).(*bool)) {
			set = append(set, n)
		}
	}
	if len(set) > 1 {
		return badRequest("%s: %s cannot be combined; give one", a.Type, strings.Join(set, " and "))
	}
	return nil
}

// ConsoleLevels are the console's levels, most severe first; info and
// log are one level.
var ConsoleLevels = []string{"error", "warning", "info", "log", "debug"}

// ConsoleKept is how many console messages of a document the browser
// keeps (V8's console message storage); older ones are dropped.
const ConsoleKept = 1000

// checkFillForm: fill-form needs fields, each named.
func checkFillForm(a Action) error {
	if len(a.Fields) == 0 {
		return badRequest("%s.fields: missing; give each field's CSS selector or ref and its value ({\"#name\": \"Ann\", \"#agree\": \"true\"})", a.Type)
	}
	for sel := range a.Fields {
		if strings.TrimSpace(sel) == "" {
			return badRequest("%s.fields: a field with an empty selector; give each field's CSS selector or ref", a.Type)
		}
	}
	return nil
}

// checkType: type needs text unless it only clears the field or presses
// a key.
func checkType(a Action) error {
	if a.Text == "" && !a.Clear && a.Key == "" {
		return badRequest("%s.text: missing; type needs the text to insert (empty only with clear or key; fill '' clears a field)", a.Type)
	}
	return nil
}

// checkUpload: upload takes node paths or staged ids, and an id is never
// a path.
func checkUpload(a Action) error {
	switch {
	case len(a.Files) > 0 && len(a.Staged) > 0:
		return badRequest("upload: give files (paths on the node) or staged (ids of staged files), not both")
	case len(a.Files) == 0 && len(a.Staged) == 0:
		return badRequest("upload.files: missing; upload needs files (paths on the node, under files.roots) or staged (ids of files staged for the tab)")
	}
	for i, id := range a.Staged {
		if !ValidStagedID(id) {
			return badRequest("upload.staged[%d]: %q is not a staged file's id (32 hex digits, as the node answered the stage request); node paths go in files", i, id)
		}
	}
	return nil
}

func checkScroll(a Action) error {
	switch {
	case a.To != "" && a.By != "":
		return badRequest("scroll: give to (x,y) or by (x,y), not both")
	case a.Selector == "" && a.To == "" && a.By == "":
		return badRequest("scroll: give a selector (scroll it into view), to (x,y) or by (x,y)")
	}
	for name, v := range map[string]string{"to": a.To, "by": a.By} {
		if v == "" {
			continue
		}
		if _, _, err := ParsePoint(v); err != nil {
			return badRequest("scroll.%s: %v", name, err)
		}
	}
	return nil
}

// ParsePoint reads "x,y" (numbers of CSS pixels).
func ParsePoint(s string) (x, y float64, err error) {
	xs, ys, ok := strings.Cut(s, ",")
	if ok {
		x, err = strconv.ParseFloat(strings.TrimSpace(xs), 64)
		if err == nil {
			y, err = strconv.ParseFloat(strings.TrimSpace(ys), 64)
		}
	}
	// NaN and the infinities parse, but are no place on a page.
	if !ok || err != nil || math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return 0, 0, fmt.Errorf("%q is not x,y (two finite numbers, e.g. 0,400)", s)
	}
	return x, y, nil
}

// ActionSpecs returns every declared action, sorted by type.
func ActionSpecs() []ActionSpec {
	out := append([]ActionSpec(nil), actionSpecs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// LookupAction returns the declaration of an action type.
func LookupAction(typ string) (ActionSpec, bool) {
	if i, ok := actionIndex[typ]; ok {
		return actionSpecs[i], true
	}
	return ActionSpec{}, false
}

// actionIndex finds a declaration by type without a scan: every plan
// looks its actions up.
var actionIndex = func() map[string]int {
	m := make(map[string]int, len(actionSpecs))
	for i, s := range actionSpecs {
		m[s.Type] = i
	}
	return m
}()

// EffectiveTimeout is the action's own timeout or its declared default.
func (a Action) EffectiveTimeout() time.Duration {
	if d := a.UntilTimeout(); d > 0 {
		return d
	}
	if a.Timeout > 0 {
		return a.Timeout.Std()
	}
	if s, ok := LookupAction(a.Type); ok && s.DefaultTimeout > 0 {
		return s.DefaultTimeout
	}
	return DefaultActionTimeout
}

// Modifiers is the DR-013 modifier bitmap of a key action: Alt=1, Ctrl=2,
// Meta=4, Shift=8.
func (a Action) Modifiers() int {
	m := 0
	for bit, on := range []bool{a.Alt, a.Ctrl, a.Meta, a.Shift} {
		if on {
			m |= 1 << bit
		}
	}
	return m
}

func actionTypes() []string {
	var names []string
	for _, s := range ActionSpecs() {
		names = append(names, s.Type)
	}
	return names
}
