package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/mcpserver"
	"github.com/framebus/framebus/protocol"
)

// Issue 23's acceptance: framebus mcp driven by a client nobody here
// wrote, the official TypeScript MCP SDK's (testdata/mcp/acceptance.mjs,
// installed by .ci/run with npm ci), over stdio and streamable HTTP.

// mcpFindings is the JSON line acceptance.mjs prints.
type mcpFindings struct {
	Initialized  bool
	Errors       []string
	TokenError   string
	Capabilities struct {
		Resources struct{ Subscribe bool }
	}
	Tools                []mcpToolSeen
	Templates            []string
	Tab                  string
	Subscribed           string
	Updates              []struct{ URI, Phase string }
	UpdatedAfterNavigate bool
	Ref                  string
	StatusBefore         mcpCallSeen
	Navigate             mcpCallSeen
	Snapshot             mcpCallSeen
	MoveOn               mcpCallSeen
	StaleWeb             mcpCallSeen
	StaleAction          mcpCallSeen
	URLAfterStale        mcpCallSeen
	Click                mcpCallSeen
	Latest               protocol.Frame
	Status               mcpCallSeen
	Close                mcpCallSeen
	AfterClose           mcpCallSeen
}

type mcpToolSeen struct {
	Name        string
	InputSchema struct {
		Properties           map[string]map[string]any
		Required             []string
		AdditionalProperties *bool
	}
}

// mcpCallSeen is a tool call's result as the client saw it.
type mcpCallSeen struct {
	IsError    bool
	Structured map[string]any
	Head, Text string
}

func (c mcpCallSeen) seq() int64 {
	n, _ := c.Structured["sequence"].(float64)
	return int64(n)
}

func (c mcpCallSeen) str(key string) string {
	s, _ := c.Structured[key].(string)
	return s
}

// mcpScript is acceptance.mjs, failing the test when the SDK is not
// installed (it is part of what framebus promises; never skipped).
func mcpScript(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs("../../testdata/mcp/acceptance.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("the TypeScript MCP SDK is not installed (.ci/run runs: npm ci --prefix testdata/mcp): %v", err)
	}
	return script
}

