package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/mcpserver"
	"github.com/framebus/framebus/protocol"
)

// Probes of the MCP server from the model's side and an attacker's: what
// a model may send by mistake (wrong types, missing and extra fields,
// huge and odd strings, nesting, ids that are not ids) and what a
// hostile client may try (resource URIs, subscriptions by the hundred).
// Each probe counts what answered with a clear code, what was refused as
// a protocol error, what got through, and what hung; a hole fails its
// test by name.

// probeWait bounds one probing call: bad input is refused before any
// browser work, so a call still running at this deadline hangs. (A 10 MB
// argument is read, checked against the tool's schema and refused: that
// alone took over 30 s under -race on a busy machine.)
var probeWait = testscale.D(60 * time.Second)

// outcome is how the server answered one probing call.
type outcome struct {
	rpcErr  error          // a JSON-RPC error (protocol violation)
	isError bool           // a tool result with isError
	code    protocol.Code  // its code
	text    string         // its text
	out     map[string]any // its structured content
	hung    bool           // no answer within probeWait
}

func (o outcome) String() string {
	switch {
	case o.hung:
		return "HUNG"
	case o.rpcErr != nil:
		return "rpc error: " + clip(o.rpcErr.Error())
	case o.isError:
		return "isError " + clip(o.text)
	default:
		return "ok " + clip(o.text)
	}
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// rawCall calls a tool with arguments sent as they are (raw JSON, so an
// array, a string or null reach the server unaltered).
func (s *session) rawCall(tool string, args json.RawMessage) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), probeWait)
	defer cancel()
	params := &mcp.CallToolParams{Name: tool}
	if args != nil {
		params.Arguments = args
	}
	res, err := s.cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return outcome{hung: true}
		}
		return outcome{rpcErr: err}
	}
	o := outcome{isError: res.IsError}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			o.text += tc.Text
		}
	}
	data, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(data, &o.out)
	if code, ok := o.out["code"].(string); ok {
		o.code = protocol.Code(code)
	}
	return o
}

// tally counts outcomes by kind.
type tally map[string]int

func (t tally) add(kind string) { t[kind]++ }

func (t tally) String() string {
	var keys []string
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, t[k])
	}
	return b.String()
}

// toolSchemas are the served tools' input schemas, by name.
func (s *session) toolSchemas(t *testing.T) map[string]map[string]any {
	t.Helper()
	tools, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, tool := range tools.Tools {
		data, _ := json.Marshal(tool.InputSchema)
		var sch map[string]any
		if err := json.Unmarshal(data, &sch); err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = sch
	}
	return out
}

// wrongValues are values of another JSON type than a schema's.
func wrongValues(typ any) []string {
	switch typ {
	case "string":
		return []string{`5`, `true`, `{"a":"b"}`, `["x"]`}
	case "integer":
		return []string{`"3"`, `1.5`, `true`, `{}`, `[1]`}
	case "number":
		return []string{`"3"`, `true`, `{}`}
	case "boolean":
		return []string{`"true"`, `1`, `{}`}
	case "array":
		return []string{`"x"`, `{}`, `[1]`}
	case "object":
		return []string{`"x"`, `[]`, `{"a":1}`}
	}
	return []string{`{}`, `true`} // a duration: string or number
}

// Every tool, every parameter, a value of the wrong type (the other
// parameters absent): bad_request naming the parameter, never a panic,
// a hang, or the call running. Arguments that are not an object (an
// array, a string, a number) are bad_request too, and a parameter no
// tool takes is named.
func TestProbeWrongTypes(t *testing.T) {
	s := start(t, "both")
	schemas := s.toolSchemas(t)
	counts := tally{}
	var holes []string
	names := make([]string, 0, len(schemas))
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		props, _ := schemas[name]["properties"].(map[string]any)
		for prop, p := range props {
			typ := p.(map[string]any)["type"]
			if e, ok := p.(map[string]any)["enum"]; ok && typ == "string" {
				_ = e
			}
			for _, v := range wrongValues(typ) {
				args := json.RawMessage(fmt.Sprintf(`{%q:%s}`, prop, v))
				o := s.rawCall(name, args)
				switch {
				case o.hung:
					counts.add("hung")
					holes = append(holes, fmt.Sprintf("%s %s: hung", name, args))
				case o.rpcErr != nil:
					counts.add("rpcError")
				case o.isError && o.code == protocol.CodeBadRequest && strings.Contains(o.text, prop):
					counts.add("badRequestNamed")
				case o.isError && o.code == protocol.CodeBadRequest:
					counts.add("badRequestUnnamed")
					holes = append(holes, fmt.Sprintf("%s %s: bad_request without naming %s: %s", name, args, prop, o))
				case o.isError:
					counts.add("otherCode:" + string(o.code))
					holes = append(holes, fmt.Sprintf("%s %s: %s", name, args, o))
				default:
					counts.add("accepted")
					holes = append(holes, fmt.Sprintf("%s %s: accepted: %s", name, args, o))
				}
			}
		}
		for _, args := range []string{`[]`, `["x"]`, `"x"`, `5`, `{"noSuchParam":1}`} {
			o := s.rawCall(name, json.RawMessage(args))
			switch {
			case o.hung:
				counts.add("hung")
				holes = append(holes, fmt.Sprintf("%s %s: hung", name, args))
			case o.rpcErr != nil || (o.isError && o.code == protocol.CodeBadRequest):
				counts.add("refusedShape")
			default:
				counts.add("shapeAccepted")
				holes = append(holes, fmt.Sprintf("%s %s: %s", name, args, o))
			}
		}
	}
	t.Logf("%d tools: %s", len(names), counts)
	for _, h := range holes {
		t.Error(h)
	}
}

