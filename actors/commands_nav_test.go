package actors

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// Acceptance tests of navigate, reload, back and forward (DR-013). The
// helpers (cmdMutate, cmdEval, ...) are in commands_read_test.go.

// navigate completes URLs as DR-013 says, follows redirects, and answers
// the URL it arrived at; the frame has that URL and the page's content.
func TestNavigateResolvesAndRedirects(t *testing.T) {
	tab, frames, _ := tabAt(t, "/read.html")
	hostPort := strings.TrimPrefix(testSite.URL, "http://")
	_, port, _ := strings.Cut(hostPort, ":")
	cases := []struct{ name, url, want string }{
		{"IP without scheme is http", hostPort + "/search.html?q=auto", site("/search.html?q=auto")},
		{"relative to the page", "/product.html?id=9", site("/product.html?id=9")},
		{"redirect", site("/redirect?to=" + url.QueryEscape("/product.html?id=7")), site("/product.html?id=7")},
		{"two redirects", site("/redirect?to=" + url.QueryEscape("/redirect?to="+url.QueryEscape("/search.html?q=hops"))), site("/search.html?q=hops")},
		{"relative redirect", "/redirect?to=" + url.QueryEscape(site("/read.html")), site("/read.html")},
		{"localhost without scheme is http", "localhost:" + port + "/product.html?id=8", "http://localhost:" + port + "/product.html?id=8"},
	}
	for _, tc := range cases {
		r := cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: tc.url})
		if r.URL != tc.want {
			t.Fatalf("%s: navigate %q arrived at %q, want %q (%+v)", tc.name, tc.url, r.URL, tc.want, r)
		}
		f := frames.next()
		if f.Sequence != r.Sequence || f.Action != "navigate" || f.URL != tc.want || f.FullPage == nil {
			t.Fatalf("%s: frame %+v", tc.name, f)
		}
		cmdExpect(t, tab, "location.href", `"`+tc.want+`"`)
		frames.next() // the eval's
	}
	cmdExpect(t, tab, "document.title", `"Product 8"`)
}

// A navigation's reply and frame carry the new document's title, never
// the previous page's: without --wait the reply has what is parsed at
// commit ("", or the static <title> before the page's script sets its
// own), with --wait the loaded page's; the frame, which waits for the
// load, has the loaded page's either way, reloads included.
func TestNavigationTitles(t *testing.T) {
	tab, frames, _ := tabAt(t, "/read.html")
	check := func(a protocol.Action, want string) {
		t.Helper()
		r := cmdMutate(t, tab, a)
		if r.Title != want && (a.Wait || r.Title != "" && r.Title != "Product") {
			t.Fatalf("%s %s (wait %v): reply title %q, want %q", a.Type, a.URL, a.Wait, r.Title, want)
		}
		if f := frames.next(); f.Title != want {
			t.Fatalf("%s %s: frame title %q, want %q", a.Type, a.URL, f.Title, want)
		}
	}
	for i, id := range []string{"1", "2", "3", "4"} {
		check(protocol.Action{Type: "navigate", URL: site("/product.html?id=" + id), Wait: i%2 == 1}, "Product "+id)
	}
	check(protocol.Action{Type: "reload"}, "Product 4")
	check(protocol.Action{Type: "reload", Wait: true}, "Product 4")
	check(protocol.Action{Type: "back", Wait: true}, "Product 3")
	check(protocol.Action{Type: "forward"}, "Product 4")
}

