package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mafredri/cdp"
	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// Acceptance 1: navigate emits frame 2 with the URL and content; a click
// that changes nothing in the URL emits frame 3 without content; a click on
// a link emits exactly one frame, the click's, with the new URL and content.
func TestFramesOfNavigateAndClicks(t *testing.T) {
	tab := openTab(t)
	frames := watchFrames(t, testConn, protocol.DefaultSubjects.TabFrames(tab.ID()))

	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/"), BasedOnSequence: protocol.Based(1)}))
	if !res.OK || res.Sequence != 2 {
		t.Fatalf("navigate: %+v", res)
	}
	f2 := frames.until(2)
	if f2.URL != site("/") || f2.Action != "navigate" || f2.Source != protocol.SourceAgent || f2.FullPage == nil {
		t.Fatalf("frame 2: %+v", f2)
	}
	if !strings.Contains(*f2.FullPage, "Example shop") || f2.Title != "framebus example shop" {
		t.Fatalf("frame 2 content is not the loaded page: title %q, content %.80q", f2.Title, *f2.FullPage)
	}

	res = send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: "#count", BasedOnSequence: protocol.Based(2)}))
	if !res.OK || res.Sequence != 3 {
		t.Fatalf("click button: %+v", res)
	}
	f3 := frames.next()
	if f3.Sequence != 3 || f3.Action != "click" || f3.URL != f2.URL || f3.FullPage != nil {
		t.Fatalf("frame 3: %+v", f3)
	}

	res = send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: "#to-product", BasedOnSequence: protocol.Based(3)}))
	if !res.OK || res.Sequence != 4 || res.Results[0].URL != site("/product.html?id=123") {
		t.Fatalf("click link: %+v", res)
	}
	f4 := frames.next()
	if f4.Sequence != 4 || f4.Action != "click" || f4.Source != protocol.SourceAgent ||
		f4.URL != site("/product.html?id=123") || f4.FullPage == nil || !strings.Contains(*f4.FullPage, `id="buy"`) {
		t.Fatalf("frame 4: %+v", f4)
	}
	if f4.Title != "Product 123" {
		t.Fatalf("frame 4 title %q: content captured before the page ran its scripts", f4.Title)
	}
	// No extra "page" frame: the next plan based on 4 still runs, and the
	// frame after 4 is its own.
	res = send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "1", BasedOnSequence: protocol.Based(4)}))
	if !res.OK || res.Sequence != 5 {
		t.Fatalf("plan after link click: %+v", res)
	}
	if f5 := frames.next(); f5.Sequence != 5 || f5.Action != "eval" {
		t.Fatalf("frame after the link click's: %+v", f5)
	}
}

// A link click, many times over, never yields a second frame.
func TestLinkClickIsOneFrame(t *testing.T) {
	tab, frames, seq := tabAt(t, "/search.html?q=x")
	for i := 0; i < 10; i++ {
		for _, link := range []string{"#result2", "#back-to-search"} {
			res := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: link, BasedOnSequence: protocol.Based(seq)}))
			if !res.OK || res.Sequence != seq+1 {
				t.Fatalf("round %d click %s based on %d: %+v", i, link, seq, res)
			}
			seq++
			if f := frames.next(); f.Sequence != seq || f.Action != "click" || f.FullPage == nil {
				t.Fatalf("round %d: frame %+v", i, f)
			}
		}
	}
}

// Acceptance 2: the seed's example runs both actions; the same plan again
// is stale at index 0, expected 1, current 3.
func TestSeedExampleAndStaleReplay(t *testing.T) {
	tab := openTab(t)
	plan := []byte(`{"actions": [
		{"type": "navigate", "url": "` + site("/search.html?q=products") + `", "basedOnSequence": 1},
		{"type": "click", "element": "#result3", "basedOnSequence": 2}]}`)
	res := send(t, tab.ID(), plan)
	if !res.OK || res.Executed != 2 || res.Sequence != 3 || len(res.Results) != 2 {
		t.Fatalf("seed plan: %+v", res)
	}
	if got := res.Results[1].URL; got != site("/product.html?id=3") {
		t.Fatalf("click #result3 went to %q", got)
	}
	again := send(t, tab.ID(), plan)
	if again.OK || again.Executed != 0 || again.Code != protocol.CodeStaleFrame || again.Stopped == nil {
		t.Fatalf("replayed plan: %+v", again)
	}
	if s := again.Stopped; s.Index != 0 || *s.Expected != 1 || s.Current != 3 {
		t.Fatalf("stop = index %d expected %d current %d", s.Index, *s.Expected, s.Current)
	}
	if len(again.Results) != 0 {
		t.Fatalf("a stale plan ran something: %+v", again.Results)
	}
}

