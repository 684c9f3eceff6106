package viewer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors"
	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/viewer"
)

// The viewer is tested as a person uses it: its page in a real headless
// Chromium of its own (a second browser, driven with framebus's driver),
// a real node with its bus and browser, agents on the bus.

// viewerBrowser shows the viewers' pages.
var viewerBrowser *actors.Browser

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	var err error
	viewerBrowser, err = actors.StartBrowser(ctx, cdpdriver.LaunchOptions{Headless: true, WindowWidth: 1280, WindowHeight: 800}, zerolog.Nop())
	if err != nil {
		fmt.Fprintln(os.Stderr, "launch chromium:", err)
		return 1
	}
	defer viewerBrowser.Close()
	return m.Run()
}

// world is a node, its site, an agent and an observer on its bus.
type world struct {
	node     *actors.Node
	site     string
	agent    *busclient.Client
	observer *busclient.Client
	operator *busclient.Client // a person's: the viewer's
	tab      string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	site := httptest.NewServer(http.FileServer(http.Dir("../testdata/site")))
	t.Cleanup(site.Close)
	node, err := actors.StartNode(ctx, actors.NodeOptions{Launch: cdpdriver.LaunchOptions{Headless: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	w := &world{node: node, site: site.URL, tab: node.Tabs()[0].Tab}
	for _, role := range []string{protocol.RoleAgent, protocol.RoleObserver, protocol.RoleOperator} {
		creds := bustest.AddUser(t, node.Bus(), role)
		bc, err := busclient.Connect(ctx, busclient.Options{URL: node.Bus().ClientURL(), Credentials: &creds, Prefix: node.Subjects().Prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(bc.Close)
		switch role {
		case protocol.RoleAgent:
			w.agent = bc
		case protocol.RoleObserver:
			w.observer = bc
		default:
			w.operator = bc
		}
	}
	return w
}

// plan sends a plan as the agent.
func (w *world) plan(t *testing.T, plan protocol.Plan) protocol.PlanResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	res, err := w.agent.Plan(ctx, w.tab, plan)
	if err != nil && res.Tab == "" {
		t.Fatalf("plan %+v: %v", plan, err)
	}
	return res
}

// cutListener is the viewer's listener, which a test can cut: every
// connection closed, and new ones refused until it is mended.
type cutListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func (l *cutListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.cut {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.conns = append(l.conns, c)
		l.mu.Unlock()
		return c, nil
	}
}

func (l *cutListener) sever() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = true
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

func (l *cutListener) mend() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = false
}

// page is a viewer's page in the viewer browser.
type page struct {
	t *testing.T
	p *cdpdriver.Page
}

// startViewer serves a viewer for bc and opens its page.
func startViewer(t *testing.T, bc *busclient.Client, by string) (*page, *cutListener, *viewer.Server) {
	t.Helper()
	srv, err := viewer.New(viewer.Options{Client: bc, Token: viewer.NewToken(), By: by})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &cutListener{Listener: ln}
	go srv.Serve(cl)
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	p, err := viewerBrowser.OpenPage(ctx, srv.URL(ln))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = viewerBrowser.ClosePage(context.Background(), p) })
	pg := &page{t: t, p: p}
	pg.until(`document.body.dataset.conn === "live"`)
	return pg, cl, srv
}

// eval evaluates expr in the viewer's page.
func (pg *page) eval(expr string, out any) {
	pg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	v, err := pg.p.Eval(ctx, expr, testscale.D(10*time.Second))
	if err != nil {
		pg.t.Fatalf("in the viewer, %s: %v", expr, err)
	}
	if out != nil {
		if err := json.Unmarshal(v, out); err != nil {
			pg.t.Fatalf("in the viewer, %s = %s: %v", expr, v, err)
		}
	}
}

// until waits for expr to be true in the viewer's page, and says how
// long that took.
func (pg *page) until(expr string) time.Duration {
	pg.t.Helper()
	start := time.Now()
	deadline := start.Add(testscale.D(20 * time.Second))
	for {
		// An error is "not yet": the page may still be loading, with no
		// body to read.
		ok, err := pg.try("!!(" + expr + ")")
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			var body string
			pg.eval(`document.visibilityState + " " + JSON.stringify(document.body && document.body.dataset) + "\n" + (document.body && document.body.innerText)`, &body)
			pg.t.Fatalf("in the viewer, never %s (last error: %v); the page shows:\n%s", expr, err, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// try evaluates a boolean expr in the viewer's page.
func (pg *page) try(expr string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	v, err := pg.p.Eval(ctx, expr, testscale.D(10*time.Second))
	if err != nil {
		return false, err
	}
	var ok bool
	if err := json.Unmarshal(v, &ok); err != nil {
		return false, fmt.Errorf("%s = %s: %w", expr, v, err)
	}
	return ok, nil
}

// click clicks an element of the viewer's page as a person does.
func (pg *page) click(selector string) {
	pg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	if err := pg.p.Click(ctx, selector, cdpdriver.ClickOptions{}); err != nil {
		pg.t.Fatalf("click %s in the viewer: %v", selector, err)
	}
}

// keys types keys into the viewer's page, each down and up.
func (pg *page) keys(keys ...string) {
	pg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	for _, k := range keys {
		for _, ev := range []string{"down", "up"} {
			if err := pg.p.PersonKey(ctx, ev, k, 0); err != nil {
				pg.t.Fatalf("key %s: %v", k, err)
			}
		}
	}
}

// clickScreen clicks the viewer's picture of the tab where the tab's
// page has x, y (CSS pixels of the tab's viewport).
func (pg *page) clickScreen(x, y float64) {
	pg.t.Helper()
	var at struct{ X, Y float64 }
	pg.eval(fmt.Sprintf(`(() => { const r = document.getElementById("screen").getBoundingClientRect(), m = window.framebusScreen.meta;
		return {X: r.left + %g / m.deviceWidth * r.width, Y: r.top + %g / m.deviceHeight * r.height}; })()`, x, y), &at)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	for _, ev := range []string{"move", "down", "up"} {
		if err := pg.p.PersonMouse(ctx, ev, at.X, at.Y, "left", 1, 0, 0, 0); err != nil {
			pg.t.Fatalf("mouse %s on the picture: %v", ev, err)
		}
	}
}

// centre is where an element's centre is in the agent's tab.
func (w *world) centre(t *testing.T, selector string) (x, y float64) {
	t.Helper()
	res := w.plan(t, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: `(() => { const r = document.querySelector(` + fmt.Sprintf("%q", selector) + `).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`}})
	var xy [2]float64
	if err := json.Unmarshal(res.Results[0].Value, &xy); err != nil {
		t.Fatalf("centre of %s: %+v", selector, res)
	}
	return xy[0], xy[1]
}

// A person watches agents: a plan's frame shows up in the timeline, a
// stale plan is marked with the frame it expected and the one it found,
// and after the viewer's connection is cut and mended it has every frame
// made meanwhile, from the history, none missing.
func TestViewerShowsAgentsLive(t *testing.T) {
	w := newWorld(t)
	pg, cl, _ := startViewer(t, w.operator, "watcher")
	pg.until(fmt.Sprintf(`document.querySelector('#tabs [data-tab=%q]')`, w.tab))

	res := w.plan(t, protocol.Plan{Agent: "bot", Action: &protocol.Action{Type: "navigate", URL: w.site + "/read.html"}})
	took := pg.until(fmt.Sprintf(`document.querySelector('#timeline [data-seq="%d"]')`, res.Sequence))
	t.Logf("a plan's frame was in the viewer %s after its answer", took)

	stale := w.plan(t, protocol.Plan{ID: "stale-one", Agent: "racer", Action: &protocol.Action{Type: "click", Selector: "h1", BasedOnSequence: protocol.Based(1)}})
	if stale.Code != protocol.CodeStaleFrame {
		t.Fatalf("stale plan: %+v", stale)
	}
	pg.until(fmt.Sprintf(`(() => { const r = document.querySelector('#results [data-plan="stale-one"]'); return r && r.classList.contains("stale") && r.textContent.includes("planned on frame 1, the tab was at %d"); })()`, res.Sequence))

	// Cut the viewer off; frames are made meanwhile.
	cl.sever()
	pg.until(`document.body.dataset.conn === "reconnecting"`)
	var last int64
	for i := range 3 {
		last = w.plan(t, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: fmt.Sprintf("document.title = 'cut %d'", i)}}).Sequence
	}
	cl.mend()
	pg.until(`document.body.dataset.conn === "live"`)
	pg.until(fmt.Sprintf(`document.querySelectorAll('#timeline [data-seq]').length >= %d`, last))
	var seqs []int64
	pg.eval(`[...document.querySelectorAll('#timeline [data-seq]')].map(e => +e.dataset.seq)`, &seqs)
	for i, s := range seqs {
		if s != last-int64(i) {
			t.Fatalf("the timeline after the cut: %v (want every frame from %d down to 1)", seqs, last)
		}
	}
	if len(seqs) != int(last) {
		t.Fatalf("the timeline after the cut: %v", seqs)
	}
}

