package cdpdriver

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/internal/testscale"
)

// update rewrites the golden files of TestSnapshotGolden:
//
//	go test ./cdpdriver -run TestSnapshotGolden -update
var update = flag.Bool("update", false, "rewrite the snapshot golden files in testdata/snapshot")

// snapshotTestFixtures is the folder of the fixture pages (shared with the
// other packages' tests, so at the module root).
const snapshotTestFixtures = "../testdata/snapshot"

// snapshotTestPages lists the fixture pages, sorted.
func snapshotTestPages(t testing.TB) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(snapshotTestFixtures, "*.html"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no fixture pages in %s: %v", snapshotTestFixtures, err)
	}
	for i, p := range pages {
		pages[i] = strings.TrimSuffix(filepath.Base(p), ".html")
	}
	return pages
}

// snapshotTestServer serves the fixture pages on loopback, and
// /rows.html?n=N, a generated table of N rows, each with a link, a button,
// an input and text.
func snapshotTestServer(t testing.TB) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(snapshotTestFixtures)))
	mux.HandleFunc("/rows.html", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 0 {
			http.Error(w, "bad n", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(snapshotTestRowsPage(n))
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(srv.Close)
	return srv
}

// snapshotTestRowsPage is a page with a table of n rows; each row has a
// link, a button, a text input and text.
func snapshotTestRowsPage(n int) []byte {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Rows</title></head><body>
<h1>Orders</h1>
<table><caption>Orders</caption>
<thead><tr><th>Order</th><th>Customer</th><th>Action</th><th>Note</th></tr></thead>
<tbody>
`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `<tr><td><a href="/orders/%d">Order %d</a></td><td>Customer number %d placed this order</td>`+
			`<td><button type="button" data-testid="cancel-%d">Cancel</button></td>`+
			`<td><input name="note-%d" aria-label="Note for order %d"></td></tr>
`, i, i, i, i, i, i)
	}
	b.WriteString("</tbody></table></body></html>\n")
	return []byte(b.String())
}

// snapshotTestBrowser connects to the shared browser; the connection is
// closed when the test ends.
func snapshotTestBrowser(t testing.TB) *Browser {
	t.Helper()
	proc := launchTestBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	b, err := proc.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// snapshotTestOpen opens url in a new tab and waits for its load event;
// the tab is closed when the test ends.
func snapshotTestOpen(ctx context.Context, t testing.TB, b *Browser, url string) *Page {
	t.Helper()
	id, err := b.NewTarget(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Second))
		defer cancel()
		_ = b.CloseTarget(ctx, id)
	})
	p, err := b.ConnectPage(ctx, id, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	snapshotTestLoad(ctx, t, p, url)
	return p
}

// snapshotTestLoad loads url in p and waits for its load event.
func snapshotTestLoad(ctx context.Context, t testing.TB, p *Page, url string) {
	t.Helper()
	if _, err := p.Navigate(ctx, url); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(url)
	expr := "location.href === " + string(want) + ` && document.readyState === "complete"`
	launchTestWaitFor(t, 30*time.Second, "load "+url, func() error {
		v, err := p.Eval(ctx, expr, 5*time.Second)
		if err != nil {
			return err
		}
		if string(v) != "true" {
			return fmt.Errorf("not loaded yet")
		}
		return nil
	})
}

// siteTestOpen serves testdata/site on loopback and opens its page in a
// new tab of the shared browser, under a context of d: the context, the
// page and the site's URL.
func siteTestOpen(t testing.TB, page string, d time.Duration) (context.Context, *Page, string) {
	t.Helper()
	b := snapshotTestBrowser(t)
	site := httptest.NewServer(http.FileServer(http.Dir("../testdata/site")))
	t.Cleanup(site.Close)
	ctx := snapshotTestCtx(t, d)
	return ctx, snapshotTestOpen(ctx, t, b, site.URL+page), site.URL
}

func snapshotTestCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestSnapshotGolden compares the text form of each fixture's snapshot with
// testdata/snapshot/<page>.golden (-update rewrites them). A fresh tab
// numbers its refs from e1 in document order, so the output is stable.
func TestSnapshotGolden(t *testing.T) {
	b := snapshotTestBrowser(t)
	srv := snapshotTestServer(t)
	for _, page := range snapshotTestPages(t) {
		t.Run(page, func(t *testing.T) {
			_, _, s := snapshotTestFixture(t, b, srv, page)
			got := s.Text()
			golden := filepath.Join("testdata", "snapshot", page+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("snapshot of %s.html differs from %s (run with -update to accept):\n%s", page, golden, snapshotTestDiff(string(want), got))
			}
		})
	}
}

// snapshotTestDiff shows the lines that differ between want and got, with
// their line numbers.
func snapshotTestDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want: %s\n  got:  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// parseSnapshotWire decodes every field of the line format snapshot.js
// answers in, escapes included, and rejects a malformed tree.
func TestSnapshotWire(t *testing.T) {
	wire := `{"title":"T","url":"http://x/","interactive":2,"count":4,"truncated":true,"nextRef":3}` + "\n" +
		"0|list|nItems~" +
		"1|checkbox|nA\tB\\\\C\\p\\w|re1|cm|q|d|f|i\n1|aL|tT|mN~" +
		"1|button|re2|p1|e0|s1|x|v|hH~" +
		"0|heading|nH|l3"
	s, next, err := parseSnapshotWire(wire)
	if err != nil || next != 3 {
		t.Fatalf("next ref %d, err %v", next, err)
	}
	js, _ := json.Marshal(s)
	want := `{"url":"http://x/","title":"T","nodes":[{"role":"list","name":"Items","children":[` +
		`{"role":"checkbox","name":"A\tB\\C|~","ref":"e1","checked":"mixed","disabled":true,"required":true,"focused":true,"attrs":{"id":"\n1","ariaLabel":"L","testId":"T","name":"N"}},` +
		`{"role":"button","ref":"e2","pressed":true,"expanded":false,"selected":true,"editable":true,"value":"","attrs":{"href":"H"}}]},` +
		`{"role":"heading","name":"H","level":3}],"interactive":2,"count":4,"truncated":true}`
	if string(js) != want {
		t.Fatalf("parsed\n%s\nwant\n%s", js, want)
	}
	empty, _, err := parseSnapshotWire(`{"title":"","url":"about:blank","interactive":0,"count":0,"truncated":false}`)
	if err != nil || empty.Nodes == nil || len(empty.Nodes) != 0 {
		t.Fatalf("empty snapshot: %+v, %v", empty, err)
	}
	for _, bad := range []string{"", "{}\n1|button", "{}\nx|button", "{}\n0|button|", "{}\n0|list~2|button", "{}\n-1|button", "{}\n0|list~~0|button", "{}\n0|list~1|"} {
		if _, _, err := parseSnapshotWire(bad); err == nil {
			t.Errorf("parseSnapshotWire(%q) succeeded", bad)
		}
	}
	// A head that undercounts (the locators and values are allocated by
	// its counts) still gets every node whole.
	under, _, err := parseSnapshotWire(`{"interactive":0}` + "\n0|textbox|re1|va|iA~0|textbox|re2|vb|iB")
	if err != nil || len(under.Nodes) != 2 || *under.Nodes[0].Value != "a" || under.Nodes[1].Attrs.ID != "B" || *under.Nodes[1].Value != "b" {
		t.Fatalf("undercounted head: %+v, %v", under, err)
	}
}

// The text form quotes names as strconv.Quote does, with or without the
// fast path for plain ASCII.
func TestSnapshotQuoting(t *testing.T) {
	for _, v := range []string{"", "plain Name 1", `say "hi"`, `back\slash`, "tab\there", "new\nline", "del\x7f", "café ✓", "\u2028", "\xff bad utf-8"} {
		var b strings.Builder
		writeQuoted(&b, v)
		if b.String() != strconv.Quote(v) {
			t.Errorf("writeQuoted(%q) = %s, want %s", v, b.String(), strconv.Quote(v))
		}
	}
}

// Names and locators holding the wire's separators and escape (| ~ \)
// and line breaks come through whole from real Chromium.
func TestSnapshotSeparatorsInValues(t *testing.T) {
	b := snapshotTestBrowser(t)
	srv := snapshotTestServer(t)
	ctx := snapshotTestCtx(t, 60*time.Second)
	p := snapshotTestOpen(ctx, t, b, srv.URL+"/rows.html?n=0")
	const name = `a|b~c\d\pe|~`
	var ok bool
	if err := p.evalValue(ctx, "add", `(() => { const b = document.createElement("button"); b.textContent = `+strconv.Quote(name)+`; b.id = "x|y~z\\"; document.body.append(b); return true; })()`, &ok); err != nil {
		t.Fatal(err)
	}
	s, err := p.Snapshot(ctx, SnapshotOptions{InteractiveOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var found *SnapshotNode
	var visit func([]SnapshotNode)
	visit = func(ns []SnapshotNode) {
		for i := range ns {
			if ns[i].Role == "button" {
				found = &ns[i]
			}
			visit(ns[i].Children)
		}
	}
	visit(s.Nodes)
	if found == nil || found.Name != name || found.Attrs == nil || found.Attrs.ID != `x|y~z\` {
		t.Fatalf("button: %+v %+v", found, found.Attrs)
	}
}

// snapshotTestFixture opens a fixture page in a fresh tab and snapshots it.
func snapshotTestFixture(t *testing.T, b *Browser, srv *httptest.Server, page string) (context.Context, *Page, Snapshot) {
	t.Helper()
	ctx := snapshotTestCtx(t, 60*time.Second)
	p := snapshotTestOpen(ctx, t, b, srv.URL+"/"+page+".html")
	s, err := p.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, p, s
}

// framebus's page functions run in an isolated world: a page that poisons
// built-ins (WeakRef, Map, querySelector) and defines framebus's globals
// first still gets its own snapshot taken, and a ref or a selector clicks
// the element it names, never the decoy the page offers.
func TestSnapshotHostilePageCannotRebindRefs(t *testing.T) {
	ctx, p, _ := siteTestOpen(t, "/hostile.html", 60*time.Second)
	clicked := func() string {
		t.Helper()
		var who string
		if err := p.evalValue(ctx, "clicked", "window.clicked || ''", &who); err != nil {
			t.Fatal(err)
		}
		return who
	}
	for range 2 { // installing, then installed
		s, err := p.Snapshot(ctx, SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Title != "Hostile" || s.Interactive != 2 {
			t.Fatalf("snapshot %q with %d interactive elements, want the page's: Hostile with 2", s.Title, s.Interactive)
		}
		ref := ""
		for _, line := range strings.Split(s.Text(), "\n") {
			if strings.Contains(line, `button "Target"`) {
				_, after, _ := strings.Cut(line, "[ref=")
				ref, _, _ = strings.Cut(after, "]")
			}
		}
		if ref == "" {
			t.Fatalf("no ref for the target button in\n%s", s.Text())
		}
		if err := p.Click(ctx, ref, ClickOptions{}); err != nil {
			t.Fatal(err)
		}
		if who := clicked(); who != "target" {
			t.Fatalf("click %s clicked %q, want target", ref, who)
		}
		if err := p.evalValue(ctx, "reset", "window.clicked = ''", new(string)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Click(ctx, "#target", ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	if who := clicked(); who != "target" {
		t.Fatalf("click #target clicked %q", who)
	}
	var token string
	if err := p.evalValue(ctx, "token", "String(window.__framebusSnapshot.token)", &token); err != nil || token != "guess" {
		t.Fatalf("the page sees a snapshot function with token %q (%v); want only its own", token, err)
	}
}

// A ref in a same-origin frame's document is clicked where the frame
// shows it in the top viewport, not at its place inside the frame (which
// on the top page is some other element); a frame covered on the top
// page is refused like a covered element.
func TestClickRefsInFrames(t *testing.T) {
	b := snapshotTestBrowser(t)
	srv := snapshotTestServer(t)
	ctx, p, _ := snapshotTestFixture(t, b, srv, "iframe")
	var ok bool
	setup := `(() => {
		document.body.style.paddingTop = "120px"; // the frames' own points are on other elements now
		document.addEventListener("click", () => window.topClicked = true);
		const child = document.querySelector("iframe").contentDocument;
		child.getElementById("child-button").addEventListener("click", () => window.childClicked = true);
		return true;
	})()`
	if err := p.evalValue(ctx, "setup", setup, &ok); err != nil || !ok {
		t.Fatalf("setup: %v", err)
	}
	if _, err := p.Snapshot(ctx, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Click(ctx, "e2", ClickOptions{}); err != nil { // Child button
		t.Fatal(err)
	}
	if err := p.Click(ctx, "e3", ClickOptions{}); err != nil { // Child checkbox
		t.Fatal(err)
	}
	var got [3]bool
	read := `[window.childClicked === true, window.topClicked === true,
		document.querySelector("iframe").contentDocument.querySelector("[name=child-check]").checked]`
	if err := p.evalValue(ctx, "read", read, &got); err != nil || got != [3]bool{true, false, false} {
		t.Fatalf("[child button clicked, top page clicked, child checkbox checked] = %v (%v), want [true false false]", got, err)
	}

	cover := `(() => {
		const d = document.createElement("div");
		d.id = "veil";
		d.style.cssText = "position:fixed;left:0;top:0;width:100vw;height:100vh";
		document.body.append(d);
		return true;
	})()`
	if err := p.evalValue(ctx, "cover", cover, &ok); err != nil {
		t.Fatal(err)
	}
	var covered *ElementCoveredError
	if err := p.Click(ctx, "e4", ClickOptions{}); !errors.As(err, &covered) || !strings.Contains(err.Error(), "div#veil") {
		t.Fatalf("click on a field in a covered frame: %v, want it covered by div#veil", err)
	}

	// The frame goes: its elements keep their document, which has no
	// window now; their refs are stale, not "not visible".
	if err := p.evalValue(ctx, "remove", `document.querySelector("iframe").remove(), true`, &ok); err != nil {
		t.Fatal(err)
	}
	var stale *StaleRefError
	if err := p.Click(ctx, "e2", ClickOptions{}); !errors.As(err, &stale) {
		t.Fatalf("click on a ref in a removed frame: %v, want a stale ref", err)
	}
}

// A heading whose content mixes text and links is named by all of it, as
// Chromium names it (issue 19): in the full snapshot, with its text and
// links below it, and with --interactive, where only the links remain
// below it and the text lives on in the name.
func TestSnapshotHeadingWithLinksIsNamed(t *testing.T) {
	b := snapshotTestBrowser(t)
	srv := snapshotTestServer(t)
	ctx, p, full := snapshotTestFixture(t, b, srv, "docs")
	inter, err := p.Snapshot(ctx, SnapshotOptions{InteractiveOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		s    Snapshot
		want string
	}{
		{"full", full, `- heading "Types — int, float" [level=2]:
    - text: Types —
    - link "int" [ref=e15] [href="#int"]
    - text: ,
    - link "float" [ref=e16] [href="#float"]
`},
		{"interactive", inter, `- heading "Types — int, float" [level=2]:
  - link "int" [ref=e15] [href="#int"]
  - link "float" [ref=e16] [href="#float"]
`},
	} {
		if text := c.s.Text(); !strings.Contains(text, c.want) {
			t.Errorf("%s snapshot lacks\n%s\nin:\n%s", c.name, c.want, text)
		}
	}
}