// Acceptance 3: a page that navigates itself produces a "page" frame, and
// a plan based on the frame before it is rejected.
func TestPageCausedFrameInvalidatesPlans(t *testing.T) {
	tab := openTab(t)
	frames := watchFrames(t, testConn, protocol.DefaultSubjects.TabFrames(tab.ID()))
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/timer.html"), BasedOnSequence: protocol.Based(1)}))
	if !res.OK || res.Sequence != 2 {
		t.Fatalf("navigate: %+v", res)
	}
	frames.until(2)
	f3 := frames.next()
	if f3.Sequence != 3 || f3.Source != protocol.SourcePage || f3.Action != protocol.FrameNavigation ||
		f3.URL != site("/product.html?id=timer") || f3.FullPage == nil {
		t.Fatalf("page frame: %+v", f3)
	}
	stale := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: "#buy", BasedOnSequence: protocol.Based(2)}))
	if stale.OK || stale.Code != protocol.CodeStaleFrame || stale.Stopped.Current != 3 {
		t.Fatalf("plan based on 2: %+v", stale)
	}
	if ok := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: "#buy", BasedOnSequence: protocol.Based(3)})); !ok.OK {
		t.Fatalf("plan based on 3: %+v", ok)
	}
}

// A pushState by the page is a page frame with the new URL and content.
func TestSameDocumentChangeByPage(t *testing.T) {
	tab, frames, _ := tabAt(t, "/")
	res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: `setTimeout(() => history.pushState({}, "", "/later"), 50), 1`}))
	if !res.OK {
		t.Fatal(res.Error)
	}
	if f := frames.next(); f.Sequence != 3 || f.Action != "eval" {
		t.Fatalf("eval frame %+v", f)
	}
	f := frames.next()
	if f.Sequence != 4 || f.Source != protocol.SourcePage || f.Action != protocol.FrameSameDocument || f.URL != site("/later") || f.FullPage == nil {
		t.Fatalf("pushState frame %+v", f)
	}
}

// A navigation the page started on its own and that is still on its way
// when a plan arrives lands first, as the page's frame: the plan based on
// the frame before it is stale, instead of running and taking the
// navigation for its own.
func TestPageNavigationInFlightLandsBeforeThePlan(t *testing.T) {
	tab, frames, _ := tabAt(t, "/read.html")
	// The page asks for /slow a while after its load; /slow answers after
	// 3s. A navigate settles for the timers its page sets, so on a loaded
	// machine it may wait for that one too and land on /slow itself:
	// then the page waits longer, until the navigate answers first.
	var r protocol.ActionResult
	for after := 50; ; after *= 4 {
		r = cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site(fmt.Sprintf("/delayednav.html?after=%d", after)), Wait: true})
		frames.until(r.Sequence)
		if r.URL != site("/slow") {
			break
		}
		if after > 10_000 {
			t.Fatalf("the navigate landed on /slow even with the page waiting %dms after its load: %+v", after, r)
		}
		t.Logf("the navigate settled on /slow (the page left %dms after its load): again, with the page waiting longer", after)
	}
	// Until the page has asked (data-leaving, set in the task that asks),
	// the navigation is not yet on its way, however late a loaded
	// machine runs the page's timer. When it asked before the wait-for
	// came, the wait-for itself lands the navigation first and then finds
	// /slow (a page without scripts): the plan below is stale either way.
	w := send(t, tab.ID(), one(protocol.Action{Type: "wait-for", Selector: "html[data-leaving], html:not(:has(script))", Timeout: protocol.Duration(10 * time.Second)}))
	if !w.OK {
		t.Fatalf("wait-for the page to ask for /slow: %+v", w)
	}
	res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "location.href", BasedOnSequence: protocol.Based(r.Sequence)}))
	if res.OK || res.Code != protocol.CodeStaleFrame || res.Stopped.Current != r.Sequence+1 || len(res.Results) != 0 {
		t.Fatalf("plan based on %d while the page navigated: %+v", r.Sequence, res)
	}
	if f := frames.next(); f.Sequence != r.Sequence+1 || f.Source != protocol.SourcePage || f.URL != site("/slow") {
		t.Fatalf("page frame %+v", f)
	}
}