// runMCPScript runs acceptance.mjs with env (under prefix, e.g. setpriv
// and its flags, when given) and decodes its findings.
func runMCPScript(t *testing.T, env []string, prefix ...string) (mcpFindings, string) {
	t.Helper()
	script := mcpScript(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := append(slices.Clone(prefix), "node", script)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = env
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node acceptance.mjs: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var f mcpFindings
	if err := json.Unmarshal([]byte(lastLine(string(out))), &f); err != nil {
		t.Fatalf("acceptance.mjs printed %s: %v\nstderr: %s", out, err, stderr.String())
	}
	return f, stderr.String()
}

// checkAcceptance checks what the TypeScript client saw: both tool
// sets, the web tool's navigate, snapshot, click by ref, status and
// close, a stale basedOnSequence refused, and the subscription's update.
func checkAcceptance(t *testing.T, f mcpFindings, stderr string) {
	t.Helper()
	if !f.Initialized || len(f.Errors) > 0 {
		t.Fatalf("the TypeScript client: initialized %v, errors:\n%s\nstderr: %s", f.Initialized, strings.Join(f.Errors, "\n"), stderr)
	}
	checkToolSets(t, f.Tools)
	if !f.Capabilities.Resources.Subscribe {
		t.Errorf("the server does not offer resource subscriptions: %+v", f.Capabilities)
	}
	for _, want := range []string{"framebus://tabs/{tab}/frames/latest", "framebus://tabs/{tab}/frames/{sequence}"} {
		if !slices.Contains(f.Templates, want) {
			t.Errorf("resource templates %v: no %s", f.Templates, want)
		}
	}
	if p, _ := f.StatusBefore.Structured["profiles"].([]any); f.StatusBefore.IsError || len(p) != 1 || p[0].(map[string]any)["running"] != true {
		t.Errorf("web status: %s", f.StatusBefore.Text)
	}

	nav := f.Navigate
	if nav.IsError || nav.str("tab") != f.Tab || nav.seq() < 2 || !strings.HasPrefix(nav.Head, fmt.Sprintf("tab %s · frame %d · ", f.Tab, nav.seq())) {
		t.Fatalf("web navigate: %s", nav.Text)
	}
	// The navigation's result carries the new page: no snapshot call needed.
	if page := nav.str("page"); nav.str("pageFormat") != "snapshot" || !strings.Contains(page, `link "Product 123" [ref=`) ||
		!strings.Contains(nav.Text, fmt.Sprintf("page of frame %d (snapshot):", nav.seq())) {
		t.Errorf("web navigate's result has no snapshot of the new page: %s", nav.Text)
	}
	if !f.UpdatedAfterNavigate || f.Subscribed != mcpserver.LatestFrameURI(f.Tab) {
		t.Errorf("no resources/updated for %s after the navigation (updates %v)", f.Subscribed, f.Updates)
	}
	for _, u := range f.Updates {
		if u.URI != f.Subscribed || u.Phase == "subscribe" {
			t.Errorf("update %+v: want only %s, after the navigation", u, f.Subscribed)
		}
	}

	if f.Snapshot.IsError || f.Ref == "" || f.Snapshot.seq() != nav.seq() {
		t.Fatalf("web snapshot (ref %q): %s", f.Ref, f.Snapshot.Text)
	}
	moved := f.MoveOn.seq()
	if f.MoveOn.IsError || moved != nav.seq()+1 || f.MoveOn.Structured["value"] != float64(2) {
		t.Fatalf("browser_eval 1+1 moving the tab on: %s", f.MoveOn.Text)
	}
	for name, stale := range map[string]mcpCallSeen{"web click based_on_sequence": f.StaleWeb, "browser_click basedOnSequence": f.StaleAction} {
		if !stale.IsError || stale.str("code") != string(protocol.CodeStaleFrame) || stale.seq() != moved {
			t.Errorf("%s %d with the tab at %d: want stale_frame naming frame %d: %s", name, nav.seq(), moved, moved, stale.Text)
		}
	}
	if u := f.URLAfterStale; u.IsError || u.seq() != moved || u.str("value") != nav.str("url") {
		t.Errorf("after the stale clicks the tab moved: %s", u.Text)
	}

	click := f.Click
	if click.IsError || click.seq() != moved+1 || !strings.Contains(click.str("url"), "/product.html?id=123") ||
		!strings.Contains(click.str("page"), `heading "Product 123"`) {
		t.Errorf("web click by ref %s: %s", f.Ref, click.Text)
	}
	if f.Latest.Sequence != click.seq() || f.Latest.Tab != f.Tab || !strings.Contains(f.Latest.URL, "/product.html?id=123") {
		t.Errorf("the latest frame resource after the click: %+v", f.Latest)
	}
	if p, _ := f.Status.Structured["profiles"].([]any); f.Status.IsError || len(p) != 1 || p[0].(map[string]any)["page_count"] != float64(1) {
		t.Errorf("web status: %s", f.Status.Text)
	}
	if p, _ := f.Close.Structured["profiles"].([]any); f.Close.IsError || len(p) != 1 || p[0].(map[string]any)["running"] != false {
		t.Errorf("web close: %s", f.Close.Text)
	}
	want := "Browser not running for profile 'default'. Use `web(resource: browser, action: launch, profile: \"default\")` to start it."
	if !f.AfterClose.IsError || f.AfterClose.str("code") != string(protocol.CodeBrowserNotRunning) || f.AfterClose.str("error") != want {
		t.Errorf("web click after close: want ADR-006's %q, got %s", want, f.AfterClose.Text)
	}
}

// checkToolSets checks the tools listed against the declarations: a
// tool per action with every parameter a plan carries (the required
// ones required, and tab and basedOnSequence for a tab's action), the
// tab and lifecycle tools, and ADR-006's web tool.
func checkToolSets(t *testing.T, tools []mcpToolSeen) {
	t.Helper()
	byName := map[string]mcpToolSeen{}
	for _, tool := range tools {
		byName[tool.Name] = tool
	}
	for _, spec := range protocol.ActionSpecs() {
		name := mcpserver.ActionToolName(spec)
		tool, ok := byName[name]
		if !ok {
			t.Errorf("action %s: no tool %s", spec.Type, name)
			continue
		}
		s := tool.InputSchema
		want := mcpserver.ToolParams(spec)
		if spec.Resource == "" {
			want = append(want, protocol.Param{Name: "tab"}, protocol.Param{Name: "basedOnSequence"})
		}
		for _, p := range want {
			if _, ok := s.Properties[p.Name]; !ok {
				t.Errorf("tool %s: no parameter %s", name, p.Name)
			}
			if required := p.Required && !p.MayBeEmpty; required != slices.Contains(s.Required, p.Name) {
				t.Errorf("tool %s: parameter %s required %v, the declaration says %v", name, p.Name, !required, required)
			}
		}
		if len(s.Properties) != len(want) || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("tool %s: %d parameters (additional allowed: %v), want exactly %d", name, len(s.Properties), s.AdditionalProperties, len(want))
		}
	}
	for _, name := range []string{"browser_tabs", "browser_tab_new", "browser_tab_select", "browser_tab_close",
		"browser_status", "browser_launch", "browser_connect", "browser_close"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no tool %s", name)
		}
	}
	web, ok := byName["web"]
	if !ok {
		t.Fatal("no web tool")
	}
	for _, field := range []string{"resource", "action", "url", "method", "headers", "body", "query", "engine", "limit",
		"profile", "ref", "selector", "text", "value", "output", "timeout", "target_id", "based_on_sequence"} {
		if _, ok := web.InputSchema.Properties[field]; !ok {
			t.Errorf("web tool: no field %s (ADR-006's WebDomainInput)", field)
		}
	}
	if !slices.Equal(web.InputSchema.Required, []string{"action"}) {
		t.Errorf("web tool: required %v, want [action]", web.InputSchema.Required)
	}
	enum := func(field string) []string {
		var out []string
		for _, v := range web.InputSchema.Properties[field]["enum"].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	if got := enum("resource"); !slices.Equal(got, []string{"http", "search", "browser"}) {
		t.Errorf("web tool: resources %v", got)
	}
	actions := enum("action")
	for _, a := range []string{"fetch", "query", "navigate", "snapshot", "click", "fill", "type", "screenshot", "text", "evaluate", "wait",
		"scroll", "hover", "select", "back", "forward", "reload", "status", "launch", "close", "list_pages"} {
		if !slices.Contains(actions, a) {
			t.Errorf("web tool: no action %s (ADR-006 section 1)", a)
		}
	}
}