// Every tab in sight in the list is live too: its entry shows its page as
// a thumbnail, which follows the page's changes, while the selected tab
// has the big picture.
func TestViewerShowsEveryTabLive(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	other, err := w.agent.NewTab(ctx, "", w.site+"/read.html")
	if err != nil {
		t.Fatal(err)
	}
	pg, _, _ := startViewer(t, w.operator, "watcher")
	pg.until(fmt.Sprintf(`document.querySelector('#tabs [data-tab=%q]') && document.querySelector('#tabs [data-tab=%q]')`, w.tab, other.Tab))
	pg.click(fmt.Sprintf(`#tabs button[data-tab=%q]`, w.tab))
	thumb := fmt.Sprintf(`document.querySelector('#tabs img.thumb[data-tab=%q]')`, other.Tab)
	pg.until(thumb + `.classList.contains("shown") && ` + thumb + `.naturalWidth > 0`)
	var first string
	pg.eval(thumb+`.src`, &first)
	colour := func(c string) {
		t.Helper()
		if res, err := w.agent.Plan(ctx, other.Tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "document.body.style.background = '" + c + "'"}}); err != nil || !res.OK {
			t.Fatalf("change the other tab: %+v %v", res, err)
		}
	}
	colour("rgb(200, 0, 0)")
	pg.until(fmt.Sprintf(`%s.src !== %q`, thumb, first))
	// The thumbnail is the page's: its top left is the colour now.
	pg.until(thumb + `.complete && (() => { const i = ` + thumb + `, c = document.createElement("canvas"); c.width = i.naturalWidth; c.height = i.naturalHeight;
		const g = c.getContext("2d"); g.drawImage(i, 0, 0); const d = g.getImageData(4, 4, 1, 1).data; return d[0] > 150 && d[1] < 60 && d[2] < 60; })()`)
	// The big picture shows only the selected tab, before and after.
	pg.until(`window.framebusScreen`)
	var selected string
	pg.eval(`window.framebusScreen.meta.tab`, &selected)
	if selected != w.tab {
		t.Fatalf("the big picture is of tab %s, want the selected %s", selected, w.tab)
	}
}

