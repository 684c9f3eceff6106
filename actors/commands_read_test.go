package actors

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// Acceptance tests of the read-only actions (ready, wait-for, text, html,
// screenshot, title, url) and of eval's async and timeout cases. The
// helpers at the top are shared by the commands_*_test.go and dialog_test.go
// files.

// cmdMutate runs a state-changing action based on the tab's current frame
// and checks it succeeded with exactly one frame: its result's sequence is
// the previous one plus one.
func cmdMutate(t *testing.T, tab *Tab, a protocol.Action) protocol.ActionResult {
	t.Helper()
	before := tab.Info().Sequence
	a.BasedOnSequence = protocol.Based(before)
	res := send(t, tab.ID(), one(a))
	if !res.OK || len(res.Results) != 1 || res.Sequence != before+1 || res.Results[0].Sequence != before+1 {
		t.Fatalf("%s: want ok with exactly one frame (%d after %d), got %+v", a.Type, before+1, before, res)
	}
	return res.Results[0]
}

// cmdRead runs a read-only action and checks it succeeded without a frame:
// the tab's sequence is unchanged and the result names no frame.
func cmdRead(t *testing.T, tab *Tab, a protocol.Action) protocol.ActionResult {
	t.Helper()
	before := tab.Info().Sequence
	res := send(t, tab.ID(), one(a))
	if !res.OK || len(res.Results) != 1 || res.Sequence != before || res.Results[0].Sequence != 0 {
		t.Fatalf("%s: want ok without a frame (sequence stays %d), got %+v", a.Type, before, res)
	}
	return res.Results[0]
}

// cmdFails runs an action that must fail with code before changing
// anything: no frame. It returns the plan result for more checks.
func cmdFails(t *testing.T, tab *Tab, a protocol.Action, code protocol.Code) protocol.PlanResult {
	t.Helper()
	before := tab.Info().Sequence
	res := send(t, tab.ID(), one(a))
	if res.OK || res.Code != code || res.Error == "" {
		t.Fatalf("%s %+v: want code %q, got %+v", a.Type, a, code, res)
	}
	// A reply without a tab refused the plan as malformed before it
	// reached the tab (an ErrorReply): nothing ran.
	rejected := res.Tab == "" && res.Executed == 0 && len(res.Results) == 0
	if !rejected && (res.Sequence != before || len(res.Results) == 1 && res.Results[0].Sequence != 0) {
		t.Fatalf("%s failed with %s but produced a frame (sequence was %d): %+v", a.Type, code, before, res)
	}
	return res
}

// cmdEval evaluates expr in the tab (an eval action, so one frame) and
// returns its JSON value as text ("" when undefined).
func cmdEval(t *testing.T, tab *Tab, expr string) string {
	t.Helper()
	res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: expr}))
	if !res.OK || len(res.Results) != 1 {
		t.Fatalf("eval %s: %+v", expr, res)
	}
	return string(res.Results[0].Value)
}

// cmdEvalInto evaluates expr and decodes its value into out.
func cmdEvalInto(t *testing.T, tab *Tab, expr string, out any) {
	t.Helper()
	v := cmdEval(t, tab, expr)
	if err := json.Unmarshal([]byte(v), out); err != nil {
		t.Fatalf("eval %s: value %q: %v", expr, v, err)
	}
}

// cmdExpect evaluates expr and fails unless its JSON value is want.
func cmdExpect(t *testing.T, tab *Tab, expr, want string) {
	t.Helper()
	if got := cmdEval(t, tab, expr); got != want {
		t.Fatalf("in the page, %s = %s, want %s", expr, got, want)
	}
}

// cmdPoll evaluates expr until it returns true, failing after within.
// Evals that fail (a dialog still open, say) are retried too.
func cmdPoll(t *testing.T, tab *Tab, expr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last protocol.PlanResult
	for {
		last = send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: expr}))
		if last.OK && len(last.Results) == 1 && string(last.Results[0].Value) == "true" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not true within %s; last eval: %+v", expr, within, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdString decodes a result's value as a JSON string.