// mcpScriptEnv is acceptance.mjs's environment for a stdio run of the
// binary with env (the state file it finds its node by).
func mcpStdioEnv(env []string) []string {
	return append(slices.Clone(env), "MCP_TRANSPORT=stdio", "MCP_COMMAND="+binary, `MCP_ARGS=["mcp"]`, "MCP_SITE="+site(""))
}

func TestMCPOverStdioWithTheTypeScriptSDK(t *testing.T) {
	t.Run("a node running", func(t *testing.T) {
		n := startNode(t)
		defer n.stop(syscall.SIGTERM, 30*time.Second)
		f, stderr := runMCPScript(t, mcpStdioEnv(n.env))
		checkAcceptance(t, f, stderr)
		if f.Tab != n.tab() {
			t.Errorf("the MCP server worked in tab %s, not the node's %s", f.Tab, n.tab())
		}
	})
	t.Run("no node running", func(t *testing.T) {
		env := testEnv(envState + "=" + filepath.Join(t.TempDir(), "node.json"))
		f, stderr := runMCPScript(t, mcpStdioEnv(env))
		checkAcceptance(t, f, stderr)
		if !strings.Contains(stderr, "no framebus node running: starting one in this process") {
			t.Errorf("framebus mcp did not say it started a node:\n%s", stderr)
		}
		// The node it started stopped with it.
		if r := framebus(t, env, "", "pages"); r.status == 0 || r.reply(t)["code"] != string(protocol.CodeUnavailable) {
			t.Errorf("after framebus mcp exited, pages: exit %d %s%s", r.status, r.stdout, r.stderr)
		}
	})
}

// mcpHTTP is a framebus mcp --http process and what it printed.
type mcpHTTP struct {
	*process
	URL, TokenFile string
}

func startMCPHTTP(t *testing.T, env []string) mcpHTTP {
	t.Helper()
	p := startProcess(t, env, "mcp", "--http", "127.0.0.1:0")
	var first struct {
		OK        bool
		MCP       string
		TokenFile string
	}
	waitFor(t, "framebus mcp --http prints its line", 60*time.Second, func() bool {
		if p.exited() {
			t.Fatalf("framebus mcp --http exited: %v\nstdout: %s\nstderr: %s", p.err, p.stdout, p.stderr)
		}
		lines := readLines(p.stdout.String())
		return len(lines) > 0 && json.Unmarshal([]byte(lines[0]), &first) == nil
	})
	if !first.OK || !strings.HasPrefix(first.MCP, "http://127.0.0.1:") || first.TokenFile == "" {
		t.Fatalf("framebus mcp --http printed %s", p.stdout)
	}
	return mcpHTTP{process: p, URL: first.MCP, TokenFile: first.TokenFile}
}

func (m mcpHTTP) scriptEnv(env []string) []string {
	return append(slices.Clone(env), "MCP_TRANSPORT=http", "MCP_URL="+m.URL, "MCP_TOKEN_FILE="+m.TokenFile, "MCP_SITE="+site(""))
}

