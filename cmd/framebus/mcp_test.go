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

	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testscale"
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
	FullSnapshot         mcpCallSeen
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
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(4*time.Minute))
	defer cancel()
	args := append(slices.Clone(prefix), "node", script)
	cmd := testchild.DieWithTest(exec.CommandContext(ctx, args[0], args[1:]...))
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
	page, _ := nav.Structured["page"].(map[string]any)
	if id, _ := page["snapshot"].(string); !strings.HasPrefix(id, fmt.Sprint(nav.seq())+"#") ||
		!strings.Contains(nav.Text, "page (snapshot "+id+"):") || !strings.Contains(nav.Text, `link "Product 123" [ref=`) {
		t.Errorf("web navigate's result has no snapshot of the new page: %s", nav.Text)
	}
	// Shown the page, a snapshot is a line; a full one is the page again.
	if !strings.Contains(f.Snapshot.Text, "did not change since snapshot") || len(f.Snapshot.Text) > 300 ||
		!strings.Contains(f.FullSnapshot.Text, `link "Product 123" [ref=`+f.Ref+`]`) {
		t.Errorf("web snapshot after the navigation: %s; full: %s", f.Snapshot.Text, f.FullSnapshot.Text)
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
		!strings.Contains(click.Text, `heading "Product 123"`) {
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
		if spec.Resource == "" && (spec.Mutates || spec.Type == "snapshot") {
			want = append(want, protocol.Param{Name: "page"}) // what the result shows of the page
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
	t.Parallel() // its own node and MCP server
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

// rawMCP is framebus mcp over stdio spoken to line by line, as a client
// with bugs (or an attacker at its stdin) would.
type rawMCP struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan map[string]any // the server's messages, closed at its EOF
	done  chan struct{}       // closed when the process exited
	err   error
	errb  *lockedBuffer
}

func startRawMCP(t *testing.T, env []string) *rawMCP {
	t.Helper()
	r := &rawMCP{t: t, lines: make(chan map[string]any, 4096), done: make(chan struct{}), errb: &lockedBuffer{}}
	r.cmd = testchild.DieWithTest(exec.Command(binary, "mcp"))
	r.cmd.Env = env
	r.cmd.Stderr = r.errb
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		dec := json.NewDecoder(stdout)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				close(r.lines)
				return
			}
			r.lines <- m
		}
	}()
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.stdin.Close()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			r.cmd.Process.Kill()
			<-r.done
			t.Errorf("framebus mcp did not exit within 30s of its stdin closing")
		}
		if t.Failed() {
			t.Logf("framebus mcp stderr:\n%s", r.errb)
		}
	})
	return r
}

func (r *rawMCP) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatalf("write to framebus mcp: %v (it stopped reading)\nstderr: %s", err, r.errb)
	}
}

// answers reads the server's responses until every id in want is
// answered, its stdout ends, or the deadline passes; it returns the
// responses by id.
func (r *rawMCP) answers(want []string, deadline time.Duration) map[string]map[string]any {
	got := map[string]map[string]any{}
	nulls := 0 // answers to lines that are no message: id null
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		missing := slices.DeleteFunc(slices.Clone(want), func(id string) bool { _, ok := got[id]; return ok })
		if len(missing) == 0 {
			return got
		}
		select {
		case m, ok := <-r.lines:
			if !ok {
				return got
			}
			if id, ok := m["id"]; ok && id != nil {
				got[fmt.Sprint(id)] = m
			} else if ok {
				nulls++
				got[fmt.Sprintf("null-%d", nulls)] = m
			}
		case <-timer.C:
			return got
		}
	}
}

