package actors

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/xdisplay"
	"github.com/framebus/framebus/protocol"
)

// A person at a headed browser, with real X input (xdotool on an Xvfb
// display) and outside any plan, types a URL into the address bar, clicks
// a link, presses Alt+Left and submits a form: each makes one frame of
// source "user". A page that moves on by itself (location.href on a
// timer) makes one of source "page". A plan based on the frame before
// the person's navigation is stale. The same in a browser framebus
// launched (a window of its own per tab) and in one it attached to, as a
// "chrome" profile does (a tab among the person's).
func TestUserFrames(t *testing.T) {
	t.Run("launched", func(t *testing.T) {
		display := xdisplay.Start(t, 1280, 900)
		t.Setenv("DISPLAY", display)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		browser, err := StartBrowser(ctx, cdpdriver.LaunchOptions{Headless: false, WindowWidth: 1000, WindowHeight: 700}, zerolog.Nop())
		if err != nil {
			t.Fatalf("headed browser on %s: %v", display, err)
		}
		t.Cleanup(func() { browser.Close() })
		userFrames(t, display, browser)
	})
	t.Run("attached", func(t *testing.T) {
		display := xdisplay.Start(t, 1280, 900)
		t.Setenv("DISPLAY", display)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		proc, err := cdpdriver.Launch(ctx, cdpdriver.LaunchOptions{Headless: false, DebuggingPort: true, WindowWidth: 1000, WindowHeight: 700})
		if err != nil {
			t.Fatalf("headed browser on %s: %v", display, err)
		}
		t.Cleanup(func() { proc.Close() })
		browser, err := AttachBrowser(ctx, proc.DevToolsURL(), zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { browser.Close() })
		userFrames(t, display, browser)
	})
}

// userFrames is TestUserFrames in browser, whose windows are on display.
func userFrames(t *testing.T, display string, browser *Browser) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	page, err := browser.OpenPage(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	frames := watchFrames(t, testConn, protocol.DefaultSubjects.TabFrames(page.TargetID()))
	var reader *cdpdriver.BrowserUser
	if proc := browser.Process(); proc != nil {
		reader = proc.User()
	}
	tab, err := StartTab(ctx, TabOptions{ID: page.TargetID(), Page: page, Conn: testConn, Subjects: protocol.DefaultSubjects, StageReader: reader})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tab.Stop)
	if f := frames.next(); f.Sequence != 1 || f.Source != protocol.SourceBrowser {
		t.Fatalf("first frame %d from %q, want 1 from the browser", f.Sequence, f.Source)
	}
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
		res := send(t, tab.ID(), protocol.Plan{Actions: []protocol.Action{
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

	typeURL(site("/person.html"))
	expect(2, protocol.SourceUser, site("/person.html"))

	at := where(2)
	person("mousemove", "--sync", strings.Fields(at["next"])[0], strings.Fields(at["next"])[1])
	person("click", "1")
	expect(3, protocol.SourceUser, site("/product.html?id=clicked"))

	person("key", "alt+Left")
	expect(4, protocol.SourceUser, site("/person.html"))

	// The agent planned against the page before the person went back.
	three := int64(3)
	if res := send(t, tab.ID(), one(protocol.Action{Type: "url", BasedOnSequence: &three})); res.OK || res.Code != protocol.CodeStaleFrame ||
		res.Stopped == nil || *res.Stopped.Expected != 3 || res.Stopped.Current != 4 {
		t.Fatalf("a plan based on frame 3, before the person's back: %+v, want stale_frame (expected 3, current 4)", res)
	}

	at = where(4)
	person("mousemove", "--sync", strings.Fields(at["send"])[0], strings.Fields(at["send"])[1])
	person("click", "1")
	expect(5, protocol.SourceUser, site("/product.html?id=submitted"))

	// The person opens a page that moves on by itself 400 ms after it
	// loaded (location.href, on a timer): that move is the page's.
	typeURL(site("/timer.html"))
	expect(6, protocol.SourceUser, site("/timer.html"))
	expect(7, protocol.SourcePage, site("/product.html?id=timer"))

	// One frame each, no more: the tab is at 7.
	seven := int64(7)
	if res := send(t, tab.ID(), one(protocol.Action{Type: "url", BasedOnSequence: &seven})); !res.OK {
		t.Fatalf("a plan based on frame 7: %+v, want it to run (no other frame)", res)
	}
}
