package actors

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A node with three profiles: the default one, a named managed one
// launched on request in its own directory, and an attach profile on a
// Chromium the test runs itself (ADR-006's "chrome" profile): its open tab
// is adopted, launch is refused, close only disconnects and connect
// reconnects.
func TestProfilesManagedAndAttached(t *testing.T) {
	t.Parallel() // its own node and browsers
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	outside, err := cdpdriver.Launch(ctx, cdpdriver.LaunchOptions{Headless: true, DebuggingPort: true, Logger: zerolog.Nop()}) // a user's own Chrome
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()

	dir := testdir.Enterable(t)
	node := startTestNode(t, NodeOptions{Prefix: "fbprofiles", ProfileDir: dir, Profiles: []ProfileOptions{
		{Name: "work"},
		{Name: "chrome", Attach: outside.DevToolsURL()},
	}})
	subj := node.Subjects()
	c := newBusClient(t, node)
	status := func() map[string]protocol.ProfileStatus {
		t.Helper()
		var st protocol.StatusReply
		c.ask(subj.BrowserStatus(), nil, &st)
		out := map[string]protocol.ProfileStatus{}
		for _, p := range st.Profiles {
			out[p.Name] = p
		}
		if !st.OK || len(out) != 3 {
			t.Fatalf("status: %+v", st)
		}
		return out
	}
	lifecycle := func(profile, op string) []byte {
		t.Helper()
		var r map[string]any
		return c.ask(subj.Profile(profile, op), nil, &r)
	}

	st := status()
	if d, w, ch := st["default"], st["work"], st["chrome"]; !d.Running || w.Running || w.Dir != filepath.Join(dir, "work") ||
		!ch.Running || ch.Driver != protocol.DriverAttach || ch.PageCount != 1 || ch.Endpoint != outside.BrowserWebSocketURL() {
		t.Fatalf("profiles at start: %+v", st)
	}

	// The attached browser's own tab has an actor and takes plans.
	var pages protocol.TabList
	c.ask(subj.Profile("chrome", protocol.OpPages), nil, &pages)
	if len(pages.Tabs) != 1 || pages.Tabs[0].Profile != "chrome" {
		t.Fatalf("chrome pages: %+v", pages)
	}
	chromeTab := pages.Tabs[0].Tab
	if res := c.plan(subj, chromeTab, protocol.Plan{Actions: []protocol.Action{
		{Type: "navigate", URL: site("/"), Wait: true}, {Type: "eval", Expression: "document.title"},
	}}); !res.OK || !strings.Contains(string(res.Results[1].Value), "shop") {
		t.Fatalf("plan on the attached tab: %+v", res)
	}

	if raw := lifecycle("chrome", protocol.OpLaunch); !strings.Contains(string(raw), `"not_launchable"`) || !strings.Contains(string(raw), "framebus connect --profile chrome") {
		t.Fatalf("launch of an attach profile: %s", raw)
	}
	if raw := lifecycle("chrome", protocol.OpClose); !strings.Contains(string(raw), `"running":false`) {
		t.Fatalf("close of an attach profile: %s", raw)
	}
	select {
	case <-outside.Done():
		t.Fatal("closing the attach profile stopped the browser it attached to")
	case <-time.After(500 * time.Millisecond):
	}
	if res := c.plan(subj, chromeTab, one(protocol.Action{Type: "eval", Expression: "1"})); res.Code != protocol.CodeBrowserNotRunning || !strings.Contains(res.Error, "framebus connect --profile chrome") {
		t.Fatalf("plan to a disconnected attach profile: %+v", res)
	}
	if raw := lifecycle("chrome", protocol.OpConnect); !strings.Contains(string(raw), `"running":true`) {
		t.Fatalf("connect: %s", raw)
	}
	// The tab survived the disconnect, in the browser, and is adopted again.
	c.ask(subj.Profile("chrome", protocol.OpPages), nil, &pages)
	if len(pages.Tabs) != 1 || pages.Tabs[0].Tab != chromeTab || !strings.HasPrefix(pages.Tabs[0].URL, site("/")) {
		t.Fatalf("chrome pages after reconnecting: %+v", pages)
	}
	// A tab someone opens in that browser gets an actor; one the node
	// opens gets exactly one.
	user, err := cdpdriver.ConnectBrowser(ctx, outside.BrowserWebSocketURL(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer user.Close()
	if _, err := user.NewTarget(ctx, site("/form.html")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return len(node.Profile("chrome").Tabs()) == 2 })
	var opened protocol.TabReply
	if raw := c.ask(subj.Profile("chrome", protocol.OpNewTab), protocol.NewTabRequest{URL: site("/")}, &opened); !opened.OK {
		t.Fatalf("newtab in the attached browser: %s", raw)
	}
	c.ask(subj.Profile("chrome", protocol.OpPages), nil, &pages)
	if len(pages.Tabs) != 3 {
		t.Fatalf("chrome pages after a person's tab and newtab: %+v", pages)
	}
	if res := c.plan(subj, opened.Tab.Tab, one(protocol.Action{Type: "eval", Expression: "location.pathname"})); !res.OK || string(res.Results[0].Value) != `"/"` {
		t.Fatalf("plan on the new tab: %+v", res)
	}
	if raw := lifecycle("default", protocol.OpConnect); !strings.Contains(string(raw), "use launch") {
		t.Fatalf("connect of a managed profile: %s", raw)
	}

	// The named profile launches on request, in its own directory.
	if raw := lifecycle("work", protocol.OpLaunch); !strings.Contains(string(raw), `"running":true`) {
		t.Fatalf("launch work: %s", raw)
	}
	st = status()
	if st["work"].Endpoint != "" || node.Profile("work").Browser() == node.Profile("default").Browser() || st["work"].PageCount != 1 {
		t.Fatalf("work after launch: %+v", st)
	}
	p := node.Profile("work")
	if got := p.Browser().Process().UserDataDir(); got != filepath.Join(dir, "work") {
		t.Fatalf("work runs in %s", got)
	}
	workTab := p.Tabs()[0].Tab
	if res := c.plan(subj, workTab, one(protocol.Action{Type: "eval", Expression: "6 * 7"})); !res.OK || string(res.Results[0].Value) != "42" {
		t.Fatalf("plan on the work tab: %+v", res)
	}
	var all protocol.TabList
	c.ask(subj.Tabs(), nil, &all)
	if len(all.Tabs) != 5 { // default, work, chrome × 3
		t.Fatalf("tabs of all profiles: %+v", all)
	}

	// Closing the node disconnects from the attached browser and leaves it.
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cdpdriver.ResolveBrowserURL(ctx, outside.DevToolsURL()); err != nil {
		t.Fatalf("the attached browser after the node closed: %v", err)
	}
}

// Profiles declared wrong are refused at start, naming the problem; an
// attach profile whose browser does not answer leaves the node running.
func TestProfileDeclarations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	for _, tc := range []struct {
		profiles []ProfileOptions
		says     string
	}{
		{[]ProfileOptions{{Name: "a b"}}, "not a profile name"},
		{[]ProfileOptions{{Name: "work"}, {Name: "work"}}, "declared twice"},
		{[]ProfileOptions{{Name: "default"}}, "declared twice"},
	} {
		_, err := StartNode(ctx, NodeOptions{Prefix: "fbdecl", Launch: cdpdriver.LaunchOptions{Headless: true}, Profiles: tc.profiles, Logger: zerolog.Nop()})
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("profiles %+v: %v, want %q", tc.profiles, err, tc.says)
		}
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbdecl2", Profiles: []ProfileOptions{{Name: "chrome", Attach: "http://127.0.0.1:1"}}})
	c := newBusClient(t, node)
	var st protocol.StatusReply
	c.ask(node.Subjects().Profile("chrome", protocol.OpStatus), nil, &st)
	if len(st.Profiles) != 1 || st.Profiles[0].Running || st.Profiles[0].Attach != "http://127.0.0.1:1" {
		t.Fatalf("status of an unreachable attach profile: %+v", st)
	}
	var r protocol.PlanResult
	raw := c.ask(node.Subjects().Profile("chrome", protocol.OpConnect), nil, &r)
	if r.Code != protocol.CodeBrowserNotRunning || !strings.Contains(r.Error, "no browser answers at http://127.0.0.1:1") {
		t.Fatalf("connect to nothing: %s", raw)
	}
}