// probeCase is one call and the codes it may answer.
type probeCase struct {
	tool string
	args string
	// want are the acceptable codes of an isError result; "ok" for a
	// result without isError, "rpc" for a JSON-RPC error.
	want []string
}

func (c probeCase) judge(o outcome) (kind string, good bool) {
	switch {
	case o.hung:
		return "hung", false
	case o.rpcErr != nil:
		return "rpc", slices.Contains(c.want, "rpc")
	case !o.isError:
		return "ok", slices.Contains(c.want, "ok")
	default:
		return string(o.code), slices.Contains(c.want, string(o.code))
	}
}

// runProbes runs cases and fails each that answered otherwise than it
// may, counting the answers.
func (s *session) runProbes(t *testing.T, what string, cases []probeCase) {
	t.Helper()
	counts := tally{}
	for _, c := range cases {
		o := s.rawCall(c.tool, json.RawMessage(c.args))
		kind, good := c.judge(o)
		counts.add(kind)
		if !good {
			t.Errorf("%s %s: %s, want one of %v", c.tool, clip(c.args), o, c.want)
		}
	}
	t.Logf("%s: %d calls: %s", what, len(cases), counts)
}

func jsonString(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// nested is a JSON array nested depth deep.
func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

var badReq = []string{string(protocol.CodeBadRequest)}

// Values of the right type the model may still get wrong: sequences out
// of range, tab ids that are not ids (NATS wildcards, paths, control
// characters, 10 MB), refs that do not exist, 10 MB strings, nesting,
// odd unicode. Each answers with a clear code, in time.
func TestProbeBadValues(t *testing.T) {
	s := start(t, "both")
	tab := s.node.Tabs()[0].Tab
	if _, _, isErr := s.call(t, "browser_navigate", map[string]any{"url": s.site + "/index.html"}); isErr {
		t.Fatal("navigate failed")
	}
	huge := strings.Repeat("a", 10<<20)
	var cases []probeCase
	for _, seq := range []string{"-5", "0", "-9223372036854775808", "1e30", "99999999999999999999", "1.5"} {
		cases = append(cases, probeCase{"browser_eval", `{"expression":"1","basedOnSequence":` + seq + `}`, badReq})
	}
	cases = append(cases,
		probeCase{"browser_eval", `{"expression":"1","basedOnSequence":9223372036854775807}`, []string{string(protocol.CodeStaleFrame)}},
		probeCase{"browser_eval", `{"expression":"1","basedOnSequence":9007199254740993}`, []string{string(protocol.CodeStaleFrame)}},
	)
	for _, id := range []string{"../x", "a.b", "*", ">", "a b", "tåb", "\u0000", "a\nb", "\u202e", strings.Repeat("t", 300)} {
		cases = append(cases,
			probeCase{"browser_eval", `{"expression":"1","tab":` + jsonString(id) + `}`, badReq},
			probeCase{"browser_tab_select", `{"tab":` + jsonString(id) + `}`, badReq},
			probeCase{"browser_tab_close", `{"tab":` + jsonString(id) + `}`, badReq},
			probeCase{"web", `{"action":"evaluate","text":"1","target_id":` + jsonString(id) + `}`, badReq},
		)
	}
	notFound := []string{string(protocol.CodeTabNotFound)}
	cases = append(cases,
		probeCase{"browser_eval", `{"expression":"1","tab":"\ud800"}`, badReq},
		probeCase{"browser_eval", `{"expression":"1","tab":"NOSUCHTAB0123"}`, notFound},
		probeCase{"browser_navigate", `{"url":"about:blank","tab":"NOSUCHTAB0123"}`, notFound},
		probeCase{"browser_tab_select", `{"tab":"NOSUCHTAB0123"}`, notFound},
		probeCase{"browser_tab_close", `{"tab":"NOSUCHTAB0123"}`, notFound},
		probeCase{"web", `{"action":"click","ref":"e5","target_id":"NOSUCHTAB0123"}`, notFound},
		probeCase{"browser_click", `{"selector":"e99999","timeout":"300ms"}`, []string{string(protocol.CodeElementNotFound), string(protocol.CodeStaleRef), string(protocol.CodeBadRequest)}},
		probeCase{"web", `{"action":"click","ref":"e99999","timeout":300}`, []string{string(protocol.CodeElementNotFound), string(protocol.CodeStaleRef), string(protocol.CodeBadRequest)}},
		probeCase{"browser_click", `{"selector":"e0","timeout":"300ms"}`, []string{string(protocol.CodeElementNotFound), string(protocol.CodeStaleRef), string(protocol.CodeBadRequest)}},
		probeCase{"browser_click", `{"selector":"###","timeout":"300ms"}`, badReq},
		// Ten megabytes where a short string goes.
		probeCase{"browser_navigate", `{"url":` + jsonString("http://127.0.0.1/"+huge) + `}`, []string{string(protocol.CodeBadRequest), string(protocol.CodeTooLarge), string(protocol.CodeNavigationFailed)}},
		probeCase{"browser_fill", `{"selector":"#nope","text":` + jsonString(huge) + `,"timeout":"300ms"}`, []string{string(protocol.CodeBadRequest), string(protocol.CodeTooLarge), string(protocol.CodeElementNotFound), string(protocol.CodeTimeout)}},
		probeCase{"browser_eval", `{"expression":` + jsonString(`"`+huge[:512<<10]+`".length`) + `}`, []string{"ok"}},
		probeCase{"browser_eval", `{"expression":` + jsonString(`"`+huge+`".length`) + `}`, []string{"ok", string(protocol.CodeTooLarge), string(protocol.CodeBadRequest)}},
		probeCase{"web", `{"action":"navigate","url":` + jsonString("http://127.0.0.1/"+huge) + `}`, []string{string(protocol.CodeBadRequest), string(protocol.CodeTooLarge), string(protocol.CodeNavigationFailed)}},
		probeCase{"web", `{"action":"list_pages","profile":"../../x"}`, badReq},
		probeCase{"browser_tabs", `{"profile":"a.*"}`, badReq},
		probeCase{"browser_tabs", `{"profile":"*"}`, badReq},
		probeCase{"web", `{"action":"list_pages","profile":">"}`, badReq},
		// Nesting within the SDK's limit (1000 levels; past it the SDK
		// ends the session, see the report): bad_request.
		probeCase{"browser_navigate", `{"url":` + nested(900) + `}`, badReq},
		probeCase{"web", `{"action":"navigate","headers":` + strings.Repeat(`{"a":`, 900) + `1` + strings.Repeat("}", 900) + `}`, badReq},
		probeCase{"browser_fill_form", `{"fields":` + strings.Repeat(`{"a":`, 900) + `1` + strings.Repeat("}", 900) + `}`, badReq},
		// Odd text: a lone surrogate, NUL, direction overrides.
		probeCase{"browser_eval", `{"expression":"'\ud800'"}`, []string{"ok", string(protocol.CodeBadRequest)}},
		probeCase{"browser_eval", `{"expression":"'a\u0000b'.length"}`, []string{"ok"}},
		probeCase{"browser_navigate", `{"url":"http://127.0.0.1/\u202e\u0000"}`, []string{string(protocol.CodeBadRequest), string(protocol.CodeNavigationFailed)}},
		probeCase{"browser_type", `{"text":"\ud83d\ude00\u200d\ufeff"}`, []string{"ok", string(protocol.CodeBadRequest)}},
		// Null for a required parameter, and for the arguments.
		probeCase{"browser_navigate", `{"url":null}`, badReq},
		probeCase{"browser_navigate", `null`, badReq},
		probeCase{"browser_tab_select", `null`, badReq},
		probeCase{"web", `null`, badReq},
		probeCase{"web", `{"action":null}`, badReq},
		// The web tool's numbers out of range.
		probeCase{"web", `{"action":"evaluate","text":"1","timeout":-5}`, badReq},
		probeCase{"search", `{}`, []string{"rpc"}},
		probeCase{"web", `{"resource":"search","action":"query","query":"x","limit":-1}`, badReq},
		probeCase{"web", `{"resource":"http","action":"fetch","url":"ftp://x"}`, badReq},
		probeCase{"web", `{"resource":"http","action":"fetch","url":"http://x","method":"TRACE"}`, badReq},
		probeCase{"web", `{"action":"evaluate","text":"1","based_on_sequence":-5}`, badReq},
		probeCase{"web", `{"action":"evaluate","text":"1","based_on_sequence":0}`, append(badReq, "ok")},
	)
	s.runProbes(t, "bad values", cases)
	_ = tab
}

// A tab id of a few kilobytes is a NATS subject longer than the server's
// control line: the server drops the connection, and with it the MCP
// server's bus for every session. A tab id that long is no tab's: it
// must be bad_request, and the bus stay up.
func TestProbeLongTabIDKeepsTheBus(t *testing.T) {
	s := start(t, "both")
	long := strings.Repeat("t", 8<<10)
	for _, c := range []probeCase{
		{"browser_eval", `{"expression":"1","tab":"` + long + `"}`, badReq},
		{"browser_navigate", `{"url":"about:blank","tab":"` + long + `"}`, badReq},
		{"browser_tab_select", `{"tab":"` + long + `"}`, badReq},
		{"web", `{"action":"evaluate","text":"1","target_id":"` + long + `"}`, badReq},
	} {
		o := s.rawCall(c.tool, json.RawMessage(c.args))
		if kind, good := c.judge(o); !good {
			t.Errorf("%s with an 8 KB tab id: %s (%s), want bad_request", c.tool, kind, o)
		}
		if o := s.rawCall("browser_tabs", nil); o.isError || o.rpcErr != nil || o.hung {
			t.Fatalf("after %s with an 8 KB tab id, browser_tabs: %s", c.tool, o)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeWait)
	defer cancel()
	for _, uri := range []string{mcpserver.LatestFrameURI(long), mcpserver.FrameURI(long, "1")} {
		if _, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("read %s: answered", clip(uri))
		}
		if o := s.rawCall("browser_tabs", nil); o.isError || o.rpcErr != nil || o.hung {
			t.Fatalf("after reading a frame of an 8 KB tab id, browser_tabs: %s", o)
		}
	}
}

// A refusal quotes what it refuses; quoting ten megabytes (twice: the
// text and the structured content) makes an answer larger than the MCP
// transports' 16 MiB frame, and the client's session ends. A refusal
// quotes a bounded part.
func TestProbeHugeValueRefusalIsBounded(t *testing.T) {
	s := start(t, "both")
	huge := strings.Repeat("p", 10<<20)
	for _, c := range []probeCase{
		{"browser_launch", `{"profile":"` + huge + `"}`, badReq},
		{"browser_tab_new", `{"profile":"` + huge + `"}`, badReq},
		{"browser_tab_new", `{"url":"http://127.0.0.1/` + huge + `"}`, []string{string(protocol.CodeBadRequest), string(protocol.CodeTooLarge), string(protocol.CodeNavigationFailed)}},
		{"browser_tabs", `{"profile":"` + huge + `"}`, badReq},
		{"web", `{"action":"launch","profile":"` + huge + `"}`, badReq},
		{"web", `{"action":"wait","value":"` + huge + `","selector":"body"}`, badReq},
		{"browser_navigate", `{"url":"x","noSuchParam` + huge + `":1}`, badReq},
	} {
		o := s.rawCall(c.tool, json.RawMessage(c.args))
		if kind, good := c.judge(o); !good {
			t.Errorf("%s with a 10 MB value: %s (%s), want bad_request", c.tool, kind, o)
		}
		if len(o.text) > 64<<10 {
			t.Errorf("%s with a 10 MB value: the refusal is %d bytes", c.tool, len(o.text))
		}
		if o := s.rawCall("browser_tabs", nil); o.rpcErr != nil || o.hung {
			t.Fatalf("after %s with a 10 MB value, the session is gone: %s", c.tool, o)
		}
	}
}

// connectAs serves an MCP session (tools: both) whose bus client logs in
// to s's node as a user of role.
func (s *session) connectAs(t *testing.T, role string) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	creds := bustest.AddUser(t, s.node.Bus(), role)
	bc, err := busclient.Connect(ctx, busclient.Options{URL: s.node.Bus().ClientURL(), Credentials: &creds, Prefix: s.node.Subjects().Prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bc.Close)
	srv, err := mcpserver.New(mcpserver.Options{Client: bc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	other := &session{site: s.site, node: s.node, agent: s.agent, updates: make(chan string, 64)}
	client := mcp.NewClient(&mcp.Implementation{Name: role}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case other.updates <- req.Params.URI:
			default:
			}
		},
	})
	if other.cs, err = client.Connect(ctx, ct, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.cs.Close() })
	return other
}