func cmdString(t *testing.T, r protocol.ActionResult) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(r.Value, &s); err != nil {
		t.Fatalf("%s: value %q is not a JSON string: %v (result %+v)", r.Type, r.Value, err, r)
	}
	return s
}

// cmdSettleFast shortens how long a frame waits for its document's load,
// so that a navigate to a page whose load is held back returns soon,
// before the load event.
func cmdSettleFast(o *TabOptions) { o.SettleTimeout = 200 * time.Millisecond }

// Read-only actions produce no frame: a plan of all of them based on the
// same frame runs, the tab's sequence stays, and the next state-changing
// action based on that frame runs and produces the next frame.
func TestReadOnlyActionsProduceNoFrame(t *testing.T) {
	tab, frames, seq := tabAt(t, "/read.html")
	var actions []protocol.Action
	for _, a := range []protocol.Action{
		{Type: "ready"},
		{Type: "ready", NetworkIdle: true, Timeout: protocol.Duration(10 * time.Second)},
		{Type: "wait-for", Selector: "#frag"},
		{Type: "text"},
		{Type: "text", Selector: "#frag"},
		{Type: "html"},
		{Type: "html", Selector: "#frag"},
		{Type: "screenshot"},
		{Type: "title"},
		{Type: "url"},
	} {
		a.BasedOnSequence = protocol.Based(seq)
		actions = append(actions, a)
	}
	res := send(t, tab.ID(), protocol.Plan{Actions: actions})
	if !res.OK || res.Executed != len(actions) || res.Sequence != seq || len(res.Results) != len(actions) {
		t.Fatalf("read-only plan based on %d: %+v", seq, res)
	}
	for i, r := range res.Results {
		if !r.OK || r.Sequence != 0 || r.Type != actions[i].Type {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	res = send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "1", BasedOnSequence: protocol.Based(seq)}))
	if !res.OK || res.Sequence != seq+1 {
		t.Fatalf("eval after the read-only plan: %+v", res)
	}
	if f := frames.next(); f.Sequence != seq+1 || f.Action != "eval" {
		t.Fatalf("the frame after the read-only plan: %+v", f)
	}
}

// text is the visible text (innerText), whitespace collapsed to single
// spaces and trimmed, without the text of hidden elements.
func TestTextIsVisibleCollapsedText(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	cases := []struct{ selector, want string }{
		{"#text", "Hello, world second line"},
		{"h1", "Read page"},
		{"#frag", "A & b"},
		{"", "Read page Hello, world second line A & b"},
		// Hidden itself, or by an ancestor: no text shows.
		{"#text span", ""},
		{"#text p[hidden]", ""},
	}
	for _, tc := range cases {
		r := cmdRead(t, tab, protocol.Action{Type: "text", Selector: tc.selector})
		if got := cmdString(t, r); got != tc.want {
			t.Errorf("text %q = %q, want %q (result %+v)", tc.selector, got, tc.want, r)
		}
	}
	// It reads the live page, not the loaded source.
	cmdEval(t, tab, "document.querySelector('#frag i').textContent = 'changed', 1")
	if got := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "text", Selector: "#frag"})); got != "A & changed" {
		t.Fatalf("text after a change = %q", got)
	}
	res := cmdFails(t, tab, protocol.Action{Type: "text", Selector: "#missing"}, protocol.CodeElementNotFound)
	if res.Error != "element not found: #missing" {
		t.Fatalf("text of a missing element: %+v", res)
	}
}

