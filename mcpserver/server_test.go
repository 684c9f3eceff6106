package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/actors"
	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/mcpserver"
	"github.com/framebus/framebus/protocol"
)

// session is an MCP client session (the official Go SDK's client) with
// a framebus MCP server over in-memory transports, backed by a real node
// (headless Chromium) whose pages are testdata/site, and the node's
// agent on the bus beside it.
type session struct {
	cs      *mcp.ClientSession
	site    string
	node    *actors.Node
	agent   *busclient.Client
	updates chan string // URIs of resources/updated notifications
}

func start(t *testing.T, tools string) *session {
	t.Helper()
	return startWith(t, tools, actors.NodeOptions{})
}

// startWith is start with the node's options (headless), and the
// client's.
func startWith(t *testing.T, tools string, opts actors.NodeOptions, client ...func(*mcp.ClientOptions)) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	site := httptest.NewServer(http.FileServer(http.Dir("../testdata/site")))
	t.Cleanup(site.Close)
	opts.Launch.Headless = true
	node, err := actors.StartNode(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	creds := bustest.AddUser(t, node.Bus(), protocol.RoleAgent)
	bc, err := busclient.Connect(ctx, busclient.Options{URL: node.Bus().ClientURL(), Credentials: &creds, Prefix: node.Subjects().Prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bc.Close)
	srv, err := mcpserver.New(mcpserver.Options{Client: bc, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	s := &session{site: site.URL, node: node, agent: bc, updates: make(chan string, 64)}
	copts := &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			s.updates <- req.Params.URI
		},
	}
	for _, f := range client {
		f(copts)
	}
	if s.cs, err = mcp.NewClient(&mcp.Implementation{Name: "test"}, copts).Connect(ctx, ct, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cs.Close() })
	return s
}

// call calls a tool and returns its result's text and structured
// content.
func (s *session) call(t *testing.T, tool string, args map[string]any) (text string, out map[string]any, isError bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	data, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(data, &out)
	return text, out, res.IsError
}

var refPattern = regexp.MustCompile(`link "Product 123" \[ref=(e\d+)\]`)

// The action tools: one per declaration, a navigation answering the new
// page's snapshot, a click by ref from it, a stale basedOnSequence
// refused with the current frame and nothing run, and an update of the
// subscribed latest frame after a navigation.
func TestActionTools(t *testing.T) {
	s := start(t, mcpserver.ToolsActions)
	ctx := context.Background()
	tools, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, spec := range protocol.ActionSpecs() {
		if !slices.Contains(names, mcpserver.ActionToolName(spec)) {
			t.Errorf("no tool for action %s (tools: %v)", spec.Type, names)
		}
	}
	if slices.Contains(names, "web") {
		t.Errorf("--tools actions serves the web tool")
	}
	// docs/mcp.md's table of Playwright MCP's tools names only tools
	// that are served.
	readme, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	mapped := 0
	for _, row := range regexp.MustCompile(`(?m)^\| browser_\w+ \| (.*) \|$`).FindAllStringSubmatch(string(readme), -1) {
		mapped++
		for _, name := range regexp.MustCompile("`(browser_\\w+)`").FindAllStringSubmatch(row[1], -1) {
			if !slices.Contains(names, name[1]) {
				t.Errorf("docs/mcp.md maps a Playwright tool to %s, which is not served", name[1])
			}
		}
	}
	if mapped < 20 {
		t.Errorf("docs/mcp.md maps %d of Playwright MCP's 20 core tools", mapped)
	}

	tab := s.node.Tabs()[0].Tab
	if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: mcpserver.LatestFrameURI(tab)}); err != nil {
		t.Fatal(err)
	}
	text, out, isErr := s.call(t, "browser_navigate", map[string]any{"url": s.site + "/index.html"})
	if isErr || out["tab"] != tab || out["sequence"].(float64) < 2 {
		t.Fatalf("navigate: %v %s", out, text)
	}
	m := refPattern.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("navigate's result has no snapshot with the link's ref:\n%s", text)
	}
	select {
	case uri := <-s.updates:
		if uri != mcpserver.LatestFrameURI(tab) {
			t.Errorf("updated %s, want %s", uri, mcpserver.LatestFrameURI(tab))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/updated notification after the navigation")
	}
	seq := int64(out["sequence"].(float64))

	// Another agent moves the tab on: a plan based on the frame the model
	// saw is refused, and the link is not clicked.
	if res, err := s.agent.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1"}}); err != nil || !res.OK {
		t.Fatalf("the other agent's plan: %+v %v", res, err)
	}
	text, out, isErr = s.call(t, "browser_click", map[string]any{"selector": m[1], "basedOnSequence": seq})
	if !isErr || out["code"] != string(protocol.CodeStaleFrame) || int64(out["sequence"].(float64)) != seq+1 {
		t.Fatalf("stale click: error %v, %v %s", isErr, out, text)
	}
	text, out, isErr = s.call(t, "browser_click", map[string]any{"selector": m[1], "basedOnSequence": seq + 1})
	if isErr || !strings.Contains(out["url"].(string), "product.html?id=123") || !strings.Contains(text, "page (snapshot") {
		t.Fatalf("click by ref: %v %s", out, text)
	}

	// Bad input is the tool's error, with the code, never a crash.
	for _, bad := range []map[string]any{{"url": 5}, {}, {"url": "x", "nope": 1}, {"url": "x", "tab": "../x"}} {
		text, out, isErr := s.call(t, "browser_navigate", bad)
		if !isErr || out["code"] != string(protocol.CodeBadRequest) {
			t.Errorf("navigate %v: error %v %v %s", bad, isErr, out, text)
		}
	}
	if _, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("an unknown tool is not a JSON-RPC error")
	}
}