func TestMCPOverStreamableHTTPWithTheTypeScriptSDK(t *testing.T) {
	n := startNode(t)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	m := startMCPHTTP(t, n.env)
	f, stderr := runMCPScript(t, m.scriptEnv(n.env))
	checkAcceptance(t, f, stderr)
	if f.Tab != n.tab() {
		t.Errorf("the MCP server worked in tab %s, not the node's %s", f.Tab, n.tab())
	}
	if code := m.stop(syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Errorf("framebus mcp --http exited %d on SIGTERM", code)
	}
	if _, err := os.Stat(m.TokenFile); !os.IsNotExist(err) {
		t.Errorf("the token file %s outlived the server: %v", m.TokenFile, err)
	}
}

// An attacker's requests to framebus mcp --http: without the token, with
// a wrong one or another server's, with the token but a Host that is not
// loopback's (DNS rebinding: a page of another site reaching the port
// through a name that resolves to 127.0.0.1), and as another user of
// the machine, who cannot read the token file. None gets through; the
// token, from loopback, does (so the probes can fail).
func TestMCPOverHTTPLetsOnlyItsTokenIn(t *testing.T) {
	setpriv := needSetpriv(t)
	n := startNode(t)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	m := startMCPHTTP(t, n.env)
	other := startMCPHTTP(t, n.env)
	token, otherToken := readMCPToken(t, m.TokenFile), readMCPToken(t, other.TokenFile)
	port := strings.TrimSuffix(strings.TrimPrefix(m.URL, "http://127.0.0.1:"), "/mcp")

	if status := postInitialize(t, m.URL, "Bearer "+token, ""); status != http.StatusOK {
		t.Fatalf("the token from loopback: HTTP %d, want 200", status)
	}
	probes := []struct {
		name, auth, host string
		want             int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"an empty bearer token", "Bearer ", "", http.StatusUnauthorized},
		{"a wrong token of the same length", "Bearer " + strings.Repeat("0", len(token)), "", http.StatusUnauthorized},
		{"the token but its last character", "Bearer " + token[:len(token)-1], "", http.StatusUnauthorized},
		{"the token and more", "Bearer " + token + "0", "", http.StatusUnauthorized},
		{"another server's token", "Bearer " + otherToken, "", http.StatusUnauthorized},
		{"the token as basic auth", "Basic " + base64.StdEncoding.EncodeToString([]byte("framebus:"+token)), "", http.StatusUnauthorized},
		{"DNS rebinding: Host evil.example:port", "Bearer " + token, "evil.example:" + port, http.StatusForbidden},
		{"DNS rebinding: Host evil.example", "Bearer " + token, "evil.example", http.StatusForbidden},
		{"DNS rebinding: Host 127.0.0.1.nip.io:port", "Bearer " + token, "127.0.0.1.nip.io:" + port, http.StatusForbidden},
		{"DNS rebinding: Host localhost.evil.example:port", "Bearer " + token, "localhost.evil.example:" + port, http.StatusForbidden},
	}
	through := 0
	for _, p := range probes {
		status := postInitialize(t, m.URL, p.auth, p.host)
		if status < 300 {
			through++
		}
		if status != p.want {
			t.Errorf("%s: HTTP %d, want %d", p.name, status, p.want)
		}
	}

	// Another user of the machine: the token file is not theirs to read,
	// and their MCP client (the TypeScript SDK's) does not initialize.
	if r := framebusAs(t, setpriv, "/bin/cat", nil, "", m.TokenFile); r.status == 0 {
		through++
		t.Errorf("uid 65534 read the token file %s", m.TokenFile)
	}
	f, stderr := runMCPScript(t, append(m.scriptEnv(testEnv()), "MCP_STEPS=connect"), setpriv, "--reuid=65534", "--regid=65534", "--clear-groups")
	if f.Initialized || len(f.Tools) > 0 {
		through++
		t.Errorf("uid 65534's MCP client initialized and listed %d tools", len(f.Tools))
	}
	if !strings.Contains(f.TokenError, "EACCES") {
		t.Errorf("uid 65534's client read the token file: %q\n%s", f.TokenError, stderr)
	}
	t.Logf("%d of %d attempts got through", through, len(probes)+2)
	if through != 0 {
		t.Errorf("%d attempts got through", through)
	}
}

func readMCPToken(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if token := strings.TrimSpace(string(data)); len(token) >= 32 {
		return token
	}
	t.Fatalf("the token in %s is too short: %q", path, data)
	return ""
}

// postInitialize posts an initialize request as an MCP client would
// and answers the HTTP status.
func postInitialize(t *testing.T, url, auth, host string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if host != "" {
		req.Host = host
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer res.Body.Close()
	io.Copy(io.Discard, res.Body)
	return res.StatusCode
}
