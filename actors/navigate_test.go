package actors

import (
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// Navigations that load no document (204, a download) fail at once with
// the browser's text and produce no frame; fragment navigations, repeated
// or not, settle at once into one frame each.
func TestNavigateEdgeCases(t *testing.T) {
	tab := openTab(t)
	seq := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/links.html")})).Sequence
	cases := []struct {
		path   string
		code   protocol.Code
		frames int64
	}{
		{"/no-content", protocol.CodeNavigationFailed, 0},
		{"/download", protocol.CodeNavigationFailed, 0},
		{"/links.html#section", "", 1},
		{"/links.html#section", "", 1},
		{"/links.html#other", "", 1},
		{"/links.html", "", 1},
	}
	for _, tc := range cases {
		// The deadline is long so that waiting for something that never
		// comes shows up as a timeout code, not as a slow pass.
		res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site(tc.path), Timeout: protocol.Duration(20 * time.Second), BasedOnSequence: protocol.Based(seq)}))
		if res.Code != tc.code || res.Sequence != seq+tc.frames {
			t.Fatalf("navigate %s: %+v", tc.path, res)
		}
		if tc.code == protocol.CodeNavigationFailed && res.Error != "net::ERR_ABORTED" {
			t.Fatalf("navigate %s: error %q", tc.path, res.Error)
		}
		if tc.code == "" && res.Results[0].URL != site(tc.path) {
			t.Fatalf("navigate %s reported %q", tc.path, res.Results[0].URL)
		}
		seq = res.Sequence
	}
}