// The web tool as ADR-006 has it: status, navigate, snapshot, click by
// ref, the status shape, and its errors' wording.
func TestWebTool(t *testing.T) {
	s := start(t, mcpserver.ToolsWeb)
	text, out, isErr := s.call(t, "web", map[string]any{"resource": "browser", "action": "status"})
	profiles, _ := out["profiles"].([]any)
	if isErr || len(profiles) != 1 || profiles[0].(map[string]any)["running"] != true || profiles[0].(map[string]any)["page_count"] != float64(1) {
		t.Fatalf("status: %v %s", out, text)
	}
	text, out, isErr = s.call(t, "web", map[string]any{"resource": "browser", "action": "navigate", "url": s.site + "/index.html"})
	m := refPattern.FindStringSubmatch(text)
	if isErr || m == nil {
		t.Fatalf("navigate: %v %s", out, text)
	}
	// The session was shown the page: a snapshot says it did not change.
	text, _, isErr = s.call(t, "web", map[string]any{"action": "snapshot"})
	if isErr || !strings.Contains(text, "did not change") {
		t.Fatalf("snapshot: %s", text)
	}
	_, out, isErr = s.call(t, "web", map[string]any{"resource": "browser", "action": "click", "ref": m[1]})
	if isErr || !strings.Contains(out["url"].(string), "product.html") {
		t.Fatalf("click: %v", out)
	}
	_, out, isErr = s.call(t, "web", map[string]any{"resource": "browser", "action": "close"})
	if isErr {
		t.Fatalf("close: %v", out)
	}
	text, _, isErr = s.call(t, "web", map[string]any{"resource": "browser", "action": "click", "ref": m[1]})
	want := "Browser not running for profile 'default'. Use `web(resource: browser, action: launch, profile: \"default\")` to start it."
	if !isErr || !strings.Contains(text, want) {
		t.Fatalf("click with the browser closed: %s", text)
	}
	text, out, isErr = s.call(t, "web", map[string]any{"resource": "browser", "action": "status"})
	if isErr || out["profiles"].([]any)[0].(map[string]any)["running"] != false {
		t.Fatalf("status after close: %v %s", out, text)
	}
	for _, bad := range []map[string]any{{"resource": "ftp", "action": "get"}, {"resource": "http", "action": "navigate"}, {"action": "click"}, {"action": "navigate", "url": "x", "extra": 1}} {
		text, out, isErr := s.call(t, "web", bad)
		if !isErr || out["code"] != string(protocol.CodeBadRequest) {
			t.Errorf("web %v: error %v %v %s", bad, isErr, out, text)
		}
	}
}