// validArgs are arguments an action's tool takes, by parameter name:
// what a model would send to carry it out.
func validArgs(site string) map[string]string {
	return map[string]string{
		"url": jsonString(site + "/index.html"), "selector": `"body"`, "text": `"x"`, "answer": `"accept"`,
		"from": `"body"`, "to": `"body"`, "expression": `"1"`, "fields": `{"#q":"x"}`, "key": `"Enter"`,
		"value": `"x"`, "query": `"x"`,
	}
}

// argsFor is a call of tool with its required parameters.
func argsFor(schema map[string]any, site string) string {
	values := validArgs(site)
	var parts []string
	req, _ := schema["required"].([]any)
	for _, r := range req {
		name := r.(string)
		v, ok := values[name]
		if !ok {
			v = `"x"`
		}
		parts = append(parts, fmt.Sprintf("%q:%s", name, v))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// An observer's MCP server: every tool that changes something (each
// mutating action, the tab and lifecycle tools, the web tool's browser
// actions and lifecycle) is permission_denied at once, never a timeout,
// and changes nothing: the tab's frame, the tabs, the browser stay as
// they were. Listing tabs, status and the frame resources work.
func TestProbeObserverChangesNothing(t *testing.T) {
	s := start(t, "both")
	if _, _, isErr := s.call(t, "browser_navigate", map[string]any{"url": s.site + "/index.html"}); isErr {
		t.Fatal("navigate failed")
	}
	obs := s.connectAs(t, protocol.RoleObserver)
	tools, err := obs.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	before := s.node.Tabs()
	denied := permissionDenied()
	var cases []probeCase
	for _, tool := range tools.Tools {
		if tool.Annotations != nil && tool.Annotations.ReadOnlyHint || tool.Name == "web" {
			continue
		}
		data, _ := json.Marshal(tool.InputSchema)
		var sch map[string]any
		_ = json.Unmarshal(data, &sch)
		args := argsFor(sch, s.site)
		switch tool.Name {
		case "browser_tab_close":
			args = `{"tab":"` + before[0].Tab + `"}`
		case "browser_type":
			args = `{"text":"x"}`
		case "browser_resize":
			args = `{"width":800,"height":600}`
		case "browser_scroll":
			args = `{"by":"0,100"}`
		case "browser_upload":
			args = `{"selector":"body","files":["/etc/hostname"]}`
		}
		cases = append(cases, probeCase{tool.Name, args, denied})
	}
	for _, action := range []string{"navigate", "click", "fill", "type", "select", "hover", "scroll", "back", "forward", "reload", "evaluate", "launch", "close", "connect"} {
		cases = append(cases, probeCase{"web", `{"action":"` + action + `","url":` + jsonString(s.site+"/index.html") + `,"selector":"body","text":"x","value":"` + map[bool]string{true: "0,10", false: "x"}[action == "scroll"] + `"}`, denied})
	}
	cases = append(cases,
		probeCase{"web", `{"resource":"http","action":"fetch","url":` + jsonString(s.site+"/index.html") + `}`, denied},
		probeCase{"web", `{"resource":"search","action":"query","query":"x"}`, denied},
	)
	obs.runProbes(t, "observer's changes", cases)
	after := s.node.Tabs()
	if len(after) != len(before) || after[0].Tab != before[0].Tab || after[0].Sequence != before[0].Sequence || after[0].URL != before[0].URL {
		t.Errorf("the observer changed the tabs: before %+v, after %+v", before, after)
	}

	// What an observer reads.
	obs.runProbes(t, "observer's reads", []probeCase{
		{"browser_tabs", `{}`, []string{"ok"}},
		{"browser_status", `{}`, []string{"ok"}},
		{"web", `{"action":"status"}`, []string{"ok"}},
		{"web", `{"action":"list_pages"}`, []string{"ok"}},
		{"browser_tab_select", `{"tab":"` + before[0].Tab + `"}`, []string{"ok"}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), probeWait)
	defer cancel()
	uri := mcpserver.LatestFrameURI(before[0].Tab)
	if res, err := obs.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err != nil || !strings.Contains(res.Contents[0].Text, s.site) {
		t.Errorf("observer reads %s: %v", uri, err)
	}
	if _, err := obs.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "framebus://tabs"}); err != nil {
		t.Errorf("observer reads framebus://tabs: %v", err)
	}
	if err := obs.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("observer subscribes to %s: %v", uri, err)
	}
	if _, _, isErr := s.call(t, "browser_navigate", map[string]any{"url": s.site + "/product.html?id=1"}); isErr {
		t.Fatal("the agent's navigate failed")
	}
	select {
	case got := <-obs.updates:
		if got != uri {
			t.Errorf("observer heard of %s, want %s", got, uri)
		}
	case <-ctx.Done():
		t.Error("the observer's subscription heard of no new frame")
	}
}