// A page the server answers with an error status (404, 500) loads as a
// browser shows it: the action succeeds, and its reply and every frame of
// that document carry the status, as frames of other documents carry
// theirs; a redirect's is the status of where it led.
func TestFramesCarryTheHTTPStatus(t *testing.T) {
	tab, frames, _ := tabAt(t, "/")
	check := func(a protocol.Action, want int) {
		t.Helper()
		r := cmdMutate(t, tab, a)
		if r.Status != want {
			t.Fatalf("%s %s: reply status %d, want %d (%+v)", a.Type, a.URL, r.Status, want, r)
		}
		if f := frames.until(r.Sequence); f.Status != want {
			t.Fatalf("%s %s: frame status %d, want %d (%+v)", a.Type, a.URL, f.Status, want, f)
		}
	}
	check(protocol.Action{Type: "navigate", URL: site("/missing.html")}, 404)
	check(protocol.Action{Type: "navigate", URL: site("/status?code=500"), Wait: true}, 500)
	check(protocol.Action{Type: "eval", Expression: "1"}, 500) // the same document
	check(protocol.Action{Type: "click", Selector: "#home"}, 200)
	check(protocol.Action{Type: "click", Selector: "#push"}, 200) // pushState
	check(protocol.Action{Type: "navigate", URL: site("/redirect?to=" + url.QueryEscape("/status?code=410"))}, 410)
	check(protocol.Action{Type: "back", Wait: true}, 200)
	check(protocol.Action{Type: "forward", Wait: true}, 410)
	check(protocol.Action{Type: "reload", Wait: true}, 410)
	check(protocol.Action{Type: "navigate", URL: "about:blank"}, 0)
	// A data: document came with no HTTP status (Chromium says 200).
	check(protocol.Action{Type: "navigate", URL: "data:text/html,<title>d</title>data", Wait: true}, 0)
	check(protocol.Action{Type: "reload", Wait: true}, 0)
	// As text: the CLI's and the frame's JSON have "status" only when known.
	r := cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/status?code=404")})
	if raw, _ := protocol.Marshal(r); !strings.Contains(string(raw), `"status":404`) {
		t.Fatalf("reply JSON without its status: %s", raw)
	}
}

// A load the browser cannot make fails with navigation_failed and
// Chromium's net::ERR_ text; the tab navigates normally afterwards.
func TestNavigateFailures(t *testing.T) {
	tab := openTab(t)
	cases := []struct{ url, prefix string }{
		{closedPortURL(t), "net::ERR_CONNECTION_REFUSED"},
		{"http://framebus-test.invalid/", "net::ERR_"},
	}
	for _, tc := range cases {
		res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: tc.url, Timeout: protocol.Duration(20 * time.Second)}))
		if res.OK || res.Code != protocol.CodeNavigationFailed || !strings.HasPrefix(res.Error, tc.prefix) {
			t.Fatalf("navigate %s: want navigation_failed %s..., got %+v", tc.url, tc.prefix, res)
		}
	}
	for _, u := range []string{"http://127.0.0.1:99999/", "127.0.0.1:0/x"} {
		if res := cmdFails(t, tab, protocol.Action{Type: "navigate", URL: u}, protocol.CodeBadRequest); !strings.Contains(res.Error, "is not 1-65535") {
			t.Fatalf("navigate %s: %+v", u, res)
		}
	}
	// A malformed host is the agent's mistake, told plainly (not in the
	// words of Go's IDNA package).
	for _, u := range []string{"https://ex ample.test/", "http://\u200d.test/", "http://%zz/"} {
		if res := cmdFails(t, tab, protocol.Action{Type: "navigate", URL: u}, protocol.CodeBadRequest); strings.Contains(res.Error, "idna") || !strings.Contains(res.Error, "URL") && !strings.Contains(res.Error, "host") {
			t.Fatalf("navigate %q: %+v", u, res)
		}
	}
	if r := cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html")}); r.URL != site("/read.html") {
		t.Fatalf("navigate after failures: %+v", r)
	}
}

