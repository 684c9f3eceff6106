package actors

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// The lifecycle on the bus: status, newtab, pages, closetab, close and
// launch; status and close are answered while a tab is stuck in a long
// wait-for; plans to a closed browser's tabs say how to launch it.
func TestLifecycleOnTheBus(t *testing.T) {
	t.Parallel() // its own node and browser
	node := startTestNode(t, NodeOptions{Prefix: "fblife"})
	subj := node.Subjects()
	nc := bustest.Connect(t, node.Bus(), protocol.RoleAgent)
	defer nc.Close()
	ask := func(op string, req any, out any) {
		t.Helper()
		data, _ := json.Marshal(req)
		msg, err := nc.Request(subj.Browser(protocol.DefaultProfile, op), data, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if err := json.Unmarshal(msg.Data, out); err != nil {
			t.Fatalf("%s: %s: %v", op, msg.Data, err)
		}
	}
	status := func() protocol.ProfileStatus {
		t.Helper()
		var st protocol.StatusReply
		ask(protocol.OpStatus, nil, &st)
		if !st.OK || len(st.Profiles) != 1 || st.Profiles[0].Name != "default" {
			t.Fatalf("status %+v", st)
		}
		return st.Profiles[0]
	}
	// A launched browser has no DevTools endpoint to show: its pipe is
	// the node's alone.
	if st := status(); !st.Running || st.PageCount != 1 || st.Endpoint != "" || st.Driver != "managed" {
		t.Fatalf("status of a running node: %+v", st)
	}
	first := node.Tabs()[0].Tab

	var opened protocol.TabReply
	ask(protocol.OpNewTab, protocol.NewTabRequest{URL: site("/")}, &opened)
	if !opened.OK || opened.Tab.Tab == "" {
		t.Fatalf("newtab: %+v", opened)
	}
	var pages protocol.TabList
	ask(protocol.OpPages, nil, &pages)
	if len(pages.Tabs) != 2 {
		t.Fatalf("pages: %+v", pages)
	}
	var closed protocol.TabReply
	ask(protocol.OpCloseTab, protocol.CloseTabRequest{Tab: opened.Tab.Tab}, &closed)
	if !closed.OK || closed.Tab.Tab != opened.Tab.Tab || len(node.Tabs()) != 1 {
		t.Fatalf("closetab: %+v, %d tabs left", closed, len(node.Tabs()))
	}
	// A tab opened at a URL loads it as a navigate does: its frames have
	// the page's HTTP status, and a page that cannot be loaded fails with
	// navigation_failed, naming the tab, which is open at the error page.
	run := func(tab string, a protocol.Action) protocol.PlanResult {
		t.Helper()
		data, _ := json.Marshal(one(a))
		msg, err := nc.Request(subj.TabPlan(tab), data, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", a.Type, err)
		}
		res, _ := protocol.DecodePlanResult(msg.Data)
		return res
	}
	var notFound protocol.TabReply
	ask(protocol.OpNewTab, protocol.NewTabRequest{URL: site("/status?code=404")}, &notFound)
	if !notFound.OK || notFound.Tab.URL != site("/status?code=404") {
		t.Fatalf("newtab at a 404 page: %+v", notFound)
	}
	if res := run(notFound.Tab.Tab, protocol.Action{Type: "eval", Expression: "1"}); !res.OK || res.Results[0].Status != 404 {
		t.Fatalf("the frames of a tab opened at a 404 page: %+v", res)
	}
	var dead protocol.TabReply
	ask(protocol.OpNewTab, protocol.NewTabRequest{URL: closedPortURL(t)}, &dead)
	if dead.OK || dead.Code != protocol.CodeNavigationFailed || dead.Tab.Tab == "" || !strings.Contains(dead.Error, "tab "+dead.Tab.Tab+" opened, but") || !strings.Contains(dead.Error, "net::ERR_CONNECTION_REFUSED") {
		t.Fatalf("newtab at a page that cannot be loaded: %+v", dead)
	}
	if res := run(dead.Tab.Tab, protocol.Action{Type: "navigate", URL: site("/")}); !res.OK {
		t.Fatalf("navigate in a tab whose first page failed: %+v", res)
	}
	for _, id := range []string{notFound.Tab.Tab, dead.Tab.Tab} {
		var closed protocol.TabReply
		if ask(protocol.OpCloseTab, protocol.CloseTabRequest{Tab: id}, &closed); !closed.OK {
			t.Fatalf("closetab %s: %+v", id, closed)
		}
	}
	var bad map[string]any
	ask(protocol.OpCloseTab, protocol.CloseTabRequest{Tab: "NOSUCHTAB"}, &bad)
	if bad["code"] != "tab_not_found" {
		t.Fatalf("closetab of an unknown tab: %v", bad)
	}
	// A URL Chromium cannot open is a bad request, read as navigate
	// reads it (it used to leave a tab that never answered, for a minute).
	for _, u := range []string{"http://127.0.0.1:99999/", "/relative"} {
		var refused map[string]any
		ask(protocol.OpNewTab, protocol.NewTabRequest{URL: u}, &refused)
		if refused["code"] != "bad_request" {
			t.Fatalf("newtab %s: %v", u, refused)
		}
	}
	// Requests are read as strictly as plans, and refused in plain words.
	for _, tc := range []struct {
		op        string
		body, say string
	}{
		{protocol.OpNewTab, `{"url": 5}`, "newtab.url: must be a string"},
		{protocol.OpNewTab, `{"URL": "/x", "background": true}`, `"background" is not a field`},
		{protocol.OpCloseTab, `{"tab": ["x"]}`, "closetab.tab: must be a string"},
	} {
		var refused map[string]any
		ask(tc.op, json.RawMessage(tc.body), &refused)
		if msg, _ := refused["error"].(string); refused["code"] != "bad_request" || !strings.Contains(msg, tc.say) {
			t.Fatalf("%s %s: %v, want bad_request saying %q", tc.op, tc.body, refused, tc.say)
		}
	}
	if len(node.Tabs()) != 1 {
		t.Fatalf("refused newtabs left tabs: %+v", node.Tabs())
	}

	// A tab stuck in a 30s wait-for does not hold up status or close.
	stuck := make(chan *nats.Msg, 1)
	go func() {
		data, _ := json.Marshal(one(protocol.Action{Type: "wait-for", Selector: "#never", Timeout: protocol.Duration(30 * time.Second)}))
		m, _ := nc.Request(subj.TabPlan(first), data, time.Minute)
		stuck <- m
	}()
	waitUntil(t, func() bool { return len(node.Tab(first).inbox) == 0 }) // it took the plan
	if st := status(); !st.Running {
		t.Fatalf("status while a tab is stuck: %+v", st)
	}
	var afterClose protocol.StatusReply
	ask(protocol.OpClose, nil, &afterClose)
	if afterClose.Profiles[0].Running || afterClose.Profiles[0].PageCount != 0 {
		t.Fatalf("close: %+v", afterClose)
	}
	select {
	case m := <-stuck:
		if m == nil {
			t.Fatal("the stuck plan got no answer")
		}
		if res, _ := protocol.DecodePlanResult(m.Data); res.OK {
			t.Fatalf("the stuck plan succeeded after close: %s", m.Data)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stuck plan was not answered after close")
	}

	// The closed browser's tabs answer with how to launch it.
	data, _ := json.Marshal(one(protocol.Action{Type: "eval", Expression: "1"}))
	m, err := nc.Request(subj.TabPlan(first), data, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := protocol.DecodePlanResult(m.Data); res.Code != protocol.CodeBrowserNotRunning || !strings.Contains(res.Error, "framebus launch") {
		t.Fatalf("plan to a closed browser: %s", m.Data)
	}

	var launched protocol.StatusReply
	ask(protocol.OpLaunch, nil, &launched)
	st := launched.Profiles[0]
	if !st.Running || st.PageCount != 1 {
		t.Fatalf("launch: %+v", launched)
	}
	browser := node.Profile(protocol.DefaultProfile).Browser()
	var again protocol.StatusReply
	ask(protocol.OpLaunch, nil, &again)
	if node.Profile(protocol.DefaultProfile).Browser() != browser {
		t.Fatalf("a second launch started another browser: %+v then %+v", st, again.Profiles[0])
	}
	tab := node.Tabs()[0].Tab
	data, _ = json.Marshal(one(protocol.Action{Type: "eval", Expression: "40 + 2"}))
	if m, err = nc.Request(subj.TabPlan(tab), data, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if res, _ := protocol.DecodePlanResult(m.Data); !res.OK || string(res.Results[0].Value) != "42" {
		t.Fatalf("plan after launch: %s", m.Data)
	}

	// A browser that dies on its own: the node runs on without it.
	if err := syscall.Kill(node.Browser().Process().Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return !status().Running })
	if m, err = nc.Request(subj.TabPlan(tab), data, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if res, _ := protocol.DecodePlanResult(m.Data); res.Code != protocol.CodeBrowserNotRunning {
		t.Fatalf("plan after the browser died: %s", m.Data)
	}
	ask(protocol.OpLaunch, nil, &launched)
	if !launched.Profiles[0].Running {
		t.Fatalf("launch after a crash: %+v", launched)
	}
}

// A persistent profile keeps cookies and localStorage across close and
// launch; a second node on the same profile gets "profile in use".
func TestProfilePersistsAndIsExclusive(t *testing.T) {
	t.Parallel() // its own nodes and profile directory
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	dir := testdir.Enterable(t)
	node := startTestNode(t, NodeOptions{Launch: cdpdriver.LaunchOptions{UserDataDir: dir}, Prefix: "fbprofile"})
	nc, err := node.Bus().Connect("profile-test")
	if err != nil {
		t.Fatal(err)
	}
	eval := func(expr string) string {
		t.Helper()
		plan := protocol.Plan{Actions: []protocol.Action{
			{Type: "navigate", URL: site("/"), Wait: true},
			{Type: "eval", Expression: expr},
		}}
		data, _ := json.Marshal(plan)
		m, err := nc.Request(node.Subjects().TabPlan(node.Tabs()[0].Tab), data, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		res, _ := protocol.DecodePlanResult(m.Data)
		if !res.OK {
			t.Fatalf("%s: %s", expr, m.Data)
		}
		return string(res.Results[1].Value)
	}
	eval("document.cookie = 'kept=yes; max-age=3600; path=/', localStorage.setItem('note', 'remembered'), 1")

	_, err = StartNode(ctx, NodeOptions{Launch: cdpdriver.LaunchOptions{Headless: true, UserDataDir: dir}, Prefix: "fbprofile2"})
	if !errors.Is(err, cdpdriver.ErrProfileInUse) {
		t.Fatalf("a second node on the same profile: %v, want profile in use", err)
	}

	if err := node.CloseBrowser(); err != nil {
		t.Fatal(err)
	}
	if err := node.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	if got := eval("[document.cookie, localStorage.getItem('note')].join('|')"); got != `"kept=yes|remembered"` {
		t.Fatalf("after close and launch: %s", got)
	}
}