// A change the page makes while the tab runs a read-only action (here a
// wait-for that times out) is still a page frame: the action made none,
// and the change is not lost with it; a plan based on the frame before it
// is stale.
func TestPageChangeDuringReadOnlyAction(t *testing.T) {
	tab, frames, _ := tabAt(t, "/")
	r := cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: `setTimeout(() => history.pushState({}, "", "/while-waiting"), 100), 1`})
	frames.next()
	res := send(t, tab.ID(), one(protocol.Action{Type: "wait-for", Selector: "#never", Timeout: protocol.Duration(500 * time.Millisecond)}))
	if res.OK || res.Code != protocol.CodeTimeout || res.Sequence != r.Sequence+1 {
		t.Fatalf("wait-for: %+v, want a timeout after which the sequence is %d", res, r.Sequence+1)
	}
	f := frames.next()
	if f.Sequence != r.Sequence+1 || f.Source != protocol.SourcePage || f.Action != protocol.FrameSameDocument || f.URL != site("/while-waiting") {
		t.Fatalf("page frame %+v", f)
	}
	if info := tab.Info(); info.URL != site("/while-waiting") || info.Sequence != f.Sequence {
		t.Fatalf("tab info %+v", info)
	}
	stale := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "1", BasedOnSequence: protocol.Based(r.Sequence)}))
	if stale.OK || stale.Code != protocol.CodeStaleFrame {
		t.Fatalf("plan based on the frame before the change: %+v", stale)
	}
}

// Acceptance 4: two agents racing with plans based on the same frame:
// in every round exactly one plan's first action runs.
func TestConcurrentAgentsOneWins(t *testing.T) {
	tab := openTab(t)
	seq := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/")})).Sequence
	agents := make([]*nats.Conn, 2) // each agent on a connection of its own
	for i := range agents {
		nc, err := testBus.Connect("agent-" + string(rune('A'+i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		agents[i] = nc
	}
	for round := 0; round < 100; round++ {
		var wg sync.WaitGroup
		results := make([]protocol.PlanResult, len(agents))
		errs := make([]error, len(agents))
		for agent, nc := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[agent], errs[agent] = request(nc, tab.ID(), protocol.Plan{Agent: string(rune('A' + agent)), Actions: []protocol.Action{
					{Type: "click", Selector: "#count", BasedOnSequence: protocol.Based(seq)},
					{Type: "eval", Expression: "document.getElementById('count').dataset.n", BasedOnSequence: protocol.Based(seq + 1)},
				}})
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		ran := 0
		for _, r := range results {
			switch {
			case r.Executed > 0 && r.OK:
				ran++
			case r.Code == protocol.CodeStaleFrame && r.Executed == 0 && r.Stopped.Index == 0:
			default:
				t.Fatalf("round %d: unexpected result %+v", round, r)
			}
		}
		if ran != 1 {
			t.Fatalf("round %d: %d plans ran their first action, want exactly 1: %+v", round, ran, results)
		}
		seq += 2
	}
	n := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "+document.getElementById('count').dataset.n"}))
	if string(n.Results[0].Value) != "100" {
		t.Fatalf("button clicked %s times, want 100", n.Results[0].Value)
	}
}