// Chromium's error page for a load that failed is a frame like any other,
// at Chromium's chrome-error:// URL; its note names the URL that could
// not be loaded, whether a navigate failed or a link led there.
func TestErrorPageFrameNamesTheURL(t *testing.T) {
	tab, frames, _ := tabAt(t, "/read.html")
	dead := closedPortURL(t)
	cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "document.body.insertAdjacentHTML('beforeend', '<a id=dead href=" + dead + ">dead</a>')"})
	r := cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#dead"})
	want := dead + " could not be loaded"
	if f := frames.until(r.Sequence); !strings.HasPrefix(f.URL, "chrome-error://") || !strings.Contains(f.Note, want) {
		t.Fatalf("the click's frame: URL %q, note %q; want a chrome-error URL and a note with %q", f.URL, f.Note, want)
	}
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html")})
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: dead, Timeout: protocol.Duration(20 * time.Second)}))
	if res.Code != protocol.CodeNavigationFailed {
		t.Fatalf("navigate %s: %+v", dead, res)
	}
	if f := frames.until(res.Sequence); !strings.Contains(f.Note, want) {
		t.Fatalf("the failed navigate's frame: note %q, want %q", f.Note, want)
	}
	// Loading it again fails again, whichever way, with Chromium's words,
	// and each attempt's frame says so.
	for _, a := range []protocol.Action{
		{Type: "reload"},
		{Type: "back", Wait: true},
		{Type: "forward"},
		{Type: "reload", Wait: true},
	} {
		a.Timeout = protocol.Duration(20 * time.Second)
		res := send(t, tab.ID(), one(a))
		if a.Type == "back" {
			if !res.OK || res.Results[0].URL != site("/read.html") {
				t.Fatalf("back from the error page: %+v", res)
			}
			continue
		}
		if res.Code != protocol.CodeNavigationFailed || res.Error != "net::ERR_CONNECTION_REFUSED" {
			t.Fatalf("%s onto a page that cannot be loaded: %+v", a.Type, res)
		}
		if f := frames.until(res.Sequence); !strings.Contains(f.Note, want) {
			t.Fatalf("the failed %s's frame: note %q, want %q", a.Type, f.Note, want)
		}
	}
	// On the error page, a relative URL is relative to the page that
	// could not be loaded, not to chrome-error://.
	res = send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: "/other.html", Timeout: protocol.Duration(20 * time.Second)}))
	if res.Code != protocol.CodeNavigationFailed || !strings.Contains(res.Results[0].URL+frames.until(res.Sequence).Note, strings.TrimSuffix(dead, "/")+"/other.html") {
		t.Fatalf("a relative navigate on the error page: %+v", res)
	}
}

// navigate with wait answers after the load event, which a slow image
// holds back; past its deadline it fails with DR-013's timeout error and
// the tab stays usable. (The tab's frames do not wait for the load, so
// only wait makes the difference.)
func TestNavigateWaitForLoad(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html", cmdSettleFast)
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/slowload.html?delay=1s"), Wait: true, Timeout: protocol.Duration(20 * time.Second)})
	cmdExpect(t, tab, "[document.readyState, window.loadFired]", `["complete",true]`)

	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/slowload.html?delay=60s"), Wait: true, Timeout: protocol.Duration(500 * time.Millisecond)}))
	if res.OK || res.Code != protocol.CodeTimeout || res.Error != "timeout waiting for page load" {
		t.Fatalf("navigate --wait to a page that does not load: %+v", res)
	}
	if r := cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html"), Wait: true}); r.URL != site("/read.html") {
		t.Fatalf("navigate after the timeout: %+v", r)
	}
	cmdExpect(t, tab, "document.readyState", `"complete"`)
}

// reload is always a hard reload: the page runs again (its sessionStorage
// counter goes up, its window state is gone) and a script the server
// marked cacheable is fetched again, which a normal reload would take from
// the cache.
func TestReloadIsHard(t *testing.T) {
	tab, _, _ := tabAt(t, "/reload.html")
	var before struct {
		Loads    int
		ServedAt string
	}
	cmdEvalInto(t, tab, "({Loads: window.loads, ServedAt: window.servedAt})", &before)
	if before.Loads != 1 || before.ServedAt == "" {
		t.Fatalf("reload.html did not load as expected: %+v", before)
	}
	cmdEval(t, tab, "window.marker = 'old page', 1")

	r := cmdMutate(t, tab, protocol.Action{Type: "reload"})
	if r.URL != site("/reload.html") {
		t.Fatalf("reload arrived at %q: %+v", r.URL, r)
	}
	// reload answers at commit (DR-013); ready waits for the load.
	cmdRead(t, tab, protocol.Action{Type: "ready", Timeout: protocol.Duration(20 * time.Second)})
	var after struct {
		Loads    int
		ServedAt string
		Marker   *string
	}
	cmdEvalInto(t, tab, "({Loads: window.loads, ServedAt: window.servedAt, Marker: window.marker})", &after)
	if after.Loads != 2 || after.Marker != nil {
		t.Fatalf("the page did not run again: before %+v, after %+v", before, after)
	}
	if after.ServedAt == "" || after.ServedAt == before.ServedAt {
		t.Fatalf("the cacheable script came from the cache (served at %s, then %s): not a hard reload", before.ServedAt, after.ServedAt)
	}

	cmdMutate(t, tab, protocol.Action{Type: "reload", Wait: true, Timeout: protocol.Duration(20 * time.Second)})
	cmdExpect(t, tab, "[document.readyState, window.loads]", `["complete",3]`)
}