// text also reads what innerText leaves out: open shadow roots where
// their hosts stand, the nodes slotted into them (or a slot's fallback),
// and same-origin frames; not hidden hosts, not scripts. So does a
// frame's content in the text format.
func TestTextReadsShadowRootsAndFrames(t *testing.T) {
	tab, frames, _ := tabAt(t, "/shadow.html")
	cmdPoll(t, tab, "document.getElementById('frame').contentDocument.readyState === 'complete'", 10*time.Second)
	const page = "Components before shadow words shadow button after Slotted title light child fallback footer inside the frame"
	cases := []struct{ selector, want string }{
		{"", page},
		{"#host", "shadow words shadow button"},
		{"#card", "Slotted title light child fallback footer"},
		{"#hidden", ""},
	}
	for _, tc := range cases {
		if got := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "text", Selector: tc.selector})); got != tc.want {
			t.Errorf("text %q = %q, want %q", tc.selector, got, tc.want)
		}
	}

	seq := tab.Info().Sequence
	res := send(t, tab.ID(), protocol.Plan{FullPage: "text", Action: &protocol.Action{Type: "navigate", URL: site("/shadow.html?again"), Wait: true, BasedOnSequence: protocol.Based(seq)}})
	if !res.OK {
		t.Fatalf("navigate: %+v", res)
	}
	f := frames.until(res.Sequence)
	if f.FullPage == nil {
		t.Fatalf("the navigation's frame has no content: %+v", f)
	}
	content := *f.FullPage
	for _, want := range []string{"Components", "shadow words", "Slotted title\n", "fallback footer"} {
		if !strings.Contains(content, want) {
			t.Errorf("the text frame's content %q lacks %q", content, want)
		}
	}
	if strings.Contains(content, "never shown") || strings.Contains(content, "attachShadow") {
		t.Errorf("the text frame's content %q has hidden text or script", content)
	}
}

// html and html-format frames serialize open shadow roots as declarative
// shadow DOM, which parses back to the same trees; the host's start tag
// is as outerHTML writes it.
func TestHTMLSerializesShadowRoots(t *testing.T) {
	tab, frames, _ := tabAt(t, "/shadow.html")
	const host = `<span id="host"><template shadowrootmode="open"><i>shadow words</i> <button id="shadow-button">shadow button</button></template></span>`
	if got := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "html", Selector: "#host"})); got != host {
		t.Errorf("html #host = %q, want %q", got, host)
	}
	card := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "html", Selector: "#card"}))
	data, _ := json.Marshal(card)
	cmdExpect(t, tab, `(() => {
		const html = `+string(data)+`, el = document.getElementById("card");
		const back = Document.parseHTMLUnsafe(html).getElementById("card");
		const startTag = (s) => s.slice(0, s.indexOf("<", 1));
		return [back.title === el.title, back.shadowRoot && back.shadowRoot.innerHTML === el.shadowRoot.innerHTML,
			back.innerHTML === el.innerHTML, startTag(html) === startTag(el.outerHTML)];
	})()`, `[true,true,true,true]`)

	seq := tab.Info().Sequence
	res := send(t, tab.ID(), protocol.Plan{FullPage: "html", Action: &protocol.Action{Type: "navigate", URL: site("/shadow.html?again"), Wait: true, BasedOnSequence: protocol.Based(seq)}})
	if !res.OK {
		t.Fatalf("navigate: %+v", res)
	}
	f := frames.until(res.Sequence)
	if f.FullPage == nil || !strings.Contains(*f.FullPage, host) || !strings.Contains(*f.FullPage, `<slot name="title">no title</slot>`) {
		t.Fatalf("the html frame's content lacks the shadow roots: %+v", f)
	}
}

