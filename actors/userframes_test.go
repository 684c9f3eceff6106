package actors

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/internal/xdisplay"
	"github.com/framebus/framebus/protocol"
)

// A person at a headed browser, with real X input (xdotool on an Xvfb
// display) and outside any plan, types a URL into the address bar, clicks
// a link, presses Alt+Left and submits a form: each makes one frame of
// source "user". A page that moves on by itself (location.href on a
// timer) makes one of source "page", and so does one a second after the
// agent's click, which carries the click's user activation. A plan based
// on the frame before the person's navigation is stale. The same in a
// headed browser framebus
// launched (a window of its own per tab) and in one it attached to, as a
// "chrome" profile does (a tab among the person's).
func TestUserFrames(t *testing.T) {
	t.Run("launched", func(t *testing.T) {
		display := xdisplay.Start(t, 1280, 900)
		t.Setenv("DISPLAY", display)
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		defer cancel()
		// serve --headed; a zero viewport keeps the window's own size, so
		// that the page's place on the screen is the window's.
		node, err := StartNode(ctx, NodeOptions{Prefix: "fbuserlaunched", Viewport: &protocol.Viewport{},
			Launch: cdpdriver.LaunchOptions{Headless: false, WindowWidth: 1000, WindowHeight: 700}})
		if err != nil {
			t.Fatalf("headed node on %s: %v", display, err)
		}
		t.Cleanup(func() { node.Close() })
		tabs := node.Tabs()
		if len(tabs) != 1 {
			t.Fatalf("the headed node's tabs: %+v", tabs)
		}
		userFrames(t, display, node, tabs[0])
	})
	t.Run("attached", func(t *testing.T) {
		display := xdisplay.Start(t, 1280, 900)
		t.Setenv("DISPLAY", display)
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		defer cancel()
		// A person's own browser, which the node attaches to ("chrome").
		outside, err := cdpdriver.Launch(ctx, cdpdriver.LaunchOptions{Headless: false, DebuggingPort: true, WindowWidth: 1000, WindowHeight: 700})
		if err != nil {
			t.Fatalf("headed browser on %s: %v", display, err)
		}
		t.Cleanup(func() { outside.Close() })
		node := startTestNode(t, NodeOptions{Prefix: "fbuserattached", Profiles: []ProfileOptions{{Name: "chrome", Attach: outside.DevToolsURL()}}})
		tabs := node.Profile("chrome").Tabs()
		if len(tabs) != 1 {
			t.Fatalf("the attached browser's tabs: %+v", tabs)
		}
		userFrames(t, display, node, tabs[0])
	})
}

// userFrames is TestUserFrames on tab of node, whose window is on display.
func userFrames(t *testing.T, display string, node *Node, tab protocol.TabInfo) {
	c := newBusClient(t, node)
	subj := node.Subjects()
	frames := watchFrames(t, c.nc, subj.TabFrames(tab.Tab))
	first := node.Tab(tab.Tab).Info().Sequence // frames to come are first+1...
	person := func(args ...string) { t.Helper(); xdisplay.Do(t, display, args...) }
	expect := func(seq int64, source, url string) {
		t.Helper()
		f := frames.next()
		if f.Sequence != seq || f.Source != source || f.Action != protocol.FrameNavigation || f.URL != url || f.PlanID != "" {
			t.Fatalf("frame %d: %s by %q at %s (plan %q), want frame %d: navigation by %q at %s", f.Sequence, f.Action, f.Source, f.URL, f.PlanID, seq, source, url)
		}
	}
	// where reads, without a frame (text is read-only), where the
	// person's page shows its link and its button on the screen.
	where := func(seq int64) map[string]string {
		t.Helper()
		res := c.plan(subj, tab.Tab, protocol.Plan{Actions: []protocol.Action{
			{Type: "wait-for", Selector: "#geo:not(:empty)", BasedOnSequence: &seq},
			{Type: "text", Selector: "#geo", BasedOnSequence: &seq},
		}})
		var text string
		var at map[string]string
		if !res.OK || len(res.Results) != 2 || json.Unmarshal(res.Results[1].Value, &text) != nil || json.Unmarshal([]byte(text), &at) != nil {
			t.Fatalf("read where the page's elements are: %+v", res)
		}
		return at
	}
	// The person moves the pointer onto the page first: with no window
	// manager, keys go to the window under it.
	typeURL := func(url string) {
		t.Helper()
		person("mousemove", "--sync", "500", "650")
		person("key", "ctrl+l")
		person("type", "--delay", "20", url)
		person("key", "Delete", "Return") // Delete: no inline completion
	}

	click := func(at string) {
		t.Helper()
		x, y, _ := strings.Cut(at, " ")
		person("mousemove", "--sync", x, y)
		person("click", "1")
	}
	urlAt := func(seq int64) protocol.PlanResult {
		t.Helper()
		return c.plan(subj, tab.Tab, protocol.Plan{Actions: []protocol.Action{{Type: "url", BasedOnSequence: &seq}}})
	}

	typeURL(site("/person.html"))
	expect(first+1, protocol.SourceUser, site("/person.html"))

	click(where(first + 1)["next"])
	expect(first+2, protocol.SourceUser, site("/product.html?id=clicked"))

	person("key", "alt+Left")
	expect(first+3, protocol.SourceUser, site("/person.html"))

	// The agent planned against the page before the person went back.
	if res := urlAt(first + 2); res.OK || res.Code != protocol.CodeStaleFrame ||
		res.Stopped == nil || *res.Stopped.Expected != first+2 || res.Stopped.Current != first+3 {
		t.Fatalf("a plan based on frame %d, before the person's back: %+v, want stale_frame (expected %d, current %d)", first+2, res, first+2, first+3)
	}

	click(where(first + 3)["send"])
	expect(first+4, protocol.SourceUser, site("/product.html?id=submitted"))

	// The person opens a page that moves on by itself 400 ms after it
	// loaded (location.href, on a timer): that move is the page's.
	typeURL(site("/timer.html"))
	expect(first+5, protocol.SourceUser, site("/timer.html"))
	expect(first+6, protocol.SourcePage, site("/product.html?id=timer"))

	// The agent clicks a button whose script navigates a second later,
	// after the click's frame: the request carries the user gesture of
	// the agent's click, and the navigation is the page's, not a
	// person's.
	at, next := first+6, first+7
	if res := c.plan(subj, tab.Tab, protocol.Plan{Actions: []protocol.Action{
		{Type: "navigate", URL: site("/person.html"), BasedOnSequence: &at},
		{Type: "click", Selector: "#later", BasedOnSequence: &next},
	}}); !res.OK || res.Sequence != first+8 {
		t.Fatalf("the agent's navigate and click: %+v", res)
	}
	frames.until(first + 8)
	expect(first+9, protocol.SourcePage, site("/product.html?id=later"))

	// One frame each, no more.
	if res := urlAt(first + 9); !res.OK {
		t.Fatalf("a plan based on frame %d: %+v, want it to run (no other frame)", first+9, res)
	}
}