// back and forward move through the tab's history, across documents, a
// pushState entry and a fragment, each answering the URL it arrived at in
// one frame.
func TestBackAndForward(t *testing.T) {
	tab, frames, _ := tabAt(t, "/")
	a, b := site("/"), site("/search.html?q=history")
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: b})
	frames.next()

	step := func(typ, want string, wait bool) {
		t.Helper()
		r := cmdMutate(t, tab, protocol.Action{Type: typ, Wait: wait, Timeout: protocol.Duration(20 * time.Second)})
		if r.URL != want {
			t.Fatalf("%s arrived at %q, want %q: %+v", typ, r.URL, want, r)
		}
		if f := frames.next(); f.Sequence != r.Sequence || f.Action != typ || f.URL != want || f.Source != protocol.SourceAgent {
			t.Fatalf("%s: frame %+v", typ, f)
		}
		cmdExpect(t, tab, "location.href", `"`+want+`"`)
		frames.next() // the eval's
	}
	step("back", a, false)
	step("forward", b, false)
	res := cmdFails(t, tab, protocol.Action{Type: "forward"}, protocol.CodeNoHistory)
	if res.Error != "no next page in history" {
		t.Fatalf("forward at the end: %+v", res)
	}
	step("back", a, true)
	cmdExpect(t, tab, "document.readyState", `"complete"`)
	frames.next()

	// A pushState entry: back stays in the same document.
	cmdEval(t, tab, "window.marker = 'same document', 1")
	frames.next()
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#push"})
	frames.next()
	step("back", a, false)
	cmdExpect(t, tab, "window.marker", `"same document"`)
	frames.next()
	step("forward", site("/pushed"), false)

	// A fragment entry.
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/links.html")})
	frames.next()
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/links.html#section")})
	frames.next()
	step("back", site("/links.html"), false)
	step("forward", site("/links.html#section"), false)
}

// Right after a reload replaced the document, Chromium refuses browser-side
// page commands for a few milliseconds ("Not attached to an active
// page"), even once the new document has loaded: back, reload and
// screenshot straight after a reload still work. (Without the retry, each
// round failed more often than not.)
func TestCommandsRightAfterReload(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	for i := range 5 {
		cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/product.html?id=5")})
		cmdMutate(t, tab, protocol.Action{Type: "reload", Wait: i%2 == 0})
		if r := cmdRead(t, tab, protocol.Action{Type: "screenshot"}); len(r.Value) == 0 {
			t.Fatalf("round %d: screenshot after reload: %+v", i, r)
		}
		cmdMutate(t, tab, protocol.Action{Type: "reload"})
		cmdMutate(t, tab, protocol.Action{Type: "reload"})
		if r := cmdMutate(t, tab, protocol.Action{Type: "back"}); r.URL != site("/read.html") {
			t.Fatalf("round %d: back after reload arrived at %q", i, r.URL)
		}
	}
}

// At the ends of the history, back and forward fail with no_history and
// DR-013's messages, and produce no frame.
func TestHistoryEnds(t *testing.T) {
	tab := openTab(t)
	res := cmdFails(t, tab, protocol.Action{Type: "back"}, protocol.CodeNoHistory)
	if res.Error != "no previous page in history" {
		t.Fatalf("back in a new tab: %+v", res)
	}
	res = cmdFails(t, tab, protocol.Action{Type: "forward"}, protocol.CodeNoHistory)
	if res.Error != "no next page in history" {
		t.Fatalf("forward in a new tab: %+v", res)
	}
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html")})
	res = cmdFails(t, tab, protocol.Action{Type: "forward", Wait: true}, protocol.CodeNoHistory)
	if res.Error != "no next page in history" {
		t.Fatalf("forward after a navigate: %+v", res)
	}
	cmdExpect(t, tab, "document.title", `"Read page"`)
}