// The session tools: a domain's session starts, its tab becomes the
// session's, shows in the list, and stops.
func TestSessionTools(t *testing.T) {
	s := startWith(t, mcpserver.ToolsActions, actors.NodeOptions{ProfileDir: testdir.Enterable(t)})
	site := strings.Replace(s.site, "127.0.0.1", "localhost", 1)
	_, out, isErr := s.call(t, "browser_session_start", map[string]any{"domain": "localhost", "url": site + "/index.html"})
	tabs, _ := out["tabs"].([]any)
	if isErr || out["session"] == nil || len(tabs) != 1 {
		t.Fatalf("session start: %v", out)
	}
	tab := tabs[0].(map[string]any)["tab"]
	_, out, isErr = s.call(t, "browser_title", nil)
	if isErr || out["tab"] != tab {
		t.Fatalf("title after session start: %v, want tab %v", out, tab)
	}
	_, out, isErr = s.call(t, "browser_sessions", nil)
	if list, _ := out["sessions"].([]any); isErr || len(list) != 1 {
		t.Fatalf("sessions: %v", out)
	}
	if _, out, isErr = s.call(t, "browser_session_stop", map[string]any{"session": tabs[0].(map[string]any)["tab"]}); !isErr {
		t.Errorf("stopping a session by a tab's id: %v", out)
	}
	_, out, isErr = s.call(t, "browser_sessions", nil)
	id := out["sessions"].([]any)[0].(map[string]any)["session"]
	if _, out, isErr = s.call(t, "browser_session_stop", map[string]any{"session": id}); isErr {
		t.Fatalf("session stop: %v", out)
	}
}

// ADR-006's wording for an attach profile (its "chrome" profile): launch
// is refused as the ADR has it, an action on it says to connect, and
// status answers it without an error.
func TestWebToolAttachProfile(t *testing.T) {
	s := startWith(t, mcpserver.ToolsWeb, actors.NodeOptions{Profiles: []actors.ProfileOptions{{Name: "chrome", Attach: "http://127.0.0.1:1"}}})
	text, _, isErr := s.call(t, "web", map[string]any{"resource": "browser", "action": "launch", "profile": "chrome"})
	if !isErr || !strings.Contains(text, "Cannot launch the chrome profile") || !strings.Contains(text, `web(resource: browser, action: connect, profile: "chrome")`) {
		t.Errorf("launch on an attach profile: %s", text)
	}
	text, _, isErr = s.call(t, "web", map[string]any{"resource": "browser", "action": "navigate", "url": s.site, "profile": "chrome"})
	if !isErr || !strings.Contains(text, "Browser not running for profile 'chrome'. Use `web(resource: browser, action: connect, profile: \"chrome\")` to start it.") {
		t.Errorf("navigate on a disconnected attach profile: %s", text)
	}
	text, out, isErr := s.call(t, "web", map[string]any{"resource": "browser", "action": "status", "profile": "chrome"})
	profiles, _ := out["profiles"].([]any)
	if isErr || len(profiles) != 1 || profiles[0].(map[string]any)["driver"] != "attach" || profiles[0].(map[string]any)["running"] != false {
		t.Errorf("status of the attach profile: %s", text)
	}
}

