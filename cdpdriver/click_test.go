package cdpdriver

import (
	"net/url"
	"strconv"
	"testing"
	"time"
)

// clickTestPage has a button that retitles the page, one whose mousedown
// dispatches untrusted pointerups, and a frame whose document takes the
// pointerup of a click on it.
const clickTestPage = `<!doctype html><title>Before</title>
<button id="retitle" onclick="document.title = 'Retitled ' + (window.n = (window.n || 0) + 1)">Retitle</button>
<button id="fake" onmousedown="for (let i = 0; i < 5; i++) dispatchEvent(new PointerEvent('pointerup', {bubbles: true}))">Fake</button>
<iframe srcdoc="<style>body { margin: 0 } button { width: 100vw; height: 100vh }</style><button onclick='parent.inFrame = true'>In the frame</button>" style="width:200px;height:80px"></iframe>`

// A click answers the page as it was once the click had been handled,
// read in the same round trip that checked it had been, when the
// document counted the release's pointerup. When it could not (the read
// overtook the release, or the pointerup went to a frame's document), it
// waits for the release's answer instead and answers no location.
func TestClickSettles(t *testing.T) {
	br := snapshotTestBrowser(t)
	ctx := snapshotTestCtx(t, time.Minute)
	p := snapshotTestOpen(ctx, t, br, "data:text/html,"+url.PathEscape(clickTestPage))

	// The read may overtake the release now and then, but not often.
	clicks, settled := 0, 0
	for _, o := range []ClickOptions{{}, {Double: true}} {
		for range 10 {
			loc, err := p.Click(ctx, "#retitle", o)
			if err != nil {
				t.Fatal(err)
			}
			clicks++
			if o.Double {
				clicks++
			}
			if loc == nil {
				continue
			}
			settled++
			if want := "Retitled " + strconv.Itoa(clicks); loc.Title != want {
				t.Fatalf("click %d %+v: title %q, want %q, the one its handler set", clicks, o, loc.Title, want)
			}
		}
	}
	if settled == 0 {
		t.Fatal("no click was settled by its pointerup")
	}

	// The count is of real pointerups only: a page cannot make a click
	// look handled before it was.
	ups := func() int {
		var s clickSettled
		if err := p.callOnDocument(ctx, "count", "", settleClickJS, false, &s); err != nil {
			t.Fatal(err)
		}
		return s.Ups
	}
	before := ups()
	if _, err := p.Click(ctx, "#fake", ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := ups() - before; n != 1 {
		t.Fatalf("a click with 5 untrusted pointerups counted %d, want 1", n)
	}

	loc, err := p.Click(ctx, "iframe", ClickOptions{})
	if err != nil || loc != nil {
		t.Fatalf("click on a frame: location %+v, %v; want none (its document took the pointerup)", loc, err)
	}
	var inFrame bool
	if err := p.evalValue(ctx, "read", "window.inFrame === true", &inFrame); err != nil || !inFrame {
		t.Fatalf("the click did not reach the frame's button: %v, %v", inFrame, err)
	}
}
