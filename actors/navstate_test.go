package actors

import "testing"

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