// An agent hands a login to a person: the viewer shows the handoff; the
// person takes it, clicks and types into the streamed picture (real
// input, forwarded to the tab), hands back with the button, and the
// agent's plan goes on from the person's frame. Meanwhile another
// agent's change gets user_control, and the viewer marks it.
func TestHandoffThroughTheViewer(t *testing.T) {
	w := newWorld(t)
	nav := w.plan(t, protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: w.site + "/login.html", Wait: true}})
	userX, userY := w.centre(t, "#user")
	seq := nav.Sequence + 1 // the eval's frame
	pg, _, _ := startViewer(t, w.operator, "alice")
	pg.until(fmt.Sprintf(`document.querySelector('#timeline [data-seq="%d"]')`, seq))

	done := make(chan protocol.PlanResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
		defer cancel()
		res, _ := w.agent.Plan(ctx, w.tab, protocol.Plan{ID: "login", Agent: "bot", Actions: []protocol.Action{
			{Type: "handoff", Message: "Please sign in, then press Done", BasedOnSequence: protocol.Based(seq)},
			{Type: "click", Selector: "#continue", BasedOnSequence: protocol.Based(seq + 1)},
			{Type: "text", Selector: "#done"},
		}})
		done <- res
	}()
	pg.until(`document.querySelector('#attention .handoff') && document.querySelector('#attention').textContent.includes("Please sign in, then press Done")`)
	pg.click("#attention .handoff button")
	pg.until(`document.getElementById("screenbox").classList.contains("control") && !document.getElementById("handback").disabled`)
	pg.until(`window.framebusScreen`)

	refused := w.plan(t, protocol.Plan{ID: "rival", Agent: "rival", Action: &protocol.Action{Type: "click", Selector: "#signin"}})
	if refused.Code != protocol.CodeUserControl {
		t.Fatalf("a change during the handoff: %+v", refused)
	}
	pg.until(`document.querySelector('#results [data-plan="rival"][data-code="user_control"]')`)

	pg.clickScreen(userX, userY)
	pg.keys("a", "l", "i", "c", "e", "Tab", "s", "e", "c", "r", "e", "t", "Enter")
	pg.until(`document.getElementById("taburl").textContent.includes("/account.html?user=alice")`)
	pg.click("#handback")
	res := <-done
	if !res.OK || string(res.Results[2].Value) != `"continued"` {
		t.Fatalf("the agent's plan after the person: %+v", res)
	}
	var handed struct{ Ended, By string }
	_ = json.Unmarshal(res.Results[0].Value, &handed)
	if handed.Ended != "handback" || handed.By != "alice" {
		t.Fatalf("handoff result: %s", res.Results[0].Value)
	}
	// The person's frames are the user's, in the timeline too.
	pg.until(`document.querySelector('#timeline .frame.src-user.act-navigation') && document.querySelector('#timeline .frame.act-handback')`)
}