// html is the outerHTML of the element, or of the whole document.
func TestHTMLOfElementAndDocument(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	r := cmdRead(t, tab, protocol.Action{Type: "html", Selector: "#frag"})
	if got := cmdString(t, r); got != `<p id="frag" class="x">A &amp; <i>b</i></p>` {
		t.Fatalf("html #frag = %q (result %+v)", got, r)
	}
	doc := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "html"}))
	trimmed := strings.TrimSpace(doc)
	if !(strings.HasPrefix(trimmed, "<html") || strings.HasPrefix(strings.ToLower(trimmed), "<!doctype html>")) || !strings.HasSuffix(trimmed, "</html>") {
		t.Fatalf("html of the document is not the whole document: %.200q ... %.100q", doc, doc[max(0, len(doc)-100):])
	}
	for _, want := range []string{"<head>", "<title>Read page</title>", `<p id="frag" class="x">A &amp; <i>b</i></p>`, `<div id="box"></div>`} {
		if !strings.Contains(doc, want) {
			t.Errorf("html of the document lacks %q: %q", want, doc)
		}
	}
	cmdEval(t, tab, "document.querySelector('#frag').dataset.live = 'yes', 1")
	if got := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "html", Selector: "#frag"})); got != `<p id="frag" class="x" data-live="yes">A &amp; <i>b</i></p>` {
		t.Fatalf("html after a change = %q", got)
	}
	res := cmdFails(t, tab, protocol.Action{Type: "html", Selector: "#missing"}, protocol.CodeElementNotFound)
	if res.Error != "element not found: #missing" {
		t.Fatalf("html of a missing element: %+v", res)
	}
	// On the wire the markup is as it is, not \u003c-escaped.
	data, _ := json.Marshal(one(protocol.Action{Type: "html", Selector: "#frag"}))
	msg, err := testConn.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 10*time.Second)
	if err != nil || !bytes.Contains(msg.Data, []byte(`"<p id=\"frag\"`)) || bytes.Contains(msg.Data, []byte(`\u003c`)) {
		t.Fatalf("html reply on the wire: %s %v", msg.Data, err)
	}
}

// title and url answer the page's current title and URL as JSON strings,
// including changes made by the page's scripts and same-document moves.
func TestTitleAndURL(t *testing.T) {
	tab, _, _ := tabAt(t, "/product.html?id=5")
	if got := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "title"})); got != "Product 5" {
		t.Fatalf("title = %q, want the one the page's script set", got)
	}
	if got := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "url"})); got != site("/product.html?id=5") {
		t.Fatalf("url = %q", got)
	}
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/")})
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#push"})
	cmdEval(t, tab, "document.title = 'Changed \"title\"', 1")
	if got := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "title"})); got != `Changed "title"` {
		t.Fatalf("title after a change = %q", got)
	}
	if got := cmdString(t, cmdRead(t, tab, protocol.Action{Type: "url"})); got != site("/pushed") {
		t.Fatalf("url after pushState = %q", got)
	}
}

// screenshot is a base64 PNG, as a JSON string: of the viewport, of the
// whole page with fullPage, of one element with selector.
func TestScreenshotSizes(t *testing.T) {
	tab, _, _ := tabAt(t, "/long.html")
	var vp struct{ W, H, DPR, ScrollHeight float64 }
	cmdEvalInto(t, tab, "({W: innerWidth, H: innerHeight, DPR: devicePixelRatio, ScrollHeight: document.documentElement.scrollHeight})", &vp)
	shot := func(a protocol.Action) (w, h float64) {
		t.Helper()
		r := cmdRead(t, tab, a)
		data, err := base64.StdEncoding.DecodeString(cmdString(t, r))
		if err != nil {
			t.Fatalf("screenshot %+v: value is not base64: %v", a, err)
		}
		if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("screenshot %+v: not a PNG: %q", a, data[:min(len(data), 16)])
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("screenshot %+v: %v", a, err)
		}
		return float64(cfg.Width), float64(cfg.Height)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1 }

	if w, h := shot(protocol.Action{Type: "screenshot"}); !near(w, vp.W*vp.DPR) || !near(h, vp.H*vp.DPR) {
		t.Errorf("viewport screenshot is %vx%v, want the viewport %vx%v (device pixel ratio %v)", w, h, vp.W, vp.H, vp.DPR)
	}
	if _, h := shot(protocol.Action{Type: "screenshot", FullPage: true}); h <= vp.H*vp.DPR || h < (vp.ScrollHeight-1)*vp.DPR {
		t.Errorf("full-page screenshot is %v high, want the page's %v (viewport %v)", h, vp.ScrollHeight, vp.H)
	}

	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html")})
	if w, h := shot(protocol.Action{Type: "screenshot", Selector: "#box"}); !near(w, 120*vp.DPR) || !near(h, 80*vp.DPR) {
		t.Errorf("screenshot of #box is %vx%v, want 120x80 CSS pixels (device pixel ratio %v)", w, h, vp.DPR)
	}
	res := cmdFails(t, tab, protocol.Action{Type: "screenshot", Selector: "#missing"}, protocol.CodeElementNotFound)
	if res.Error != "element not found: #missing" {
		t.Fatalf("screenshot of a missing element: %+v", res)
	}
}

