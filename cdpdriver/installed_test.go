package cdpdriver

import (
	"errors"
	"testing"
	"time"
)

// A click installs its locate function in the document once: the clicks
// after it there call it (its source is not sent again), and a new
// document gets it anew.
func TestClickInstallsItsLocateOncePerDocument(t *testing.T) {
	ctx, p, site := siteTestOpen(t, "/bench.html", 60*time.Second)
	installed := func() bool {
		t.Helper()
		err := p.callOnDocument(ctx, "locate element", "#count", pointFunction.call, false, &point{}, true, true)
		if errors.Is(err, errUninstalled) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
	clicks := func(want int) {
		t.Helper()
		for range want {
			if err := p.Click(ctx, "#count", ClickOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var n string
		if err := p.evalValue(ctx, "count", `document.getElementById("count").dataset.n || ""`, &n); err != nil || n != "2" {
			t.Fatalf("the button counted %q clicks (%v), want 2", n, err)
		}
	}
	if installed() {
		t.Fatal("the locate function is there before any click")
	}
	clicks(2)
	if !installed() {
		t.Fatal("two clicks, and the locate function is not installed")
	}
	snapshotTestLoad(ctx, t, p, site+"/bench.html?again")
	if installed() {
		t.Fatal("a new document has the last one's locate function")
	}
	clicks(2)
	if !installed() {
		t.Fatal("the new document's clicks did not install it")
	}
}
