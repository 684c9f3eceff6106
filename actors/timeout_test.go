package actors

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// A navigate that passes its deadline fails with DR-013's timeout error,
// leaves the tab where it was (no late frame) and usable.
func TestNavigateTimeoutLeavesTabUsable(t *testing.T) {
	tab, frames, seq := tabAt(t, "/")
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/slow"), Timeout: protocol.Duration(300 * time.Millisecond), BasedOnSequence: protocol.Based(seq)}))
	if res.OK || res.Code != protocol.CodeTimeout || !strings.HasPrefix(res.Error, "timeout waiting for page load: the navigation to "+site("/slow")+" did not commit within 300ms") || res.Sequence != seq {
		t.Fatalf("slow navigate: %+v", res)
	}
	// The slow server answers after 3s; the cancelled load must not turn
	// into a frame. The next plan, based on the same frame, runs.
	res = send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "new Promise(r => setTimeout(() => r(location.href), 3500))", BasedOnSequence: protocol.Based(seq)}))
	if !res.OK || string(res.Results[0].Value) != `"`+site("/")+`"` {
		t.Fatalf("after the timeout: %+v", res)
	}
	if f := frames.next(); f.Sequence != seq+1 || f.Action != "eval" {
		t.Fatalf("frame after the timed-out navigate: %+v", f)
	}
	// --wait waits for the load event; a short deadline gives the same error.
	res = send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/search.html"), Wait: true}))
	if !res.OK {
		t.Fatalf("navigate --wait: %+v", res)
	}
	if v := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "document.readyState"})); string(v.Results[0].Value) != `"complete"` {
		t.Fatalf("after --wait readyState is %s", v.Results[0].Value)
	}
}

// The node's default action timeout (browser.timeout) bounds actions that
// set none.
func TestNodeActionTimeout(t *testing.T) {
	tab := openTab(t, func(o *TabOptions) { o.ActionTimeout = 300 * time.Millisecond })
	send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/")}))
	res := send(t, tab.ID(), one(protocol.Action{Type: "wait-for", Selector: "#never"}))
	if res.OK || res.Code != protocol.CodeTimeout || !strings.Contains(res.Error, "300ms") {
		t.Fatalf("wait-for under a 300ms node default: %+v", res)
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "wait-for", Selector: "#never", Timeout: protocol.Duration(100 * time.Millisecond)})); !strings.Contains(r.Error, "100ms") {
		t.Fatalf("the action's own timeout wins: %+v", r)
	}
}

// The next action waits for the load of the page before it (so that page's
// frame has its content) for half its own timeout at most, then captures
// the content as it is and runs: a short timeout is honoured while a page
// is still loading, and the frame says what it got.
func TestActionTimeoutBoundsTheWaitForTheLastLoad(t *testing.T) {
	tab, frames, _ := tabAt(t, "/read.html")
	for i, a := range []protocol.Action{
		{Type: "navigate", URL: site("/form.html"), Timeout: protocol.Duration(2 * time.Second)},
		{Type: "eval", Expression: "1", Timeout: protocol.Duration(2 * time.Second)},
	} {
		r := cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/slowload.html?delay=60s&n=" + strconv.Itoa(i))})
		cmdMutate(t, tab, a)
		f := frames.until(r.Sequence)
		if !strings.Contains(f.Note, "content captured before load") || f.FullPage == nil {
			t.Fatalf("%s after a page still loading: that page's frame %+v", a.Type, f)
		}
	}
}
