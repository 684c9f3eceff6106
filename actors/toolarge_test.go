package actors

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// A value larger than a reply carries is refused where it is made, in the
// page, before it crosses to framebus: result_too_large comes at once,
// not at the deadline (the actions below have 20 s, and carrying 100 MB
// from Chromium takes longer), stating the size and the limit. The action
// ran (an eval makes its frame), and the tab goes on.
func TestResultTooLarge(t *testing.T) {
	t.Parallel() // its own tab; it reads no other tab or the browser's list
	tab, frames, seq := tabAt(t, "/")
	limit := strconv.Itoa(int(testConn.MaxPayload()) - replyRoom)
	tooLarge := func(name string, a protocol.Action, mutates bool) {
		t.Helper()
		a.Timeout = protocol.Duration(20 * time.Second)
		start := time.Now()
		res := send(t, tab.ID(), one(a))
		t.Logf("%s: %s in %v", name, res.Code, time.Since(start))
		if res.OK || res.Code != protocol.CodeResultTooLarge || !strings.Contains(res.Error, limit) || len(res.Results) != 1 || res.Results[0].Value != nil {
			t.Fatalf("%s: ok %v code %q error %.300q, %d results, want result_too_large naming the limit %s", name, res.OK, res.Code, res.Error, len(res.Results), limit)
		}
		if mutates {
			seq++
		}
		if res.Sequence != seq {
			t.Errorf("%s: sequence %d, want %d", name, res.Sequence, seq)
		}
		frames.until(seq)
		if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "6 * 7"})); !r.OK || string(r.Results[0].Value) != "42" {
			t.Fatalf("the tab after %s: %+v", name, r)
		}
		seq++
	}
	tooLarge("a 100 MB string", protocol.Action{Type: "eval", Expression: "'x'.repeat(100 << 20)"}, true)
	tooLarge("a promise of one", protocol.Action{Type: "eval", Expression: "new Promise(r => setTimeout(() => r('x'.repeat(100 << 20)), 10))"}, true)
	tooLarge("an object of 20 MB as JSON", protocol.Action{Type: "eval", Expression: "Array.from({length: 4}, () => 'z'.repeat(5 << 20));"}, true)

	// Noise does not compress: a full-page PNG of 1280x4000 of it is
	// over 16 MB as base64.
	noise := `(() => {
		const c = document.createElement("canvas");
		c.width = 1280; c.height = 4000;
		const g = c.getContext("2d"), img = g.createImageData(c.width, c.height);
		const px = new Uint32Array(img.data.buffer);
		for (let i = 0; i < px.length; i++) px[i] = (Math.random() * 0xffffffff) | 0xff000000;
		g.putImageData(img, 0, 0);
		document.body.prepend(c);
		window.noise = c;
		return 1;
	})()`
	if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: noise})); !r.OK {
		t.Fatalf("painting noise: %+v", r)
	}
	seq++
	tooLarge("a full-page screenshot", protocol.Action{Type: "screenshot", FullPage: true}, false)
	if r := send(t, tab.ID(), one(protocol.Action{Type: "screenshot"})); !r.OK {
		t.Fatalf("a screenshot of the viewport: %v %q", r.OK, r.Error)
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "noise.remove(), 1"})); !r.OK {
		t.Fatalf("removing the noise: %+v", r)
	}
	seq++

	// A page whose text, markup and snapshot are each 20 MB.
	build := "document.body.insertAdjacentHTML('beforeend', '<ul>' + ('<li><a href=#x>' + 'w'.repeat(20000) + '</a></li>').repeat(1000) + '</ul>')"
	if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: build + ", 1"})); !r.OK {
		t.Fatalf("building the page: %+v", r)
	}
	seq++
	tooLarge("text", protocol.Action{Type: "text"}, false)
	tooLarge("html", protocol.Action{Type: "html"}, false)
	tooLarge("snapshot", protocol.Action{Type: "snapshot", NoIdle: true}, false)
	// A part of it still reads.
	if r := send(t, tab.ID(), one(protocol.Action{Type: "text", Selector: "li"})); !r.OK || !strings.Contains(string(r.Results[0].Value), "www") {
		t.Fatalf("the first item's text: %v %q", r.OK, r.Error)
	}
}