// Acceptance 6: malformed plans get bad_request naming the problem, and the
// tab keeps serving.
func TestMalformedPlans(t *testing.T) {
	tab := openTab(t)
	cases := []struct{ name, plan, mention string }{
		{"bad JSON", `{"action": {`, "invalid JSON"},
		{"unknown action type", `{"action": {"type": "fly"}}`, `unknown action type "fly"`},
		{"missing url", `{"action": {"type": "navigate"}}`, "url: missing"},
		{"negative sequence", `{"action": {"type": "eval", "expression": "1", "basedOnSequence": -3}}`, "basedOnSequence: -3"},
		{"empty actions", `{"actions": []}`, "actions: is empty"},
		{"not JSON at all", `navigate please`, "expected a JSON object"},
	}
	for _, tc := range cases {
		res := send(t, tab.ID(), []byte(tc.plan))
		if res.OK || res.Code != protocol.CodeBadRequest || !strings.Contains(res.Error, tc.mention) {
			t.Errorf("%s: got %+v, want bad_request mentioning %q", tc.name, res, tc.mention)
		}
	}
	if res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "6*7"})); !res.OK || string(res.Results[0].Value) != "42" {
		t.Fatalf("tab stopped serving after bad plans: %+v", res)
	}
}

func TestNavigationAndElementErrors(t *testing.T) {
	tab := openTab(t)
	frames := watchFrames(t, testConn, protocol.DefaultSubjects.TabFrames(tab.ID()))
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: closedPortURL(t)}))
	if res.OK || res.Code != protocol.CodeNavigationFailed || res.Error != "net::ERR_CONNECTION_REFUSED" {
		t.Fatalf("refused navigation: %+v", res)
	}
	// Chromium shows its error page: that is a new state, so one frame,
	// attributed to the failed navigate, and no page frame after it.
	if f := frames.until(2); f.Action != "navigate" || f.Source != protocol.SourceAgent {
		t.Fatalf("error page frame %+v", f)
	}
	seq := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/"), BasedOnSequence: protocol.Based(2)}))
	if !seq.OK || seq.Sequence != 3 {
		t.Fatalf("navigate after a failed one: %+v", seq)
	}
	cases := []struct {
		selector string
		code     protocol.Code
		message  string
	}{
		{".missing-button", protocol.CodeElementNotFound, "element not found: .missing-button"},
		{"#count[", protocol.CodeBadRequest, `invalid selector "#count["`},
		{`button[data-x="a'b\"c\\d` + "\n" + `"]`, protocol.CodeBadRequest, "invalid selector"},
		{`[onclick*="'); window.injected = 1; ('"]`, protocol.CodeElementNotFound, "element not found"},
	}
	for _, tc := range cases {
		res := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: tc.selector}))
		if res.OK || res.Code != tc.code || !strings.HasPrefix(res.Error, tc.message) {
			t.Errorf("click %q: %+v", tc.selector, res)
		}
		if len(res.Results) == 1 && res.Results[0].Sequence != 0 {
			t.Errorf("failed click %q produced frame %d", tc.selector, res.Results[0].Sequence)
		}
	}
	if v := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "typeof window.injected"})); string(v.Results[0].Value) != `"undefined"` {
		t.Fatalf("a selector ran as script: %s", v.Results[0].Value)
	}
	// A selector with quotes, backslashes and a newline that does match.
	send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: `document.getElementById('count').setAttribute('data-q', "a'b\"c\\d\ne")`}))
	if res := send(t, tab.ID(), one(protocol.Action{Type: "click", Selector: `[data-q="a'b\"c\\d\a e"]`})); !res.OK {
		t.Fatalf("escaped selector: %+v", res)
	}
}

// closedPortURL is a loopback URL nothing listens on.
func closedPortURL(t *testing.T) string {
	return "http://" + bustest.FreeAddr(t) + "/"
}

// crashPage crashes the tab's renderer from a DevTools connection of its
// own, as nothing the tab does would.
func crashPage(t *testing.T, tab *Tab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	conn, err := testBrowser.conn.DialPage(ctx, tab.ID())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); conn.Close() })
	// Page.crash never answers (the renderer is gone), so do not wait for it.
	go func() { _ = cdp.NewClient(conn).Page.Crash(ctx) }()
}