func permissionDenied() []string { return []string{string(protocol.CodePermissionDenied)} }

// httpSessions serves s's node's MCP server over streamable HTTP and
// connects n clients (the Go SDK's), each its own MCP session.
func (s *session) httpSessions(t *testing.T, n int, updates ...chan string) (*mcpserver.Server, []*mcp.ClientSession) {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Options{Client: s.agent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCP() }, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	var out []*mcp.ClientSession
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		var opts *mcp.ClientOptions
		if len(updates) > 0 {
			ch := updates[0]
			opts = &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
				select {
				case ch <- req.Params.URI:
				default:
				}
			}}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprint("http-", i)}, opts).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		out = append(out, cs)
	}
	return srv, out
}

// callOn calls a tool on cs; an error or hang fails the test.
func callOn(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, map[string]any, bool) {
	t.Helper()
	o := (&session{cs: cs}).rawCall(tool, mustJSON(args))
	if o.hung || o.rpcErr != nil {
		t.Fatalf("%s %v: %s", tool, args, o)
	}
	return o.text, o.out, o.isError
}

func mustJSON(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// Two MCP sessions over streamable HTTP each open and work in a tab of
// their own: neither acts on the other's tab, with the action tools or
// the web tool. A session that ends leaves its choice to no one: a new
// session works in the first tab listed and has none selected.
func TestProbeHTTPSessionsKeepTheirTabs(t *testing.T) {
	s := start(t, "both")
	_, css := s.httpSessions(t, 2)
	a, b := css[0], css[1]
	_, outA, isErr := callOn(t, a, "browser_tab_new", map[string]any{"url": s.site + "/product.html?id=1"})
	if isErr {
		t.Fatalf("a's new tab: %v", outA)
	}
	_, outB, isErr := callOn(t, b, "browser_tab_new", map[string]any{"url": s.site + "/product.html?id=2"})
	if isErr {
		t.Fatalf("b's new tab: %v", outB)
	}
	tabA, tabB := outA["tab"].(string), outB["tab"].(string)
	for i := range 3 {
		for _, c := range []struct {
			cs       *mcp.ClientSession
			tab, who string
			id       int
		}{{a, tabA, "a", 10 + i}, {b, tabB, "b", 20 + i}} {
			url := fmt.Sprintf("%s/product.html?id=%d", s.site, c.id)
			tool, args := "browser_navigate", map[string]any{"url": url}
			if i == 1 {
				tool, args = "web", map[string]any{"action": "navigate", "url": url}
			}
			_, out, isErr := callOn(t, c.cs, tool, args)
			if isErr || out["tab"] != c.tab || out["url"] != url {
				t.Errorf("%s's %s: %v, want tab %s at %s", c.who, tool, out, c.tab, url)
			}
		}
	}
	for _, info := range s.node.Tabs() {
		switch info.Tab {
		case tabA:
			if !strings.Contains(info.URL, "id=12") {
				t.Errorf("a's tab is at %s", info.URL)
			}
		case tabB:
			if !strings.Contains(info.URL, "id=22") {
				t.Errorf("b's tab is at %s", info.URL)
			}
		}
	}
	// a selects b's tab: its choice, not b's.
	if _, out, isErr := callOn(t, a, "browser_tab_select", map[string]any{"tab": tabB}); isErr {
		t.Fatalf("a selects b's tab: %v", out)
	}
	if _, out, _ := callOn(t, b, "browser_tabs", nil); out["selected"] != tabB {
		t.Errorf("b's selected tab after a chose: %v", out["selected"])
	}
	// a ends; a new session has no choice of a's.
	_, outA, _ = callOn(t, a, "browser_tab_select", map[string]any{"tab": tabA})
	a.Close()
	_, more := s.httpSessions(t, 1)
	_, out, _ := callOn(t, more[0], "browser_tabs", nil)
	if sel, ok := out["selected"]; ok {
		t.Errorf("a new session has tab %v selected", sel)
	}
	first := out["tabs"].([]any)[0].(map[string]any)["tab"]
	if _, out, isErr := callOn(t, more[0], "browser_eval", map[string]any{"expression": "1"}); isErr || out["tab"] != first {
		t.Errorf("a new session's eval went to %v, want the first tab listed, %v", out["tab"], first)
	}
}

// Twenty calls at once on one tab, and across three tabs, from one
// session and from several: each answers in time, names the tab it
// acted on, and the race detector sees nothing. Close while calls are in
// flight: each still answers (ok or an error), none hangs.
func TestProbeConcurrentCalls(t *testing.T) {
	s := start(t, "both")
	tabs := []string{s.node.Tabs()[0].Tab}
	for range 2 {
		_, out, isErr := s.call(t, "browser_tab_new", map[string]any{"url": s.site + "/product.html?id=5"})
		if isErr {
			t.Fatalf("new tab: %v", out)
		}
		tabs = append(tabs, out["tab"].(string))
	}
	srv, css := s.httpSessions(t, 4)
	run := func(what string, n int, call func(i int) (cs *mcp.ClientSession, tool string, args map[string]any, tab string)) {
		counts := tally{}
		results := make(chan string, n)
		for i := range n {
			go func() {
				cs, tool, args, tab := call(i)
				o := (&session{cs: cs}).rawCall(tool, mustJSON(args))
				switch {
				case o.hung:
					results <- "hung"
				case o.rpcErr != nil:
					results <- "rpc"
				case tab != "" && o.out["tab"] != tab:
					results <- fmt.Sprintf("wrong tab %v, want %s", o.out["tab"], tab)
				case o.isError:
					results <- string(o.code)
				default:
					results <- "ok"
				}
			}()
		}
		for range n {
			r := <-results
			counts.add(r)
			if r == "hung" || r == "rpc" || strings.HasPrefix(r, "wrong tab") {
				t.Errorf("%s: %s", what, r)
			}
		}
		t.Logf("%s: %s", what, counts)
	}
	run("one tab", 20, func(i int) (*mcp.ClientSession, string, map[string]any, string) {
		args := map[string]any{"tab": tabs[0]}
		switch i % 4 {
		case 0:
			args["url"] = fmt.Sprintf("%s/product.html?id=%d", s.site, i)
			return css[i%4], "browser_navigate", args, tabs[0]
		case 1:
			return css[i%4], "browser_snapshot", args, tabs[0]
		case 2:
			args["expression"] = "document.title"
			return css[i%4], "browser_eval", args, tabs[0]
		}
		return s.cs, "web", map[string]any{"action": "evaluate", "text": "1", "target_id": tabs[0]}, tabs[0]
	})
	run("three tabs", 21, func(i int) (*mcp.ClientSession, string, map[string]any, string) {
		tab := tabs[i%3]
		return css[i%4], "browser_navigate", map[string]any{"tab": tab, "url": fmt.Sprintf("%s/product.html?id=%d", s.site, i)}, tab
	})
	// Close in flight: the calls wait in the page a while.
	counts := tally{}
	done := make(chan string, 12)
	for i := range 12 {
		go func() {
			o := (&session{cs: css[i%4]}).rawCall("browser_eval", mustJSON(map[string]any{"tab": tabs[i%3],
				"expression": "new Promise(r => setTimeout(() => r(1), 300))"}))
			switch {
			case o.hung:
				done <- "hung"
			case o.rpcErr != nil:
				done <- "rpc"
			case o.isError:
				done <- string(o.code)
			default:
				done <- "ok"
			}
		}()
	}
	srv.Close()
	for range 12 {
		r := <-done
		counts.add(r)
		if r == "hung" || r == "rpc" {
			t.Errorf("a call in flight at Close: %s", r)
		}
	}
	after := (&session{cs: css[0]}).rawCall("browser_navigate", mustJSON(map[string]any{"tab": tabs[0], "url": s.site + "/index.html"}))
	t.Logf("in flight at Close: %s; a navigate after Close: %s", counts, after)
	if after.hung || after.rpcErr != nil {
		t.Errorf("a navigate after Close: %s", after)
	}
}

// The page rule: a navigation's result carries the new page; an eval
// carries none (unless asked); a click that leaves the page
// carries the new one; and while another agent makes frames on the same
// tab all the time, a navigation's result carries the page it loaded,
// and the frame it names, read back, is at the URL navigated to.
func TestProbeFrameContentRule(t *testing.T) {
	s := start(t, "both")
	tab := s.node.Tabs()[0].Tab
	text, out, isErr := s.call(t, "browser_navigate", map[string]any{"url": s.site + "/index.html"})
	if isErr || pageOf(out)["snapshot"] == nil || !strings.Contains(text, "page (snapshot ") {
		t.Fatalf("navigate carries no page: %v", out)
	}
	evalText, out, _ := s.call(t, "browser_eval", map[string]any{"expression": "1"})
	if strings.Contains(evalText, "page (snapshot") || pageOf(out) != nil {
		t.Errorf("an eval at the same URL carries a page: %v", out)
	}
	m := refPattern.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no ref in %s", text)
	}
	page, _, _ := s.call(t, "browser_click", map[string]any{"selector": m[1]})
	if !strings.Contains(page, "page (snapshot") || !strings.Contains(page, "Product 123") {
		t.Errorf("a click that left the page carries %q", clip(page))
	}

	// Another agent makes frames all the time.
	ctx, cancel := context.WithCancel(context.Background())
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		for ctx.Err() == nil {
			s.agent.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1"}})
		}
	}()
	for i := range 6 {
		url := fmt.Sprintf("%s/product.html?id=%d", s.site, 700+i)
		page, out, isErr := s.call(t, "browser_navigate", map[string]any{"url": url})
		if isErr {
			t.Errorf("navigate %d: %v", i, out)
			continue
		}
		frame := int64(out["frame"].(float64))
		note, _ := out["note"].(string)
		if out["url"] != url || (!strings.Contains(page, fmt.Sprintf("Product %d", 700+i)) && note == "") {
			t.Errorf("navigate %d: url %v, frame %d, page %q, note %q", i, out["url"], frame, clip(page), note)
		}
		rctx, rcancel := context.WithTimeout(context.Background(), probeWait)
		res, err := s.cs.ReadResource(rctx, &mcp.ReadResourceParams{URI: mcpserver.FrameURI(tab, fmt.Sprint(frame))})
		rcancel()
		if err != nil {
			t.Errorf("read frame %d: %v", frame, err)
			continue
		}
		var f protocol.Frame
		if err := json.Unmarshal([]byte(res.Contents[0].Text), &f); err != nil || f.Sequence != frame || f.URL != url {
			t.Errorf("frame %d named by navigate %d is %d at %s (%v)", frame, i, f.Sequence, f.URL, err)
		}
	}
	cancel()
	<-busy
}

