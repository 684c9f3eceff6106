package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// Clicks that start no new document in this tab settle at once into one
// frame, instead of waiting for a navigation that never commits.
func TestClicksThatDoNotNavigateSettle(t *testing.T) {
	tab, frames, seq := tabAt(t, "/links.html", autoDialogs)
	cases := []struct {
		selector string
		url      string // the URL of the click's frame
	}{
		{"#hash", site("/links.html#section")},
		{"#js", site("/links.html#section")},
		{"#nocontent", site("/links.html#section")},
		{"#download", site("/links.html#section")},
		{"#blank", site("/links.html#section")},
		{"#prevented", site("/links.html#section")},
		{"#alert", site("/links.html#section")},
	}
	for _, tc := range cases {
		start := time.Now()
		res := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: tc.selector, Timeout: protocol.Duration(20 * time.Second), BasedOnSequence: protocol.Based(seq)}))
		took := time.Since(start)
		if !res.OK || res.Sequence != seq+1 {
			t.Fatalf("click %s: %+v", tc.selector, res)
		}
		seq++
		f := frames.next()
		if f.Sequence != seq || f.Action != "click" || f.URL != tc.url {
			t.Fatalf("click %s: frame %+v", tc.selector, f)
		}
		// Not a timing assertion: a click that waited for a navigation
		// that never came would have run into its 20s deadline.
		if took > 15*time.Second {
			t.Fatalf("click %s waited %s for a navigation that never came", tc.selector, took)
		}
	}
	// The alert was answered (accepted) so the page is not wedged.
	if res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "1"})); !res.OK {
		t.Fatalf("tab wedged after alert: %+v", res)
	}
	res := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: "#confirm"}))
	if !res.OK {
		t.Fatalf("confirm: %+v", res)
	}
	if v := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "document.getElementById('answer').textContent"})); string(v.Results[0].Value) != `"true"` {
		t.Fatalf("confirm answered %s", v.Results[0].Value)
	}
}

// An eval that opens a dialog does not wedge a tab that answers dialogs
// at once either.
func TestEvalAlertDoesNotWedge(t *testing.T) {
	tab := openTab(t, autoDialogs)
	send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/")}))
	dialogs := watchFrames(t, testConn, protocol.DefaultSubjects.TabEvents(tab.ID(), "dialog"))
	res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "alert('hi'), prompt('name?', 'Ada')", Timeout: protocol.Duration(10 * time.Second)}))
	if !res.OK || string(res.Results[0].Value) != `"Ada"` {
		t.Fatalf("eval with dialogs: %+v", res)
	}
	for _, want := range []string{`"type":"alert","message":"hi"`, `"type":"prompt","message":"name?"`} {
		select {
		case m := <-dialogs.ch:
			if !strings.Contains(string(m.Data), want) {
				t.Fatalf("dialog event %s, want %s", m.Data, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no dialog event %s", want)
		}
	}
}
