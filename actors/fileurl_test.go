package actors

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors/files"
	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// With the file scheme allowed, file: URLs lead only under the file roots,
// however a plan or a page reaches them: from the attacker's side, a
// navigation to /etc/passwd (no roots, or outside them), a file URL with
// a host, and a page under a root that links, iframes or fetches files
// outside it (/etc/passwd, a relative ../ link, a symlink in the root)
// read nothing: the tab never shows them and the browser refused each
// request. A file in the root loads.
func TestFileURLsAreABoundary(t *testing.T) {
	base := testdir.Enterable(t) // the browser's account reads the files
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.html")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(secret, "<title>secret</title>SECRET-7f3a")
	write(filepath.Join(root, "other.html"), "<title>other</title>inside")
	if err := os.Symlink(secret, filepath.Join(root, "link.html")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "page.html"), `<title>page</title>
<a id=passwd href="file:///etc/passwd">p</a>
<a id=rel href="../outside/secret.html">r</a>
<a id=link href="link.html">l</a>
<a id=host href="file://evil.test/share/x">h</a>
<a id=in href="other.html">in</a>`)

	// No roots: the file scheme allowed, but no file is.
	noRoots, err := whitelist.New([]string{"*"}, []string{"http", "https", "file"})
	if err != nil {
		t.Fatal(err)
	}
	bare := openTab(t, func(o *TabOptions) { o.Allow = noRoots.Check })
	for _, u := range []string{"file:///etc/passwd", "file:/etc/passwd", "file:etc/passwd", "file://" + root + "/page.html"} {
		if r := send(t, bare.ID(), one(protocol.Action{Type: "navigate", URL: u})); r.OK || r.Code != protocol.CodePermissionDenied || !strings.Contains(r.Error, "files.roots") {
			t.Errorf("navigate %s without roots: %+v", u, r)
		}
	}

	roots, err := files.NewRoots([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	node, err := StartNode(ctx, NodeOptions{
		Launch:    cdpdriver.LaunchOptions{Headless: true},
		Whitelist: noRoots,
		FileRoots: roots,
		Logger:    zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	nc, err := node.Bus().Connect("file-url-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tab := node.Tabs()[0].Tab
	blocked := make(chan *nats.Msg, 256)
	sub, err := nc.ChanSubscribe(node.Subjects().TabEvents("*", "blocked"), blocked)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	run := func(a protocol.Action) protocol.PlanResult {
		t.Helper()
		data, _ := json.Marshal(protocol.Plan{Action: &a})
		msg, err := nc.Request(node.Subjects().TabPlan(tab), data, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		res, err := protocol.DecodePlanResult(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// refused waits for the browser to report a refused request for url.
	refused := func(url string) bool {
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m := <-blocked:
				var ev blockedEvent
				json.Unmarshal(m.Data, &ev)
				if ev.URL == url {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	leaked := func() bool {
		t.Helper()
		r := run(protocol.Action{Type: "text"})
		u := run(protocol.Action{Type: "url"})
		var text, url string
		json.Unmarshal(r.Results[0].Value, &text)
		json.Unmarshal(u.Results[0].Value, &url)
		return strings.Contains(text, "SECRET-7f3a") || strings.Contains(text, "root:") || !strings.HasSuffix(url, "/page.html")
	}
	page := "file://" + root + "/page.html"

	through := 0
	// count adds what got through: a request the browser did not refuse,
	// a tab that left the page or shows the file.
	count := func(what, url string) {
		t.Helper()
		if !refused(url) {
			through++
			t.Errorf("%s: the browser did not refuse %s", what, url)
		}
		if leaked() {
			through++
			t.Errorf("%s: the tab left the page or shows the file", what)
		}
	}
	for _, u := range []string{"file:///etc/passwd", "file:/etc/passwd", "file:etc/passwd", "file://" + root + "/../outside/secret.html", "file://" + root + "/link.html", "file://evil.test/share/x", "file://" + outside + "/secret.html"} {
		if r := run(protocol.Action{Type: "navigate", URL: page, Wait: true}); !r.OK {
			t.Fatalf("navigate to the page in the root: %+v", r)
		}
		if r := run(protocol.Action{Type: "navigate", URL: u}); r.OK || r.Code != protocol.CodePermissionDenied {
			through++
			t.Errorf("navigate %s: %+v, want permission_denied", u, r)
		}
		if leaked() {
			through++
			t.Errorf("navigate %s: the tab left the page or shows the file", u)
		}
	}
	for _, c := range []struct{ sel, url string }{
		{"#passwd", "file:///etc/passwd"},
		{"#rel", "file://" + outside + "/secret.html"},
		{"#link", "file://" + root + "/link.html"},
		{"#host", "file://evil.test/share/x"},
	} {
		if r := run(protocol.Action{Type: "navigate", URL: page, Wait: true}); !r.OK {
			t.Fatalf("navigate to the page in the root: %+v", r)
		}
		run(protocol.Action{Type: "click", Selector: c.sel})
		count("click "+c.sel, c.url)
	}
	// The page's own requests: fetch, a script's navigation (iframes:
	// TestFileURLFramesAreRefused).
	if r := run(protocol.Action{Type: "navigate", URL: page, Wait: true}); !r.OK {
		t.Fatalf("navigate to the page in the root: %+v", r)
	}
	for _, c := range []struct{ js, url string }{
		{`fetch('link.html').then(() => 1, () => 0)`, "file://" + root + "/link.html"},
		{`(location.href = 'file:///etc/passwd', 1)`, "file:///etc/passwd"},
	} {
		run(protocol.Action{Type: "eval", Expression: c.js})
		count(c.js, c.url)
	}
	if through != 0 {
		t.Fatalf("%d ways to a file outside the roots got through", through)
	}
	// Inside the root, links work.
	if r := run(protocol.Action{Type: "click", Selector: "#in"}); !r.OK || !strings.HasSuffix(r.Results[0].URL, "/other.html") {
		t.Fatalf("click a link inside the root: %+v", r)
	}
}

// A page under a root that frames files outside it: every such request
// reaches the browser's filter and is refused there (counted at the
// filter, the boundary itself: how many it let through), and the framed
// file never loads (it would call the test's server); a page in the root
// frames as usual.
func TestFileURLFramesAreRefused(t *testing.T) {
	base := testdir.Enterable(t) // the browser's account reads the files
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var leaks, controls atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("from") == "control" {
			controls.Add(1)
		} else {
			leaks.Add(1)
		}
	}))
	defer server.Close()
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.html")
	write(secret, `SECRET<img src="`+server.URL+`/?from=secret">`)
	write(filepath.Join(root, "control.html"), `<img src="`+server.URL+`/?from=control">`)
	write(filepath.Join(root, "page.html"), "<title>page</title>")
	if err := os.Symlink(secret, filepath.Join(root, "link.html")); err != nil {
		t.Fatal(err)
	}
	roots, err := files.NewRoots([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	wl, err := whitelist.New([]string{"*", "127.0.0.1"}, // the beacon server is on loopback
		[]string{"http", "https", "file"})
	if err != nil {
		t.Fatal(err)
	}
	wl = wl.WithFileRoots(roots)

	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	b, err := StartBrowser(ctx, cdpdriver.LaunchOptions{Headless: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	decided := make(chan [2]string, 1024) // url, "allowed" or "refused"
	filter := func(u string) error {
		err := wl.Check(u)
		verdict := "allowed"
		if err != nil {
			verdict = "refused"
		}
		decided <- [2]string{u, verdict}
		return err
	}
	if err := b.FilterRequests(ctx, filter); err != nil {
		t.Fatal(err)
	}
	page, err := b.OpenPage(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := StartTab(ctx, TabOptions{ID: page.TargetID(), Page: page, Conn: testConn, Subjects: protocol.DefaultSubjects, Allow: wl.Check})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Stop()
	verdict := func(u string) string {
		deadline := time.After(10 * time.Second)
		for {
			select {
			case d := <-decided:
				if d[0] == u {
					return d[1]
				}
			case <-deadline:
				return "never asked"
			}
		}
	}
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: "file://" + root + "/page.html", Wait: true})
	for len(decided) > 0 {
		<-decided
	}
	through := 0
	for _, c := range []struct{ src, url string }{
		{"file:///etc/passwd", "file:///etc/passwd"},
		{"../outside/secret.html", "file://" + secret},
		{"link.html", "file://" + root + "/link.html"},
		{"file://evil.test/x", "file://evil.test/x"},
	} {
		cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: `(() => { const f = document.createElement('iframe'); f.src = '` + c.src + `'; document.body.append(f); return 1; })()`})
		if v := verdict(c.url); v != "refused" {
			through++
			t.Errorf("iframe %s: %s", c.src, v)
		}
	}
	// The control loads, its image with it (the load event waits for it).
	cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: `new Promise(r => { const f = document.createElement('iframe'); f.onload = () => r(1); f.src = 'control.html'; document.body.append(f); })`})
	if controls.Load() != 1 {
		t.Fatalf("the control frame in the root did not load (%d)", controls.Load())
	}
	through += int(leaks.Load())
	if through != 0 {
		t.Fatalf("%d frames of files outside the roots got through (%d loaded)", through, leaks.Load())
	}
}