// Resource URIs a client may make up: each read is a JSON-RPC error
// (resource not found) in time, and the session and bus stay up.
func TestProbeResourceURIs(t *testing.T) {
	s := start(t, "both")
	tab := s.node.Tabs()[0].Tab
	counts := tally{}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	for _, uri := range []string{
		"framebus://tabs/../x", "framebus://tabs/" + tab + "/../../x/frames/latest", "framebus://tabs/%2e%2e/frames/latest",
		"framebus://tabs/NOSUCHTAB0123/frames/latest", "framebus://tabs/NOSUCHTAB0123/frames/1",
		"framebus://tabs/" + tab + "/frames/0", "framebus://tabs/" + tab + "/frames/-1", "framebus://tabs/" + tab + "/frames/99999999999",
		"framebus://tabs/" + tab + "/frames/99999999999999999999", "framebus://tabs/" + tab + "/frames/latest/x",
		"framebus://tabs/*/frames/latest", "framebus://tabs/>/frames/latest", "framebus://tabs/a.b/frames/1",
		"framebus://tabs/" + tab, "framebus://x", "http://127.0.0.1/", "",
	} {
		rctx, rcancel := context.WithTimeout(ctx, probeWait)
		_, err := s.cs.ReadResource(rctx, &mcp.ReadResourceParams{URI: uri})
		hung := rctx.Err() != nil
		rcancel()
		switch {
		case hung:
			counts.add("hung")
			t.Errorf("read %s: hung", clip(uri))
		case err == nil:
			counts.add("read")
			t.Errorf("read %s: answered", clip(uri))
		default:
			counts.add("refused")
		}
		if o := s.rawCall("browser_tabs", nil); o.isError || o.rpcErr != nil || o.hung {
			t.Fatalf("after reading %s: browser_tabs: %s", clip(uri), o)
		}
	}
	// Subscribing to a bad URI is refused by the server's handler, but
	// under the protocol version this SDK negotiates (subscriptions/listen)
	// the refusal does not reach the client's Subscribe: not asserted.
	t.Logf("bad resource URIs: %s", counts)
}