// A renderer crash the agent did not cause is a page frame, and the tab
// recovers with the next navigate.
func TestCrashIsAPageFrame(t *testing.T) {
	tab, frames, _ := tabAt(t, "/")
	crashPage(t, tab)
	f := frames.next()
	if f.Sequence != 3 || f.Action != protocol.FrameCrash || f.Source != protocol.SourcePage {
		t.Fatalf("crash frame %+v", f)
	}
	// Actions that need the renderer fail at once, and make no frame.
	for _, a := range []protocol.Action{{Type: "eval", Expression: "1"}, {Type: "click", Selector: "#x"}, {Type: "title"}} {
		res := send(t, tab.ID(), one(a))
		if res.OK || res.Code != protocol.CodePageCrashed || res.Sequence != 3 {
			t.Fatalf("%s on a crashed page: %+v", a.Type, res)
		}
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "url"})); !r.OK {
		t.Fatalf("url on a crashed page: %+v", r)
	}
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/search.html"), BasedOnSequence: protocol.Based(3)}))
	if !res.OK || res.Sequence != 4 {
		t.Fatalf("navigate after crash: %+v", res)
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "6 * 7"})); !r.OK || string(r.Results[0].Value) != "42" {
		t.Fatalf("eval after the navigate: %+v", r)
	}
}

// A crash while an action waits on the page ends the action at once with
// page_crashed (it used to wait out its deadline), and the crash is the
// page's frame, not the action's.
func TestCrashDuringAnAction(t *testing.T) {
	tab, frames, seq := tabAt(t, "/")
	done := make(chan protocol.PlanResult, 1)
	go func() {
		res, _ := request(testConn, tab.ID(), one(protocol.Action{Type: "eval", Expression: "new Promise(r => setTimeout(r, 60000))", Timeout: protocol.Duration(90 * time.Second)}))
		done <- res
	}()
	crashPage(t, tab)
	var res protocol.PlanResult
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the eval on a crashed page did not end")
	}
	if res.OK || res.Code != protocol.CodePageCrashed {
		t.Fatalf("eval cut short by a crash: %+v", res)
	}
	if f := frames.next(); f.Sequence != seq+1 || f.Source != protocol.SourcePage || f.Action != protocol.FrameCrash {
		t.Fatalf("crash frame %+v", f)
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "reload", Wait: true})); !r.OK {
		t.Fatalf("reload after the crash: %+v", r)
	}
}

// Plans queued behind a busy tab that stops are answered (run, or
// tab_closed), never left to time out.
func TestStopAnswersQueuedPlans(t *testing.T) {
	ctx := context.Background()
	page, err := testBrowser.OpenPage(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	defer testBrowser.ClosePage(ctx, page)
	tab, err := StartTab(ctx, TabOptions{ID: page.TargetID(), Page: page, Conn: testConn, Subjects: protocol.DefaultSubjects})
	if err != nil {
		t.Fatal(err)
	}
	frames := watchFrames(t, testConn, protocol.DefaultSubjects.TabFrames(tab.ID()))
	busy := make(chan *nats.Msg, 1)
	// The eval's frame goes out when the wait-for starts: then the tab is busy.
	data, _ := json.Marshal(protocol.Plan{Actions: []protocol.Action{
		{Type: "eval", Expression: "1"},
		{Type: "wait-for", Selector: "#never", Timeout: protocol.Duration(2 * time.Second)},
	}})
	go func() {
		m, _ := testConn.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 30*time.Second)
		busy <- m
	}()
	frames.until(2)
	var queued []*nats.Msg
	replies := make(chan *nats.Msg, 5)
	for i := 0; i < 5; i++ {
		go func() {
			m, err := testConn.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), []byte(`{"action":{"type":"eval","expression":"1"}}`), 30*time.Second)
			if err != nil {
				t.Errorf("queued plan: %v", err)
			}
			replies <- m
		}()
	}
	waitUntil(t, func() bool { return len(tab.inbox) == 5 })
	tab.Stop()
	for i := 0; i < 5; i++ {
		m := <-replies
		if m == nil {
			continue
		}
		res, _ := protocol.DecodePlanResult(m.Data)
		if !res.OK && res.Code != protocol.CodeTabClosed {
			t.Errorf("queued plan answered %+v", res)
		}
		queued = append(queued, m)
	}
	if m := <-busy; m == nil {
		t.Fatal("the running plan got no answer")
	}
	if len(queued) != 5 {
		t.Fatalf("%d of 5 queued plans answered", len(queued))
	}
}