// wait-for waits until an element is present, visible, hidden or gone.
// Each page change happens 500ms after a click; the click and the wait
// run in one plan, and only the click produces a frame.
func TestWaitForStates(t *testing.T) {
	cases := []struct {
		name    string
		trigger string
		wait    protocol.Action
		check   string // true in the page once the wait is over
	}{
		{"appears", "#add", protocol.Action{Selector: "#later"}, "!!document.querySelector('#later')"},
		{"becomes visible", "#show", protocol.Action{Selector: "#shy", Visible: true}, "getComputedStyle(document.querySelector('#shy')).display === 'block'"},
		{"becomes hidden", "#hide", protocol.Action{Selector: "#shown", Hidden: true}, "getComputedStyle(document.querySelector('#shown')).visibility === 'hidden'"},
		{"is removed", "#remove", protocol.Action{Selector: "#doomed", Gone: true}, "!document.querySelector('#doomed')"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab, _, seq := tabAt(t, "/waitfor.html")
			wait := tc.wait
			wait.Type = "wait-for"
			wait.Timeout = protocol.Duration(10 * time.Second)
			wait.BasedOnSequence = protocol.Based(seq + 1)
			res := send(t, tab.ID(), protocol.Plan{Actions: []protocol.Action{
				{Type: "click", Selector: tc.trigger, BasedOnSequence: protocol.Based(seq)},
				wait,
			}})
			if !res.OK || res.Executed != 2 || res.Sequence != seq+1 || len(res.Results) != 2 || res.Results[1].Sequence != 0 {
				t.Fatalf("click %s then wait-for %+v: %+v", tc.trigger, wait, res)
			}
			cmdExpect(t, tab, tc.check, "true")
		})
	}
}

// wait-for on a condition that already holds answers at once; an element
// added 300ms after the load event is waited for after a navigate.
func TestWaitForAlreadyTrueAndAfterLoad(t *testing.T) {
	tab, _, _ := tabAt(t, "/waitfor.html")
	for _, a := range []protocol.Action{
		{Type: "wait-for", Selector: "#shown"},
		{Type: "wait-for", Selector: "#shown", Visible: true},
		{Type: "wait-for", Selector: "#shy", Hidden: true},
		{Type: "wait-for", Selector: "#absent", Hidden: true},
		{Type: "wait-for", Selector: "#absent", Gone: true},
	} {
		a.Timeout = protocol.Duration(10 * time.Second)
		cmdRead(t, tab, a)
	}
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/waitfor.html?again")})
	cmdRead(t, tab, protocol.Action{Type: "wait-for", Selector: "#onload", Visible: true, Timeout: protocol.Duration(10 * time.Second)})
	cmdExpect(t, tab, "document.querySelector('#onload').textContent", `"added after load"`)
}

// A wait the page navigates away from goes on in the new document: the
// element may be on the page the first one led to (a form the page
// submits on its own). The navigation is the page's frame.
func TestWaitForAcrossNavigation(t *testing.T) {
	tab, frames, seq := tabAt(t, "/waitfor.html")
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#leave"})
	frames.next()
	res := send(t, tab.ID(), one(protocol.Action{Type: "wait-for", Selector: "#buy", Timeout: protocol.Duration(10 * time.Second)}))
	if !res.OK || res.Results[0].Sequence != 0 {
		t.Fatalf("wait-for #buy, which the next page has: %+v", res)
	}
	if f := frames.next(); f.Sequence != seq+2 || f.Source != protocol.SourcePage || f.URL != site("/product.html?id=9") {
		t.Fatalf("the page's navigation made frame %+v, want sequence %d from the page at product.html?id=9", f, seq+2)
	}
	// And one cut short by the deadline in the new document still times out.
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/waitfor.html")})
	frames.next()
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#leave"})
	res = send(t, tab.ID(), one(protocol.Action{Type: "wait-for", Selector: "#nowhere", Timeout: protocol.Duration(time.Second)}))
	if res.OK || res.Code != protocol.CodeTimeout || !strings.Contains(res.Error, "#nowhere") {
		t.Fatalf("wait-for #nowhere across a navigation: want timeout naming it, got %+v", res)
	}
}