// A handoff whose until is a URL ends by itself when the person gets
// there (here through the viewer's address bar).
func TestHandoffUntilThroughTheViewer(t *testing.T) {
	w := newWorld(t)
	nav := w.plan(t, protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: w.site + "/login.html"}})
	pg, _, _ := startViewer(t, w.operator, "bob")
	done := make(chan protocol.PlanResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
		defer cancel()
		res, _ := w.agent.Plan(ctx, w.tab, protocol.Plan{Actions: []protocol.Action{
			{Type: "handoff", Message: "Go to your account", Until: map[string]string{"url": "*/account.html*"}, BasedOnSequence: protocol.Based(nav.Sequence)},
		}})
		done <- res
	}()
	pg.until(`document.querySelector('#attention .handoff')`)
	pg.click("#attention .handoff button")
	pg.until(`!document.getElementById("address").disabled && document.getElementById("takeover").disabled`)
	pg.click("#address")
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	if err := pg.p.InsertText(ctx, w.site+"/account.html?user=bob"); err != nil {
		t.Fatal(err)
	}
	pg.keys("Enter")
	var res protocol.PlanResult
	select {
	case res = <-done:
	case <-time.After(testscale.D(20 * time.Second)):
		var body string
		pg.eval(`document.getElementById("address").value + " | " + document.getElementById("message").textContent + " | " + document.activeElement.id`, &body)
		t.Fatalf("the handoff did not end; the viewer: %s", body)
	}
	if !res.OK || !strings.Contains(string(res.Results[0].Value), `"ended":"until"`) {
		t.Fatalf("until: %+v", res)
	}
	pg.until(`document.querySelector('#attention .handoff') === null && document.getElementById("handback").disabled`)
}

// An observer's viewer watches, but its take-over is refused by the bus,
// and says so; nothing changed hands.
func TestObserverCannotTakeOver(t *testing.T) {
	w := newWorld(t)
	pg, _, _ := startViewer(t, w.observer, "eve")
	pg.until(fmt.Sprintf(`document.querySelector('#tabs [data-tab=%q]')`, w.tab))
	pg.until(`!document.getElementById("takeover").disabled`)
	pg.click("#takeover")
	pg.until(`document.getElementById("message").textContent.includes("permission denied")`)
	if c := w.node.Tabs()[0].Control; c != nil {
		t.Fatalf("an observer took the tab: %+v", c)
	}
	// It still sees the page's pictures: watching is reading.
	pg.until(`window.framebusScreen`)
}