// waitUntil polls cond with a deadline.
func waitUntil(t testing.TB, cond func() bool) {
	t.Helper()
	within := testscale.D(20 * time.Second)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An action blocked in one tab (a wait-for) does not hold up another tab:
// the other answers while the first still waits.
func TestBlockedTabDoesNotBlockAnother(t *testing.T) {
	blocked, _, _ := tabAt(t, "/read.html")
	other, _, _ := tabAt(t, "/read.html")
	done := make(chan protocol.PlanResult, 1)
	go func() {
		res, _ := request(testConn, blocked.ID(), one(protocol.Action{Type: "wait-for", Selector: "#late", Timeout: protocol.Duration(30 * time.Second)}))
		done <- res
	}()
	for i := range 5 {
		if r := send(t, other.ID(), one(protocol.Action{Type: "eval", Expression: "6 * 7"})); !r.OK || string(r.Results[0].Value) != "42" {
			t.Fatalf("the other tab, eval %d: %+v", i, r)
		}
	}
	select {
	case res := <-done:
		t.Fatalf("the wait-for ended before its element appeared: %+v", res)
	default:
	}
	// End the wait from outside the actor, on the page itself.
	if _, err := blocked.page.Eval(context.Background(), "document.body.append(Object.assign(document.createElement('p'), {id: 'late'})), 1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if res := <-done; !res.OK {
		t.Fatalf("wait-for: %+v", res)
	}
}

// A script far longer than a websocket frame's default buffer (4 KiB)
// goes through whole; one longer than a page command carries (1 MiB) is
// a bad request, and the tab goes on (the websocket would have refused
// it, and every command after it).
func TestLongScript(t *testing.T) {
	tab := openTab(t)
	long := strings.Repeat("x", 200_000)
	res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "'" + long + "'.length"}))
	if !res.OK || string(res.Results[0].Value) != "200000" {
		t.Fatalf("eval of a 200 KB script: %+v", res.Error)
	}
	for _, a := range []protocol.Action{
		{Type: "eval", Expression: "'" + strings.Repeat("x", 2<<20) + "'.length"},
		{Type: "text", Selector: "#" + strings.Repeat("a", 3<<20)},
	} {
		res := send(t, tab.ID(), one(a))
		if res.OK || res.Code != protocol.CodeBadRequest || !strings.Contains(res.Error, "a page command carries at most") {
			t.Fatalf("%s of over 1 MiB: %.300s", a.Type, res.Error)
		}
		if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "6 * 7"})); !r.OK {
			t.Fatalf("the tab after a %s too long: %+v", a.Type, r)
		}
	}
}

// A tab closed under a running action answers it, and every plan queued
// behind it, with tab_closed: never a timeout, nor a reply made from what
// the tab knew before it closed.
func TestClosedTabAnswersTabClosed(t *testing.T) {
	ctx := context.Background()
	page, err := testBrowser.OpenPage(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := StartTab(ctx, TabOptions{ID: page.TargetID(), Page: page, Conn: testConn, Subjects: protocol.DefaultSubjects})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Stop()
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html"), Wait: true})
	replies := make(chan protocol.PlanResult, 3)
	ask := func(plan protocol.Plan) {
		data, _ := json.Marshal(plan)
		m, err := testConn.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 30*time.Second)
		if err != nil {
			t.Errorf("%s: %v", data, err)
			replies <- protocol.PlanResult{}
			return
		}
		res, _ := protocol.DecodePlanResult(m.Data)
		replies <- res
	}
	// The click waits for its navigation, to a server that never
	// answers: the tab is closed once the request is there.
	requested := make(chan struct{}, 1)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requested <- struct{}{}
		<-r.Context().Done()
	}))
	defer hang.Close()
	go ask(protocol.Plan{Actions: []protocol.Action{
		{Type: "eval", Expression: `document.body.innerHTML = '<a id=hang href="` + hang.URL + `/">never answers</a>'`},
		{Type: "click", Selector: "#hang", Timeout: protocol.Duration(20 * time.Second)},
	}})
	<-requested
	go ask(one(protocol.Action{Type: "url"}))
	go ask(one(protocol.Action{Type: "eval", Expression: "1"}))
	waitUntil(t, func() bool { return len(tab.inbox) == 2 })
	if err := testBrowser.ClosePage(ctx, page); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if res := <-replies; res.OK || res.Code != protocol.CodeTabClosed {
			t.Errorf("a plan of a tab closed under it: %+v", res)
		}
	}
}