// A wait that times out fails with code timeout naming the selector and
// the deadline, and the tab keeps working (regression: a timed-out wait
// must not leave the tab blocked).
func TestWaitForTimeoutLeavesTabUsable(t *testing.T) {
	tab, _, _ := tabAt(t, "/waitfor.html")
	cases := []protocol.Action{
		{Type: "wait-for", Selector: "#never", Timeout: protocol.Duration(300 * time.Millisecond)},
		{Type: "wait-for", Selector: "#shy", Visible: true, Timeout: protocol.Duration(300 * time.Millisecond)},
		{Type: "wait-for", Selector: "#shown", Gone: true, Timeout: protocol.Duration(300 * time.Millisecond)},
	}
	for _, a := range cases {
		res := cmdFails(t, tab, a, protocol.CodeTimeout)
		if !strings.Contains(res.Error, a.Selector) || !strings.Contains(res.Error, "300ms") {
			t.Fatalf("wait-for %+v: error %q should name %s and 300ms", a, res.Error, a.Selector)
		}
		cmdExpect(t, tab, "1 + 1", "2")
	}
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#add"})
	cmdRead(t, tab, protocol.Action{Type: "wait-for", Selector: "#later", Timeout: protocol.Duration(10 * time.Second)})
}

// ready answers at once on a loaded page.
func TestReadyOnLoadedPage(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	cmdRead(t, tab, protocol.Action{Type: "ready"})
	cmdRead(t, tab, protocol.Action{Type: "ready", Timeout: protocol.Duration(300 * time.Millisecond)})
	cmdExpect(t, tab, "document.readyState", `"complete"`)
}

// ready waits for the load event a slow image holds back.
func TestReadyWaitsForLoad(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html", cmdSettleFast)
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/slowload.html?delay=1s")})
	cmdRead(t, tab, protocol.Action{Type: "ready", Timeout: protocol.Duration(20 * time.Second)})
	cmdExpect(t, tab, "[document.readyState, window.loadFired]", `["complete",true]`)
}

// ready past its deadline fails with DR-013's timeout error, and the tab
// stays usable.
func TestReadyTimeoutLeavesTabUsable(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html", cmdSettleFast)
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/slowload.html")})
	res := cmdFails(t, tab, protocol.Action{Type: "ready", Timeout: protocol.Duration(500 * time.Millisecond)}, protocol.CodeTimeout)
	if res.Error != "timeout waiting for page load" {
		t.Fatalf("ready on a page that does not load: %+v", res)
	}
	cmdExpect(t, tab, "[1 + 1, window.loadFired]", "[2,false]")
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html")})
	cmdRead(t, tab, protocol.Action{Type: "ready", Timeout: protocol.Duration(20 * time.Second)})
	cmdExpect(t, tab, "document.title", `"Read page"`)
}