// Subscriptions by the hundred: a session of the same server
// subscribing to 300 made-up tab ids must not stop the updates of the
// tab another session follows; and an unsubscribed session hears no
// more.
func TestProbeSubscriptionsByTheHundred(t *testing.T) {
	s := start(t, "both")
	tab := s.node.Tabs()[0].Tab
	uri := mcpserver.LatestFrameURI(tab)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	updates := make(chan string, 64)
	_, css := s.httpSessions(t, 2, updates)
	watcher := &session{cs: css[0], updates: updates}
	attacker := css[1]
	if err := watcher.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for i := range 300 {
		if err := attacker.Subscribe(ctx, &mcp.SubscribeParams{URI: mcpserver.LatestFrameURI(fmt.Sprintf("MADEUP%04d", i))}); err == nil {
			accepted++
		}
	}
	t.Logf("subscriptions to 300 made-up tabs: %d accepted", accepted)
	if _, _, isErr := s.call(t, "browser_eval", map[string]any{"expression": "1", "tab": tab}); isErr {
		t.Fatal("eval failed")
	}
	select {
	case got := <-watcher.updates:
		if got != uri {
			t.Errorf("heard of %s, want %s", got, uri)
		}
	case <-time.After(probeWait):
		t.Errorf("after 300 subscriptions to made-up tabs, the subscriber of %s hears of no new frame", tab)
	}

	// Unsubscribed, the watcher hears no more of this tab: the next
	// update it gets is of another tab it subscribed to after.
	if err := watcher.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	_, out, isErr := s.call(t, "browser_tab_new", map[string]any{"url": s.site + "/index.html"})
	if isErr {
		t.Fatalf("new tab: %v", out)
	}
	other := mcpserver.LatestFrameURI(out["tab"].(string))
	if err := watcher.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: other}); err != nil {
		t.Fatal(err)
	}
	s.call(t, "browser_eval", map[string]any{"expression": "1", "tab": tab})
	s.call(t, "browser_eval", map[string]any{"expression": "1", "tab": out["tab"].(string)})
	for {
		select {
		case got := <-watcher.updates:
			if got == uri {
				t.Fatalf("unsubscribed from %s, heard of it", uri)
			}
			if got == other {
				return
			}
		case <-time.After(probeWait):
			t.Fatalf("no update of %s", other)
		}
	}
}

// based_on_sequence on a web action that no frame guards (status,
// list_pages, the lifecycle, http, search) is dropped without a word:
// the model believes its call was guarded. It is bad_request naming
// the field.
func TestProbeWebUnguardableSequence(t *testing.T) {
	s := start(t, "web")
	s.runProbes(t, "based_on_sequence where nothing is guarded", []probeCase{
		{"web", `{"action":"status","based_on_sequence":1}`, badReq},
		{"web", `{"action":"list_pages","based_on_sequence":1}`, badReq},
		{"web", `{"action":"launch","based_on_sequence":1}`, badReq},
		{"web", `{"resource":"http","action":"fetch","url":` + jsonString(s.site+"/index.html") + `,"based_on_sequence":1}`, badReq},
	})
}