// The viewer answers only its own host name, only with its token (from
// the URL once, then its cookie), and takes no post from another origin.
func TestViewerRefusesStrangers(t *testing.T) {
	w := newWorld(t)
	srv, err := viewer.New(viewer.Options{Client: w.operator, Token: viewer.NewToken()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go srv.Serve(ln)
	base := "http://" + ln.Addr().String()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(method, url string, header map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(`{"tab":"`+w.tab+`","op":"takeover"}`))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if h := header["Host"]; h != "" {
			req.Host = h
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := status("GET", base+"/", nil); s != http.StatusUnauthorized {
		t.Fatalf("no token: %d", s)
	}
	if s := status("GET", base+"/?token=wrong", nil); s != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", s)
	}
	url := srv.URL(ln)
	token := url[strings.Index(url, "token=")+len("token="):]
	if s := status("GET", url, map[string]string{"Host": "evil.example:80"}); s != http.StatusMisdirectedRequest {
		t.Fatalf("another host name: %d", s)
	}
	cookie := "framebus_view=" + token
	if s := status("GET", base+"/events", nil); s != http.StatusUnauthorized {
		t.Fatalf("events without the cookie: %d", s)
	}
	if s := status("POST", base+"/api/control", map[string]string{"Cookie": cookie, "Content-Type": "application/json", "Origin": "http://evil.example"}); s != http.StatusForbidden {
		t.Fatalf("a post from another origin: %d", s)
	}
	if s := status("POST", base+"/api/control", map[string]string{"Cookie": cookie, "Content-Type": "text/plain"}); s != http.StatusUnsupportedMediaType {
		t.Fatalf("a form post: %d", s)
	}
	if c := w.node.Tabs()[0].Control; c != nil {
		t.Fatalf("a stranger took the tab: %+v", c)
	}
	if s := status("POST", base+"/api/control", map[string]string{"Cookie": cookie, "Content-Type": "application/json", "Origin": base}); s != http.StatusOK {
		t.Fatalf("the viewer's own post: %d", s)
	}
}

// What comes from the bus is shown as text: a page whose title is markup,
// and an agent's handoff message with markup, run nothing in the viewer.
func TestViewerShowsMarkupAsText(t *testing.T) {
	w := newWorld(t)
	pg, _, _ := startViewer(t, w.operator, "carol")
	nav := w.plan(t, protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: w.site + "/xsstitle.html", Wait: true}})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		defer cancel()
		_, _ = w.agent.Plan(ctx, w.tab, protocol.Plan{Agent: `<b onmouseover=alert(1)>bot</b>`, Actions: []protocol.Action{
			{Type: "handoff", Message: `<img src=x onerror="window.pwned=2">`, Until: map[string]string{"timeout": testscale.D(time.Minute).String()}, BasedOnSequence: protocol.Based(nav.Sequence)},
		}})
	}()
	pg.until(`document.querySelector('#attention .handoff') && document.getElementById("attention").textContent.includes('<img src=x onerror="window.pwned=2">')`)
	pg.until(`document.getElementById("tabs").textContent.includes("<img src=x")`)
	var pwned any
	pg.eval(`[window.pwned, document.querySelectorAll("#attention img, #tabs img:not(.thumb), #tabtitle img").length]`, &pwned)
	if fmt.Sprint(pwned) != "[<nil> 0]" {
		t.Fatalf("markup from the bus ran or rendered in the viewer: %v", pwned)
	}
}

// A tab with a long history: the viewer shows its latest frames, and
// reads back further when asked.
func TestViewerReadsBackTheHistory(t *testing.T) {
	w := newWorld(t)
	var actions []protocol.Action
	for i := range 250 {
		actions = append(actions, protocol.Action{Type: "eval", Expression: fmt.Sprintf("document.title = 't%d'", i)})
	}
	last := w.plan(t, protocol.Plan{Actions: actions}).Sequence
	pg, _, _ := startViewer(t, w.operator, "gus")
	pg.until(fmt.Sprintf(`document.querySelector('#timeline [data-seq="%d"]') && document.querySelector('#timeline [data-seq="%d"]')`, last, last-199))
	var n int
	pg.eval(`document.querySelectorAll('#timeline [data-seq]').length`, &n)
	if n != 200 {
		t.Fatalf("the timeline shows %d frames, want the latest 200", n)
	}
	pg.click("#older")
	pg.until(fmt.Sprintf(`document.querySelectorAll('#timeline [data-seq]').length === %d`, last))
}

// An agent's question shows up top; the person answers with a choice's
// button, or in the answer box, and the agent gets it.
func TestAnswerThroughTheViewer(t *testing.T) {
	w := newWorld(t)
	pg, _, _ := startViewer(t, w.operator, "hana")
	ask := func(a protocol.Action) <-chan protocol.PlanResult {
		done := make(chan protocol.PlanResult, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
			defer cancel()
			res, _ := w.agent.Plan(ctx, w.tab, protocol.Plan{Agent: "bot", Action: &a})
			done <- res
		}()
		return done
	}
	done := ask(protocol.Action{Type: "ask", Question: "Which size?", Choices: []string{"S", "M"}})
	pg.until(`[...document.querySelectorAll('#attention .question .choice')].some(b => b.textContent === "M")`)
	pg.eval(`[...document.querySelectorAll('#attention .question .choice')].find(b => b.textContent === "M").id = "pick"`, nil)
	pg.click("#pick")
	if res := <-done; !res.OK || !strings.Contains(string(res.Results[0].Value), `"answer":"M","by":"hana"`) {
		t.Fatalf("ask with choices: %+v", res)
	}
	pg.until(`document.querySelector('#attention .question') === null`)
	done = ask(protocol.Action{Type: "ask", Question: "Your name?"})
	pg.until(`document.querySelector('#attention .question input.answer')`)
	pg.click("#attention .question input.answer")
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	if err := pg.p.InsertText(ctx, "Hana"); err != nil {
		t.Fatal(err)
	}
	pg.keys("Enter")
	if res := <-done; !res.OK || !strings.Contains(string(res.Results[0].Value), `"answer":"Hana"`) {
		t.Fatalf("ask: %+v", res)
	}
}