// ready with networkIdle also waits for the requests in flight to end;
// an open event stream does not count, a pending fetch does.
func TestReadyNetworkIdle(t *testing.T) {
	t.Run("fetch in flight is waited for", func(t *testing.T) {
		tab, _, _ := tabAt(t, "/fetchlater.html")
		cmdRead(t, tab, protocol.Action{Type: "ready", NetworkIdle: true, Timeout: protocol.Duration(20 * time.Second)})
		cmdExpect(t, tab, "!!window.fetched && window.fetched.data === 'fetched' && window.fetched.count === 42", "true")
	})
	t.Run("open event stream is ignored", func(t *testing.T) {
		tab, _, _ := tabAt(t, "/sse.html")
		cmdPoll(t, tab, "window.sseMessage === 'hello'", 10*time.Second)
		cmdRead(t, tab, protocol.Action{Type: "ready", NetworkIdle: true, Timeout: protocol.Duration(20 * time.Second)})
		// Still open: the wait ended with the stream in flight.
		cmdExpect(t, tab, "window.events.readyState === EventSource.OPEN", "true")
	})
	t.Run("pending long poll is ignored once it has aged", func(t *testing.T) {
		tab, _, _ := tabAt(t, "/longpoll.html")
		cmdRead(t, tab, protocol.Action{Type: "ready", NetworkIdle: true, Timeout: protocol.Duration(20 * time.Second)})
		// Still pending: the wait ended with the long poll in flight.
		cmdExpect(t, tab, "typeof window.longpoll", `"undefined"`)
	})
	t.Run("fetch in flight past the timeout times out", func(t *testing.T) {
		tab, _, _ := tabAt(t, "/fetchslow.html")
		res := cmdFails(t, tab, protocol.Action{Type: "ready", NetworkIdle: true, Timeout: protocol.Duration(700 * time.Millisecond)}, protocol.CodeTimeout)
		if !strings.Contains(res.Error, "network idle") || !strings.Contains(res.Error, "700ms") {
			t.Fatalf("network idle timeout: %+v", res)
		}
		// The tab still works, and the fetch lands.
		cmdPoll(t, tab, "!!window.fetched", 10*time.Second)
	})
}

// DR-014's async fetch example, and an eval timeout that leaves the tab
// usable (regression).
func TestEvalFetchAndTimeout(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	r := cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "fetch('/api/data').then(r => r.json())"})
	var got map[string]any
	if err := json.Unmarshal(r.Value, &got); err != nil || len(got) != 2 || got["data"] != "fetched" || got["count"] != float64(42) {
		t.Fatalf("fetch eval = %s (%v), want {\"data\":\"fetched\",\"count\":42}: %+v", r.Value, err, r)
	}
	res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "new Promise(() => {})", Timeout: protocol.Duration(300 * time.Millisecond)}))
	if res.OK || res.Code != protocol.CodeTimeout {
		t.Fatalf("eval of a promise that never settles: %+v", res)
	}
	cmdExpect(t, tab, "'alive'", `"alive"`)
	cmdExpect(t, tab, "new Promise(r => setTimeout(() => r(7), 50))", "7")
}

// A page that opens a link in a new tab (window.open without window
// features) is hidden behind it in its window. A screenshot of it brings
// it to the front and shows it as it is now, including what it drew in an
// animation frame since (a hidden tab runs none of its own).
func TestScreenshotOfAHiddenTab(t *testing.T) {
	tab, _, _ := tabAt(t, "/zoomed.html", desktop)
	cmdEval(t, tab, `document.body.style.background = "rgb(200, 0, 0)", window.open("/index.html", "_blank"), 1`)
	state := func() string {
		var s string
		cmdEvalInto(t, tab, `document.visibilityState`, &s)
		return s
	}
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for state() != "hidden" {
		if time.Now().After(deadline) {
			t.Fatal("the opener was not hidden by the tab it opened: the test needs it to be")
		}
		time.Sleep(20 * time.Millisecond) // polling the page, with a deadline
	}
	// Drawn in the next animation frame, which the capture must include.
	cmdEval(t, tab, `requestAnimationFrame(() => document.body.style.background = "rgb(0, 160, 0)"), 1`)
	data, err := base64.StdEncoding.DecodeString(cmdString(t, cmdRead(t, tab, protocol.Action{Type: "screenshot"})))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if r, g, b, _ := img.At(1200, 700).RGBA(); r>>8 != 0 || g>>8 != 160 || b>>8 != 0 {
		t.Errorf("screenshot pixel (1200,700) is rgb(%d,%d,%d), want rgb(0,160,0), drawn in the animation frame after the tab was hidden", r>>8, g>>8, b>>8)
	}
	if s := state(); s != "visible" {
		t.Errorf("after the screenshot the tab is %s, want visible", s)
	}
}