// A script that pipes its requests into framebus mcp and closes its
// input gets every answer, a slow call's too, then the server exits: it
// answers what it read before it ends the session.
func TestMCPAnswersWhatItReadBeforeItsInputEnds(t *testing.T) {
	t.Parallel() // its own node and MCP server
	n := startNode(t)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	r := startRawMCP(t, n.env)
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"browser_eval","arguments":{"expression":"new Promise(r => setTimeout(() => r(6*7), 1000))"}}}`)
	r.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	if _, err := io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":"last","method":"ping"}`); err != nil { // no newline: the input ends
		t.Fatal(err)
	}
	r.stdin.Close()
	got := r.answers([]string{"init", "slow", "ping", "last"}, testscale.D(time.Minute))
	if got["init"]["result"] == nil || got["ping"]["result"] == nil || got["last"]["result"] == nil {
		t.Fatalf("answers after the input ended: %v", got)
	}
	if data, _ := json.Marshal(got["slow"]); !strings.Contains(string(data), `"value":42`) {
		t.Fatalf("the slow call after the input ended: %s", data)
	}
	select {
	case <-r.done:
	case <-time.After(testscale.D(time.Minute)):
		t.Fatal("framebus mcp did not exit once it had answered")
	}
}

// wrongValue is a value of another type than the schema's.
func wrongValue(prop map[string]any) any {
	switch prop["type"] {
	case "string":
		return 12345
	case "integer", "number":
		return "twelve"
	case "boolean":
		return "yes"
	case "array":
		return map[string]any{"not": "a list"}
	case "object":
		return []int{1, 2}
	}
	return map[string]any{"neither": "string nor number"}
}