// A navigation that cannot commit within its deadline (the page's
// renderer is stuck in a loop) fails with DR-013's timeout and makes no
// frame; it used to answer ok with the old URL.
func TestNavigateFromAHungPage(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "setTimeout(() => { while (true) {} }, 0), 1"})
	// Anything that needs the renderer now waits out its deadline: the
	// loop has begun.
	send(t, tab.ID(), one(protocol.Action{Type: "wait-for", Selector: "#never", Timeout: protocol.Duration(200 * time.Millisecond)}))
	res := cmdFails(t, tab, protocol.Action{Type: "navigate", URL: site("/form.html"), Timeout: protocol.Duration(3 * time.Second)}, protocol.CodeTimeout)
	if !strings.HasPrefix(res.Error, "timeout waiting for page load: the navigation to "+site("/form.html")+" did not commit within 3s") {
		t.Fatalf("navigate from a hung page: %+v", res)
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "url", Timeout: protocol.Duration(time.Second)})); !r.OK || string(r.Results[0].Value) != `"`+site("/read.html")+`"` {
		t.Fatalf("url after: %+v", r)
	}
}

// A page that rewrites its URL (pushState) before it has loaded: the
// navigate frame goes out without content and says where the page moved,
// and the next frame, at the new URL, has the content.
func TestPushStateBeforeLoad(t *testing.T) {
	tab, frames, _ := tabAt(t, "/read.html")
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/slowpush.html")})
	f := frames.next()
	if f.Action != "navigate" || f.FullPage != nil || !strings.Contains(f.Note, "the page moved to "+site("/slowpush.html?view=list")) {
		t.Fatalf("navigate frame %+v", f)
	}
	if n := frames.next(); n.Source != protocol.SourcePage || n.URL != site("/slowpush.html?view=list") || n.FullPage == nil {
		t.Fatalf("pushState frame %+v", n)
	}
}

// A page that sends itself on as it loads (a script's location.replace, a
// meta refresh) is loaded by navigate without --wait like any other: the
// reply is ok, and the redirect lands as the page's own frame (or, when it
// committed before settling ended, in the navigate's). It is never taken
// for the navigate's own navigation failing to commit.
func TestNavigateToAPageThatRedirectsItself(t *testing.T) {
	tab, frames, _ := tabAt(t, "/read.html")
	for i, tc := range []struct{ path, want string }{
		{"/jsredirect.html", "/product.html?id=script"},
		{"/meta.html", "/product.html?id=meta"},
		{"/jsredirect.html?again", "/product.html?id=script"},
	} {
		if i > 0 {
			cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html"), Wait: true})
			frames.next()
		}
		r := cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site(tc.path)})
		if f := frames.until(r.Sequence); f.Action != "navigate" || f.URL != r.URL {
			t.Fatalf("navigate %s: reply %+v, frame %+v", tc.path, r, f)
		}
		if r.URL != site(tc.want) {
			f := frames.next()
			if f.Source != protocol.SourcePage || f.URL != site(tc.want) {
				t.Fatalf("navigate %s (reply at %s): the redirect's frame is %+v, want the page's at %s", tc.path, r.URL, f, tc.want)
			}
		}
		waitUntil(t, func() bool { return tab.Info().URL == site(tc.want) })
	}
	// The tab goes on normally, and at once.
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html"), Timeout: protocol.Duration(5 * time.Second)})
}

// A navigate whose server never answers fails at its deadline, says that
// the navigation did not commit (not that the page did not load), and
// leaves the tab where it was.
func TestNavigateThatNeverCommits(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	res := cmdFails(t, tab, protocol.Action{Type: "navigate", URL: site("/slow"), Timeout: protocol.Duration(time.Second)}, protocol.CodeTimeout)
	if !strings.Contains(res.Error, "did not commit within 1s") || !strings.Contains(res.Error, "/slow") || !strings.Contains(res.Error, "stays at "+site("/read.html")) {
		t.Fatalf("navigate to a server that never answers: %+v", res)
	}
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/product.html?id=1")})
}
