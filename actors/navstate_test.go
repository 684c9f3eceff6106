package actors

import (
	"testing"

	"github.com/framebus/framebus/cdpdriver"
)

// Chromium reports a page without a title (yet) with its URL, less the
// scheme, as the title; that is not the page's title.
func TestURLTitle(t *testing.T) {
	for _, tc := range []struct {
		title, url string
		want       bool
	}{
		{"127.0.0.1:3000/meta.html", "http://127.0.0.1:3000/meta.html", true},
		{"example.com", "https://example.com/", true},
		{"example.com/", "https://example.com/", true},
		{"Example Domain", "https://example.com/", false},
		{"about:blank", "about:blank", true},
		{"", "http://x/", false},
	} {
		if got := urlTitle(tc.title, tc.url); got != tc.want {
			t.Errorf("urlTitle(%q, %q) = %v", tc.title, tc.url, got)
		}
	}
}

// Navigation state is keyed by loaderId: the load event of a document
// that was replaced arrives late and completes nothing of the new one.
func TestNavStateLateLoadOfOldDocument(t *testing.T) {
	s := newNavState()
	s.observe([]cdpdriver.Event{
		cdpdriver.FrameNavigated{LoaderID: "old", URL: "http://a/", Main: true},
		cdpdriver.FrameNavigated{LoaderID: "new", URL: "http://b/", Main: true},
		cdpdriver.Lifecycle{LoaderID: "old", Name: "load", Main: true}, // late
	})
	if s.loaderID != "new" || s.url != "http://b/" {
		t.Fatalf("current document %s at %s, want new at http://b/", s.loaderID, s.url)
	}
	if s.loaded["new"] || !s.committed("new") {
		t.Fatalf("the old document's load counted for the new one: loaded %v", s.loaded)
	}
	s.observe([]cdpdriver.Event{cdpdriver.Lifecycle{LoaderID: "new", Name: "DOMContentLoaded", Main: true}})
	if s.loaded["new"] {
		t.Fatal("DOMContentLoaded taken for load")
	}
	s.observe([]cdpdriver.Event{cdpdriver.Lifecycle{LoaderID: "new", Name: "load", Main: true}})
	if !s.loaded["new"] {
		t.Fatal("the new document's load was not seen")
	}
}