// A session's tab that went with its browser is let go: after close and
// launch, actions go to the new first tab, through both tool sets; and a
// resource's tool takes no basedOnSequence.
func TestSessionTabAfterRelaunch(t *testing.T) {
	s := start(t, mcpserver.ToolsBoth)
	if _, out, isErr := s.call(t, "browser_tab_new", map[string]any{"url": s.site + "/index.html"}); isErr {
		t.Fatalf("tab new: %v", out)
	}
	for _, step := range []map[string]any{{"resource": "browser", "action": "close"}, {"resource": "browser", "action": "launch"}} {
		if text, _, isErr := s.call(t, "web", step); isErr {
			t.Fatalf("%v: %s", step, text)
		}
	}
	text, out, isErr := s.call(t, "browser_navigate", map[string]any{"url": s.site + "/index.html"})
	if isErr || !strings.Contains(text, "page (snapshot") {
		t.Fatalf("navigate after close and launch: %s", text)
	}
	first := out["tab"]
	if _, out, isErr = s.call(t, "web", map[string]any{"action": "text"}); isErr || out["tab"] != first {
		t.Fatalf("web text after close and launch: %v (tab %v)", out, first)
	}
	text, out, isErr = s.call(t, "http_fetch", map[string]any{"url": s.site + "/index.html", "basedOnSequence": 2})
	if !isErr || out["code"] != string(protocol.CodeBadRequest) || !strings.Contains(text, "basedOnSequence") {
		t.Errorf("http_fetch with basedOnSequence: %s", text)
	}
}

// A call the client cancels cancels its plan on the tab: the next action
// runs, though the first would hold the tab for five minutes.
func TestCancelledCallCancelsItsPlan(t *testing.T) {
	s := start(t, mcpserver.ToolsActions)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_eval", Arguments: map[string]any{"expression": "new Promise(() => {})", "timeout": "5m"}})
		done <- err
	}()
	// Cancel once the plan runs: the tab is busy with it.
	tab := s.node.Tabs()[0].Tab
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for {
		rctx, rcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := s.agent.Plan(rctx, tab, protocol.Plan{Action: &protocol.Action{Type: "url"}})
		rcancel()
		if err != nil || time.Now().After(deadline) {
			break // no answer in time: the tab is busy with the eval
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	text, _, isErr := s.call(t, "browser_eval", map[string]any{"expression": "6*7", "tab": tab})
	if isErr || !strings.Contains(text, "42") {
		t.Fatalf("the eval after a cancelled call: %s", text)
	}
}

// A call whose tab does not answer within its wait: one queued behind
// another plan past its deadline is answered expired then (it did not
// run, and will not); one whose answer is lost (a tab, here made up,
// that takes the plan and never answers) says outcome_unknown naming its
// plan, not "timeout ... the plan was cancelled": it may have run.
func TestCallWithoutAnswer(t *testing.T) {
	s := start(t, mcpserver.ToolsActions)
	tab := s.node.Tabs()[0].Tab
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	held := make(chan error, 1)
	go func() {
		_, err := s.agent.Plan(ctx, tab, protocol.Plan{ID: "holder", Action: &protocol.Action{Type: "eval", Expression: "new Promise(() => {})", Timeout: protocol.Duration(5 * time.Minute)}})
		held <- err
	}()
	// The wait of an eval with a 1 ms timeout is 30 s: the holder keeps
	// the tab longer.
	text, out, isErr := s.call(t, "browser_eval", map[string]any{"expression": "window.lateRan = true", "timeout": "1ms", "tab": tab})
	if !isErr || out["code"] != string(protocol.CodeExpired) || !strings.Contains(text, "did not run") {
		t.Errorf("a call queued behind another plan past its deadline: %s %v", text, out)
	}
	if _, err := s.agent.Cancel(ctx, tab, "holder"); err != nil {
		t.Fatal(err)
	}
	<-held
	if text, _, isErr := s.call(t, "browser_eval", map[string]any{"expression": "window.lateRan ?? 'never'", "tab": tab}); isErr || !strings.Contains(text, "never") {
		t.Fatalf("the late call's eval ran: %s", text)
	}

	sink := bustest.Connect(t, s.node.Bus(), protocol.RoleAdmin)
	if _, err := sink.Subscribe(s.node.Subjects().TabPlan("MADEUP"), func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(); err != nil {
		t.Fatal(err)
	}
	text, out, isErr = s.call(t, "browser_text", map[string]any{"timeout": "1ms", "tab": "MADEUP"})
	if !isErr || out["code"] != string(protocol.CodeOutcomeUnknown) || !strings.Contains(text, "framebus frames --tab MADEUP") {
		t.Errorf("a call whose answer is lost: %s %v", text, out)
	}
}
