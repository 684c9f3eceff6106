package actors

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/browser"
	"github.com/mafredri/cdp/protocol/target"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// desktop gives a test tab the node's default viewport.
func desktop(o *TabOptions) { o.Viewport = protocol.DefaultViewport }

// pageViewport is what the page says of its viewport.
type pageViewport struct {
	Width, Height int
	Ratio         float64
	TouchPoints   int
	OnTouch       bool
	UserAgent     string
}

const pageViewportJS = `({width: innerWidth, height: innerHeight, ratio: devicePixelRatio,
	touchPoints: navigator.maxTouchPoints, onTouch: 'ontouchstart' in window, userAgent: navigator.userAgent})`

func viewportOf(t *testing.T, tab *Tab) pageViewport {
	t.Helper()
	var v pageViewport
	cmdEvalInto(t, tab, pageViewportJS, &v)
	return v
}

// pngSize is the size of a screenshot action's image.
func pngSize(t *testing.T, r protocol.ActionResult) (int, int) {
	t.Helper()
	var b64 string
	if err := json.Unmarshal(r.Value, &b64); err != nil {
		t.Fatal(err)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return img.Bounds().Dx(), img.Bounds().Dy()
}

// A node's tabs are 1280x720 unless told otherwise (headless Chromium's
// own window is 780x493, where sites show their phone layout), and a
// screenshot is that size too; a popup a page opens gets it as well.
func TestNodeDefaultViewport(t *testing.T) {
	t.Parallel() // its own node
	node := startTestNode(t, NodeOptions{Prefix: "fbviewport"})
	nc := bustest.Connect(t, node.Bus(), protocol.RoleAgent)
	defer nc.Close()
	subj := node.Subjects()
	tabs := node.Tabs()
	if len(tabs) != 1 {
		t.Fatalf("tabs %+v", tabs)
	}
	run := func(tab string, a protocol.Action) protocol.ActionResult {
		t.Helper()
		data, _ := json.Marshal(one(a))
		msg, err := nc.Request(subj.TabPlan(tab), data, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		res, err := protocol.DecodePlanResult(msg.Data)
		if err != nil || !res.OK {
			t.Fatalf("%s: %s (%v)", a.Type, msg.Data, err)
		}
		return res.Results[0]
	}
	tab := tabs[0].Tab
	run(tab, protocol.Action{Type: "navigate", URL: site("/breakpoint.html")})
	var v pageViewport
	if err := json.Unmarshal(run(tab, protocol.Action{Type: "eval", Expression: pageViewportJS}).Value, &v); err != nil {
		t.Fatal(err)
	}
	if v.Width != 1280 || v.Height != 720 || v.Ratio != 1 || v.TouchPoints != 0 {
		t.Fatalf("default viewport: %+v, want 1280x720 at ratio 1 without touch", v)
	}
	if w, h := pngSize(t, run(tab, protocol.Action{Type: "screenshot"})); w != 1280 || h != 720 {
		t.Fatalf("screenshot %dx%d, want 1280x720", w, h)
	}
	// A popup the page opens: adopted with the same viewport.
	run(tab, protocol.Action{Type: "eval", Expression: `(window.open(location.href, '_blank', 'width=400,height=300'), 1)`})
	var popup string
	deadline := time.Now().Add(testscale.D(20 * time.Second))
	for popup == "" && time.Now().Before(deadline) {
		for _, ti := range node.Tabs() {
			if ti.Tab != tab && ti.URL == site("/breakpoint.html") {
				popup = ti.Tab
			}
		}
		if popup == "" {
			time.Sleep(20 * time.Millisecond) // polling for the adopted tab, with a deadline
		}
	}
	if popup == "" {
		t.Fatalf("the popup was not adopted: %+v", node.Tabs())
	}
	if err := json.Unmarshal(run(popup, protocol.Action{Type: "eval", Expression: pageViewportJS}).Value, &v); err != nil {
		t.Fatal(err)
	}
	if v.Width != 1280 || v.Height != 720 {
		t.Fatalf("popup viewport: %+v, want 1280x720", v)
	}
}

// NodeOptions.Viewport sets every tab's, and the size of the browser's
// windows (what a popup is laid out for until it is adopted); a zero one
// leaves the window's.
func TestNodeViewportOption(t *testing.T) {
	for _, tc := range []struct {
		vp   protocol.Viewport
		w, h int
	}{
		{protocol.Viewport{Width: 1024, Height: 768, DeviceScaleFactor: 1}, 1024, 768},
		{protocol.Viewport{}, 780, 493}, // headless Chromium's own window
	} {
		node := startTestNode(t, NodeOptions{Prefix: "fbviewport", Viewport: &tc.vp})
		nc := bustest.Connect(t, node.Bus(), protocol.RoleAgent)
		data, _ := json.Marshal(one(protocol.Action{Type: "eval", Expression: pageViewportJS}))
		msg, err := nc.Request(node.Subjects().TabPlan(node.Tabs()[0].Tab), data, 30*time.Second)
		nc.Close()
		if err != nil {
			t.Fatal(err)
		}
		res, _ := protocol.DecodePlanResult(msg.Data)
		var v pageViewport
		if !res.OK || json.Unmarshal(res.Results[0].Value, &v) != nil || v.Width != tc.w || v.Height != tc.h {
			t.Fatalf("viewport %s: page says %s, want %dx%d", tc.vp, msg.Data, tc.w, tc.h)
		}
		if tc.vp.Width == 0 {
			node.Close()
			continue
		}
		tab := node.Tabs()[0].Tab
		w, err := node.Profile(protocol.DefaultProfile).Browser().conn.Client().Browser.GetWindowForTarget(context.Background(),
			browser.NewGetWindowForTargetArgs().SetTargetID(target.ID(tab)))
		if err != nil {
			t.Fatal(err)
		}
		if w.Bounds.Width == nil || w.Bounds.Height == nil || *w.Bounds.Width != tc.w || *w.Bounds.Height != tc.h {
			t.Fatalf("viewport %s: the tab's window is not %dx%d: %s", tc.vp, tc.w, tc.h, jsonOf(w.Bounds))
		}
		node.Close()
	}
}

// resize changes the layout: the desktop page shows its sidebar
// navigation, a phone's hides it; each resize makes one frame, which an
// observer sees; a device preset brings its pixel ratio, touch and user
// agent; a resize to the viewport the tab has makes its frame too, and
// says it changed nothing.
func TestResize(t *testing.T) {
	tab, frames, _ := tabAt(t, "/breakpoint.html", desktop)
	if s := snapshotOf(t, tab, protocol.Action{}); !strings.Contains(s.Text, `"Install guide"`) {
		t.Fatalf("desktop snapshot lacks the sidebar navigation:\n%s", s.Text)
	}
	resize := func(a protocol.Action) resizeValue {
		t.Helper()
		a.Type = "resize"
		r := cmdMutate(t, tab, a)
		if f := frames.until(r.Sequence); f.Action != "resize" || f.Source != protocol.SourceAgent || f.URL != site("/breakpoint.html") {
			t.Fatalf("resize frame %+v", f)
		}
		var v resizeValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("resize value %s: %v", r.Value, err)
		}
		return v
	}
	if v := resize(protocol.Action{Device: "iPhone 13"}); !v.Changed || v.Width != 390 || v.Device != "iPhone 13" {
		t.Fatalf("resize to iPhone 13: %+v", v)
	}
	if s := snapshotOf(t, tab, protocol.Action{}); strings.Contains(s.Text, `"Install guide"`) || !strings.Contains(s.Text, `"Breakpoint"`) {
		t.Fatalf("phone snapshot still shows the sidebar navigation:\n%s", s.Text)
	}
	v := viewportOf(t, tab)
	if v.Width != 390 || v.Height != 664 || v.Ratio != 3 || v.TouchPoints != 5 || !strings.Contains(v.UserAgent, "iPhone") {
		t.Fatalf("iPhone 13 as the page sees it: %+v", v)
	}
	var resized string
	cmdEvalInto(t, tab, `document.getElementById('resized').textContent`, &resized)
	if resized == "0" {
		t.Fatal("the page's resize listener had not run when the resize answered")
	}
	if w, h := pngSize(t, cmdRead(t, tab, protocol.Action{Type: "screenshot"})); w != 390*3 || h != 664*3 {
		t.Fatalf("iPhone 13 screenshot %dx%d, want %dx%d device pixels", w, h, 390*3, 664*3)
	}
	// Touch detection and the User-Agent header come with the next document.
	cmdMutate(t, tab, protocol.Action{Type: "reload", Wait: true})
	if v := viewportOf(t, tab); !v.OnTouch || v.Width != 390 {
		t.Fatalf("iPhone 13 after a reload: %+v", v)
	}
	if v := resize(protocol.Action{Device: "iPhone 13"}); v.Changed {
		t.Fatalf("a resize to the same viewport says it changed: %+v", v)
	}
	if v := resize(protocol.Action{Width: 1024, Height: 768}); !v.Changed || v.Mobile || v.Touch || v.UserAgent != "" {
		t.Fatalf("resize 1024 768: %+v", v)
	}
	v = viewportOf(t, tab)
	if v.Width != 1024 || v.Height != 768 || v.Ratio != 1 || v.TouchPoints != 0 || strings.Contains(v.UserAgent, "iPhone") {
		t.Fatalf("1024x768 as the page sees it: %+v", v)
	}
	if s := snapshotOf(t, tab, protocol.Action{}); !strings.Contains(s.Text, `"Install guide"`) {
		t.Fatalf("1024px snapshot lacks the sidebar navigation:\n%s", s.Text)
	}
	if v := resize(protocol.Action{Device: "Pixel 7", UserAgent: "framebus-test"}); v.Device != "" || v.DeviceScaleFactor != 2.625 {
		t.Fatalf("Pixel 7 with another user agent: %+v", v)
	}
	if v := viewportOf(t, tab); v.UserAgent != "framebus-test" || v.Width != 412 {
		t.Fatalf("Pixel 7 with another user agent, as the page sees it: %+v", v)
	}
	// An explicit pixel ratio, on a size of its own.
	if v := resize(protocol.Action{Width: 800, Height: 600, DeviceScaleFactor: 1.5}); v.Device != "" || v.DeviceScaleFactor != 1.5 || v.Mobile {
		t.Fatalf("800x600 at 1.5: %+v", v)
	}
	if v := viewportOf(t, tab); v.Ratio != 1.5 || v.Width != 800 || v.Height != 600 {
		t.Fatalf("800x600 at 1.5, as the page sees it: %+v", v)
	}
}

// Bad sizes and unknown presets are refused before anything changes, with
// the limits or the presets in the message.
func TestResizeRefused(t *testing.T) {
	tab, _, _ := tabAt(t, "/breakpoint.html", desktop)
	for _, tc := range []struct {
		plan string
		want string
	}{
		{`{"type":"resize","width":0,"height":0}`, "100 to 7680"},
		{`{"type":"resize","width":50,"height":720}`, "100 to 7680"},
		{`{"type":"resize","width":100000,"height":720}`, "100 to 7680"},
		{`{"type":"resize","width":-5,"height":720}`, "out of range"},
		{`{"type":"resize","width":1024}`, "both"},
		{`{"type":"resize","width":"wide","height":720}`, "integer"},
		{`{"type":"resize","device":"Nokia 3310"}`, `iPhone 13, iPhone 15 Pro, Pixel 7`},
		{`{"type":"resize"}`, `"Pixel 7"`},
		{`{"type":"resize","width":800,"height":600,"deviceScaleFactor":5}`, "0.5 to 4"},
		{`{"type":"resize","width":800,"height":600,"deviceScaleFactor":0.1}`, "0.5 to 4"},
		{`{"type":"resize","width":800,"height":600,"deviceScaleFactor":-1}`, "out of range"},
		{`{"type":"resize","width":800,"height":600,"deviceScaleFactor":"2x"}`, "must be a number"},
	} {
		before := tab.Info().Sequence
		res := send(t, tab.ID(), []byte(`{"action":`+tc.plan+`}`))
		if res.OK || res.Code != protocol.CodeBadRequest || !strings.Contains(res.Error, tc.want) {
			t.Errorf("%s: want bad_request naming %s, got %+v", tc.plan, tc.want, res)
		}
		if tab.Info().Sequence != before {
			t.Errorf("%s: a refused resize made a frame", tc.plan)
		}
	}
	if v := viewportOf(t, tab); v.Width != 1280 || v.Height != 720 {
		t.Fatalf("after refused resizes the page is %+v", v)
	}
}

// The emulation lasts as long as the tab's connection: closed, the page
// has its window's own size again (what an attach profile's user gets back).
func TestEmulationEndsWithConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	page, err := testBrowser.OpenPage(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	defer testBrowser.CloseTarget(context.Background(), page.TargetID())
	if _, err := page.Emulate(ctx, cdpdriver.Emulation{Width: 1111, Height: 555, DeviceScaleFactor: 1}); err != nil {
		t.Fatal(err)
	}
	page.Close()
	again, err := testBrowser.AttachPage(ctx, page.TargetID())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	// Closing sends the detach without waiting for it (a stopped browser
	// holds no one up), and the renderer drops the emulation a moment
	// after the browser reads it: the width comes back within seconds.
	within := testscale.D(20 * time.Second)
	deadline := time.Now().Add(within)
	for {
		w, err := again.Eval(ctx, "innerWidth", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if string(w) != "1111" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the emulated width outlived the connection that set it by", within)
		}
		time.Sleep(20 * time.Millisecond) // polling the page, with a deadline
	}
}

func jsonOf(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// On a phone, a page without a viewport meta is laid out 980px wide and
// shown zoomed out: clicks (and taps) still land on the element named,
// near the origin and far from it, above and below the fold.
func TestClickZoomedOut(t *testing.T) {
	tab, _, _ := tabAt(t, "/zoomed.html", desktop)
	for _, dev := range []string{"iPhone 13", "Pixel 7"} {
		cmdMutate(t, tab, protocol.Action{Type: "resize", Device: dev})
		cmdMutate(t, tab, protocol.Action{Type: "reload", Wait: true})
		var scale float64
		cmdEvalInto(t, tab, `visualViewport.scale`, &scale)
		if scale >= 0.6 {
			t.Fatalf("%s: the page is not zoomed out (scale %v): the test needs it to be", dev, scale)
		}
		for _, id := range []string{"near", "right", "low"} {
			cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#" + id})
		}
		cmdExpect(t, tab, `document.getElementById('log').textContent`, `"near right low "`)
	}
}

// A profile with a viewport of its own lays its tabs out for it, and its
// browser's windows are that size; the other profiles keep the node's.
func TestProfileViewport(t *testing.T) {
	t.Parallel() // its own node
	phone, err := protocol.NewViewport("", "iPhone 13")
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbprofvp", Profiles: []ProfileOptions{{Name: "phone", Viewport: &phone}}})
	c := newBusClient(t, node)
	subj := node.Subjects()
	var launched map[string]any
	c.ask(subj.Profile("phone", protocol.OpLaunch), nil, &launched)
	var pages protocol.TabList
	c.ask(subj.Profile("phone", protocol.OpPages), nil, &pages)
	if len(pages.Tabs) != 1 {
		t.Fatalf("phone profile pages: %+v (launch: %v)", pages, launched)
	}
	sizeOf := func(tab string) pageViewport {
		t.Helper()
		res := c.plan(subj, tab, protocol.Plan{Actions: []protocol.Action{ // a page for phones: not zoomed out
			{Type: "navigate", URL: site("/breakpoint.html"), Wait: true}, {Type: "eval", Expression: pageViewportJS}}})
		var v pageViewport
		if !res.OK || json.Unmarshal(res.Results[1].Value, &v) != nil {
			t.Fatalf("eval in %s: %+v", tab, res)
		}
		return v
	}
	if v := sizeOf(pages.Tabs[0].Tab); v.Width != 390 || v.Height != 664 || v.Ratio != 3 || !strings.Contains(v.UserAgent, "iPhone") {
		t.Fatalf("the phone profile's tab: %+v, want iPhone 13's 390x664 at 3x", v)
	}
	w, err := node.Profile("phone").Browser().conn.Client().Browser.GetWindowForTarget(context.Background(),
		browser.NewGetWindowForTargetArgs().SetTargetID(target.ID(pages.Tabs[0].Tab)))
	if err != nil {
		t.Fatal(err)
	}
	// Chromium makes no window narrower than 500 pixels.
	if w.Bounds.Height == nil || *w.Bounds.Height != 664 {
		t.Fatalf("the phone profile's window: %s, want 664 high", jsonOf(w.Bounds))
	}
	if v := sizeOf(node.Tabs()[0].Tab); v.Width != 1280 || v.Height != 720 {
		t.Fatalf("the default profile's tab: %+v, want the node's 1280x720", v)
	}
}

// An attach profile with a viewport of its own has its tabs emulated (one
// without keeps its window's size: TestEmulationEndsWithConnection).
func TestAttachProfileViewport(t *testing.T) {
	outside, err := cdpdriver.Launch(context.Background(), cdpdriver.LaunchOptions{Headless: true, DebuggingPort: true})
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	vp := protocol.Viewport{Width: 1024, Height: 768, DeviceScaleFactor: 1}
	node := startTestNode(t, NodeOptions{Prefix: "fbattachvp", Profiles: []ProfileOptions{{Name: "chrome", Attach: outside.DevToolsURL(), Viewport: &vp}}})
	c := newBusClient(t, node)
	subj := node.Subjects()
	var pages protocol.TabList
	c.ask(subj.Profile("chrome", protocol.OpPages), nil, &pages)
	if len(pages.Tabs) != 1 {
		t.Fatalf("chrome pages: %+v", pages)
	}
	res := c.plan(subj, pages.Tabs[0].Tab, one(protocol.Action{Type: "eval", Expression: pageViewportJS}))
	var v pageViewport
	if !res.OK || json.Unmarshal(res.Results[0].Value, &v) != nil || v.Width != 1024 || v.Height != 768 {
		t.Fatalf("the attached tab: %+v (ok %v, %s), want 1024x768", v, res.OK, res.Error)
	}
}