// Nothing a client sends crashes framebus mcp: a few hundred malformed
// tool calls (each parameter of each tool of the wrong type, unknown
// tools, huge strings, arguments that are no object) are each answered
// with an error, requests that break JSON-RPC and lines that are no
// JSON-RPC message with a JSON-RPC error, and the server still answers a
// good call after all of them.
func TestMCPSurvivesMalformedInput(t *testing.T) {
	t.Parallel() // its own node and MCP server
	n := startNode(t)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	r := startRawMCP(t, n.env)
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"malformed","version":"1"}}}`)
	if got := r.answers([]string{"init"}, time.Minute); got["init"]["result"] == nil {
		t.Fatalf("initialize: %v", got)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	list := r.answers([]string{"list"}, time.Minute)["list"]
	var tools struct {
		Result struct{ Tools []mcpToolSeen }
	}
	data, _ := json.Marshal(list)
	if json.Unmarshal(data, &tools); len(tools.Result.Tools) < 30 {
		t.Fatalf("tools/list: %s", data)
	}

	// Tool calls, each answered with the tool's error (isError) or a
	// JSON-RPC error, none carried out.
	var calls []string
	call := func(name string, args any) {
		id := fmt.Sprintf("call-%d", len(calls))
		params, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":%s}`, id, params))
		calls = append(calls, id)
	}
	huge := strings.Repeat("é\"<x>", 50_000) // 300 kB
	for _, tool := range tools.Result.Tools {
		for name, prop := range tool.InputSchema.Properties {
			call(tool.Name, map[string]any{name: wrongValue(prop)})
		}
		call(tool.Name, map[string]any{"no_such_parameter": 1})
		call(tool.Name, map[string]any{huge[:12_000]: 1})
		call(tool.Name, "not an object")
		call(tool.Name, []any{1, 2, 3})
	}
	for _, name := range []string{"", "nope", "browser_", "web ", "WEB", "browser_navigate\x00", "../web", huge} {
		call(name, map[string]any{})
	}
	call("browser_navigate", map[string]any{"url": "http://" + huge})
	call("browser_navigate", map[string]any{"url": site("/"), "tab": huge})
	call("browser_click", map[string]any{"selector": "e1", "basedOnSequence": -1})
	call("browser_click", map[string]any{"selector": "e1", "basedOnSequence": 1e300})
	call("web", map[string]any{"action": "navigate", "url": huge})
	call("web", map[string]any{"action": huge})
	call("web", map[string]any{"resource": "browser", "action": "click", "ref": "e1", "target_id": "../../x"})
	call("browser_tab_select", map[string]any{"tab": huge})

	// JSON-RPC requests that are wrong, each answered with a JSON-RPC
	// error.
	rpc := []string{
		`{"jsonrpc":"2.0","id":"rpc-0","method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":"rpc-1","method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":"rpc-2","method":"tools/call","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":"rpc-3","method":"tools/call","params":{"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"rpc-4","method":"resources/read","params":{"uri":"framebus://tabs/../frames/latest"}}`,
		`{"jsonrpc":"2.0","id":"rpc-5","method":"resources/read","params":{"uri":"framebus://tabs/NOSUCHTAB/frames/99"}}`,
		`{"jsonrpc":"2.0","id":"rpc-6","method":"resources/read","params":{"uri":` + jsonString(huge) + `}}`,
		`{"jsonrpc":"2.0","id":"rpc-7","method":"resources/subscribe","params":{"uri":"framebus://tabs/x/frames/1"}}`,
		`{"jsonrpc":"2.0","id":"rpc-8","method":"resources/subscribe","params":{"uri":"file:///etc/passwd"}}`,
		`{"jsonrpc":"2.0","id":"rpc-9","method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":"rpc-10","method":"tools/list","params":{"cursor":` + jsonString(huge[:10_000]) + `}}`,
		`{"jsonrpc":"2.0","id":"rpc-11","method":"prompts/get","params":{"name":"x"}}`,
	}
	var rpcIDs []string
	for i, line := range rpc {
		r.send(line)
		rpcIDs = append(rpcIDs, fmt.Sprintf("rpc-%d", i))
	}
	// Lines that are no JSON-RPC message: each answered with a parse
	// error or invalid request, the session going on; with the request's
	// id when it can be read (the SDK reads no message nested 1000 deep),
	// else null.
	badLines := []string{`{`, `garbage`, "\x00\x01\x02", `{"jsonrpc":"2.0","id":"x","method":"ping"} trailing`, `null`, `5`, `"str"`, `[]`,
		`{"jsonrpc":"2.0","id":{"an":"object"},"method":"ping"}`, `{"jsonrpc":"2.0"}`,
		strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), `[{"jsonrpc":"2.0","id":"b1","method":"ping"}]`}
	for _, line := range badLines {
		r.send(line)
	}
	badWithID := map[string]string{
		"v1":   `{"jsonrpc":"1.0","id":"v1","method":"ping"}`,
		"m":    `{"jsonrpc":"2.0","id":"m","method":5}`,
		"deep": `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"browser_eval","arguments":{"expression":` + strings.Repeat("[", 1500) + strings.Repeat("]", 1500) + `}}}`,
	}
	for _, line := range badWithID {
		r.send(line)
	}
	r.send(`{"jsonrpc":"2.0","id":"ping","method":"tools/call","params":{"name":"browser_eval","arguments":{"expression":"6*7"}}}`)

	var nullIDs []string
	for i := range badLines {
		nullIDs = append(nullIDs, fmt.Sprintf("null-%d", i+1))
	}
	for id := range badWithID {
		nullIDs = append(nullIDs, id) // answered with an error as the null ones
	}
	got := r.answers(append(append(append(slices.Clone(calls), rpcIDs...), nullIDs...), "ping"), 3*time.Minute)
	accepted, unanswered, longest := 0, 0, 0
	for _, id := range calls {
		m, ok := got[id]
		if data, _ := json.Marshal(m); len(data) > longest {
			longest = len(data)
		}
		switch {
		case !ok:
			unanswered++
		case m["error"] == nil && m["result"].(map[string]any)["isError"] != true:
			accepted++
			if accepted < 5 {
				t.Errorf("a malformed call was carried out: %.300v", m)
			}
		}
	}
	for _, id := range rpcIDs {
		if m, ok := got[id]; !ok {
			unanswered++
		} else if m["error"] == nil {
			accepted++
			t.Errorf("%s answered no JSON-RPC error: %.300v", id, m)
		}
	}
	for _, id := range nullIDs {
		if m, ok := got[id]; !ok {
			unanswered++
		} else if m["error"] == nil {
			t.Errorf("a line that is no message answered no error: %.300v", m)
		}
	}
	t.Logf("%d malformed calls, %d bad JSON-RPC requests and %d lines that are no message: %d carried out, %d unanswered; the longest answer %d bytes",
		len(calls), len(rpcIDs), len(badLines), accepted, unanswered, longest)
	if accepted > 0 || unanswered > 0 {
		t.Errorf("%d carried out, %d unanswered", accepted, unanswered)
	}
	ping, _ := json.Marshal(got["ping"])
	if !strings.Contains(string(ping), `"value":42`) {
		t.Fatalf("after the malformed input, browser_eval 6*7: %s", ping)
	}
}
