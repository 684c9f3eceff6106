package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/framebus/framebus/protocol"
)

// The web tool is ADR-006's: one tool, resource http (fetch), search
// (query) or browser (its actions and lifecycle), with the ADR's input
// fields, status shape and error wording. framebus adds
// based_on_sequence (and says which frame every browser result is).

// webInput is the ADR's WebDomainInput, with based_on_sequence.
type webInput struct {
	Resource string `json:"resource,omitempty"`
	Action   string `json:"action"`

	URL     string            `json:"url,omitempty"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`

	Query  string `json:"query,omitempty"`
	Engine string `json:"engine,omitempty"`
	Limit  int    `json:"limit,omitempty"`

	Profile  string `json:"profile,omitempty"`
	Ref      string `json:"ref,omitempty"`
	Selector string `json:"selector,omitempty"`
	Text     string `json:"text,omitempty"`
	Value    string `json:"value,omitempty"`
	Output   string `json:"output,omitempty"`
	Timeout  int    `json:"timeout,omitempty"`
	TargetID string `json:"target_id,omitempty"`

	BasedOnSequence int64 `json:"based_on_sequence,omitempty"`
}

// The web tool's resources and their actions (ADR-006 section 1; connect
// is framebus's: an attach profile's browser is connected, not launched).
var webActions = map[string][]string{
	protocol.ResourceHTTP:   {"fetch"},
	protocol.ResourceSearch: {"query"},
	"browser": {"navigate", "snapshot", "click", "fill", "type", "screenshot", "text", "evaluate", "wait", "scroll",
		"hover", "select", "back", "forward", "reload", "status", "launch", "close", "list_pages", "connect"},
}

// lifecycleActions are the browser's actions on a profile, not a tab.
var lifecycleActions = []string{"status", "launch", "close", "connect", "list_pages"}

var webResources = []string{protocol.ResourceHTTP, protocol.ResourceSearch, "browser"}

func webSchema() schema {
	var actions []string
	for _, r := range webResources {
		actions = append(actions, webActions[r]...)
	}
	str := func(d string) schema { return schema{"type": "string", "description": d} }
	return schema{
		"type":     "object",
		"required": []string{"action"},
		"properties": schema{
			"resource":          schema{"type": "string", "enum": webResources, "description": "http (a plain request), search (a web search) or browser (a real tab; default)"},
			"action":            schema{"type": "string", "enum": actions, "description": "http: fetch; search: query; browser: " + strings.Join(webActions["browser"], ", ")},
			"url":               str("fetch, navigate: the URL"),
			"method":            schema{"type": "string", "enum": protocol.FetchMethods, "description": "fetch: the HTTP method (default GET)"},
			"headers":           schema{"type": "object", "additionalProperties": schema{"type": "string"}, "description": "fetch: request headers"},
			"body":              str("fetch: the request body"),
			"query":             str("query: what to search for"),
			"engine":            schema{"type": "string", "enum": protocol.SearchEngines, "description": "query: the search engine (default: the node's)"},
			"limit":             schema{"type": "integer", "minimum": 1, "description": "query: at most this many results"},
			"profile":           str("browser: the browser profile (default \"default\"); status without it lists every profile"),
			"ref":               str("click, fill, type, hover, select, scroll, wait, snapshot, text, screenshot: the element's ref from a snapshot (e5)"),
			"selector":          str("the element by CSS selector, instead of ref"),
			"text":              str("fill, type: the text; evaluate: the JavaScript expression; wait: text to wait for on the page"),
			"value":             str("select: the option's value or text; scroll: by x,y (0,400); wait: visible, hidden or gone with ref/selector, networkidle without"),
			"output":            schema{"type": "string", "enum": []string{"text", "json", "full"}, "description": "snapshot: text (default) or json; screenshot: full for the whole page"},
			"timeout":           schema{"type": "integer", "minimum": 0, "description": "the action's deadline in milliseconds"},
			"target_id":         str("browser: the tab's id (list_pages lists them; default: the tab this session works in, else the profile's first)"),
			"based_on_sequence": schema{"type": "integer", "minimum": 1, "description": "browser: run only while this frame (a result's sequence) is the tab's current one; else stale_frame and nothing runs"},
		},
		"additionalProperties": false,
	}
}

const webDescription = `Web access in three resources:
- web(resource: http, action: fetch, url: "https://api.example.com") - a plain HTTP request, no browser
- web(resource: search, action: query, query: "golang tutorials") - a web search: title, URL, snippet
- web(resource: browser, action: status) - check first: is the profile's browser running?
- web(resource: browser, action: launch, profile: "default") - start it when status says it is not
- web(resource: browser, action: navigate, url: "https://example.com") - answers the page's snapshot with refs
- web(resource: browser, action: click, ref: "e5") - then fill, type, select, hover, scroll, wait, text, evaluate, screenshot, back, forward, reload
- web(resource: browser, action: list_pages) and target_id to pick a tab; web(resource: browser, action: close) when done
Every browser result names its tab and frame; pass based_on_sequence to act only if the page is still that frame.`

func (s *Server) addWebTool() {
	s.mcp.AddTool(&mcp.Tool{
		Name: "web", Description: webDescription, InputSchema: webSchema(),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
	}, guarded(func(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
		in, err := decodeWebInput(req.Params.Arguments)
		if err != nil {
			return failure(err, "", 0)
		}
		return s.web(ctx, req.Session, in)
	}))
}

// decodeWebInput reads the web tool's arguments strictly: an unknown
// field is named, not ignored.
func decodeWebInput(raw json.RawMessage) (webInput, error) {
	var in webInput
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, protocol.Errorf(protocol.CodeBadRequest, "web: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	in.Resource = cmp.Or(in.Resource, "browser")
	if in.Profile != "" {
		if err := protocol.CheckProfileName(in.Profile); err != nil {
			return in, err
		}
	}
	actions, ok := webActions[in.Resource]
	switch {
	case !ok:
		return in, protocol.Errorf(protocol.CodeBadRequest, "resource: %q is not a resource of the web tool (http, search or browser)", in.Resource)
	case in.Action == "":
		return in, protocol.Errorf(protocol.CodeBadRequest, "action: missing; %s takes %s", in.Resource, strings.Join(actions, ", "))
	case !slices.Contains(actions, in.Action):
		return in, protocol.Errorf(protocol.CodeBadRequest, "action: %q is not an action of resource %s (%s)", in.Action, in.Resource, strings.Join(actions, ", "))
	}
	return in, nil
}

func (s *Server) web(ctx context.Context, ss *mcp.ServerSession, in webInput) *mcp.CallToolResult {
	switch {
	case in.BasedOnSequence < 0:
		return failure(protocol.Errorf(protocol.CodeBadRequest, "based_on_sequence: %d is not a frame sequence (1 or more)", in.BasedOnSequence), in.TargetID, 0)
	case in.BasedOnSequence > 0 && (in.Resource != "browser" || slices.Contains(lifecycleActions, in.Action)):
		return failure(protocol.Errorf(protocol.CodeBadRequest, "based_on_sequence: %s %s changes no tab's frame; it guards the browser's actions on a tab only", in.Resource, in.Action), in.TargetID, 0)
	}
	switch in.Resource {
	case protocol.ResourceHTTP:
		return s.webResource(ctx, "fetch", map[string]any{"url": in.URL, "method": in.Method, "headers": in.Headers, "body": in.Body, "timeout": in.Timeout})
	case protocol.ResourceSearch:
		return s.webResource(ctx, "search", map[string]any{"query": in.Query, "engine": in.Engine, "limit": in.Limit, "timeout": in.Timeout})
	}
	switch in.Action {
	case "status":
		return jsonResult(adrStatus(s.status(ctx, in.Profile)))
	case "launch", "close", "connect":
		var reply protocol.StatusReply
		if err := s.lifecycle(ctx, in.Profile, in.Action, nil, &reply); err != nil {
			return failure(adrLifecycleError(in, err), "", 0)
		}
		return jsonResult(adrStatus(reply))
	case "list_pages":
		return s.pages(ctx, ss, cmp.Or(in.Profile, protocol.DefaultProfile))
	}
	typ, fields, err := browserAction(in)
	if err != nil {
		return failure(err, in.TargetID, 0)
	}
	args := map[string]json.RawMessage{}
	for k, v := range fields {
		if isZero(v) {
			continue
		}
		args[k], _ = json.Marshal(v)
	}
	if in.BasedOnSequence > 0 {
		args[basedOnParam], _ = json.Marshal(in.BasedOnSequence)
	}
	plan, err := planFor(typ, args)
	if err != nil {
		return failure(err, in.TargetID, 0)
	}
	run := func(tab string) (actionOutcome, error) { return s.runPlan(ctx, ss, tab, plan, s.page) }
	var out actionOutcome
	if in.TargetID != "" {
		if err := protocol.CheckTabID(in.TargetID); err != nil {
			return failure(protocol.Errorf(protocol.CodeBadRequest, "target_id: not a tab id (list_pages lists them): %v", err), "", 0)
		}
		out, err = run(in.TargetID)
	} else {
		out, err = s.onChosenTab(ss, func() (string, bool, error) { return s.webTab(ctx, ss, in) }, run)
	}
	if gone(err) {
		// The tab went with its browser: say so as ADR-006 does.
		profile := cmp.Or(in.Profile, protocol.DefaultProfile)
		if st := s.status(ctx, profile); len(st.Profiles) > 0 && !st.Profiles[0].Running {
			err = notRunning(profile, st.Profiles[0].Driver)
		}
	}
	return render(typ, out, err)
}

// webResource runs an http or search action from the web tool's fields.
func (s *Server) webResource(ctx context.Context, typ string, fields map[string]any) *mcp.CallToolResult {
	args := map[string]json.RawMessage{}
	for k, v := range fields {
		if !isZero(v) {
			args[k], _ = json.Marshal(v)
		}
	}
	plan, err := planFor(typ, args)
	if err != nil {
		return failure(err, "", 0)
	}
	return s.runResource(ctx, plan.Actions[0])
}

func isZero(v any) bool {
	switch v := v.(type) {
	case string:
		return v == ""
	case int:
		return v == 0
	case bool:
		return !v
	case map[string]string:
		return len(v) == 0
	}
	return v == nil
}

// browserAction maps a browser action of the web tool to framebus's
// action and its fields.
func browserAction(in webInput) (string, map[string]any, error) {
	element := cmp.Or(in.Ref, in.Selector)
	if in.Ref != "" && in.Selector != "" {
		return "", nil, protocol.Errorf(protocol.CodeBadRequest, "%s: give ref or selector, not both", in.Action)
	}
	f := map[string]any{"timeout": in.Timeout}
	need := func(what string) error {
		if element == "" {
			return protocol.Errorf(protocol.CodeBadRequest, "%s: ref (from a snapshot) or selector missing; %s", in.Action, what)
		}
		return nil
	}
	switch in.Action {
	case "navigate":
		f["url"] = in.URL
		if in.URL == "" {
			return "", nil, protocol.Errorf(protocol.CodeBadRequest, "navigate: url missing")
		}
		return "navigate", f, nil
	case "back", "forward", "reload":
		return in.Action, f, nil
	case "snapshot":
		f["selector"] = element
		if in.Output == "json" {
			f["format"] = "json"
		}
		return "snapshot", f, nil
	case "click", "hover":
		f["selector"] = element
		return in.Action, f, need("which element to " + in.Action)
	case "fill":
		f["selector"], f["text"] = element, cmp.Or(in.Text, in.Value)
		return "fill", f, need("which field to fill")
	case "type":
		f["selector"], f["text"] = element, cmp.Or(in.Text, in.Value)
		return "type", f, nil
	case "select":
		f["selector"], f["value"] = element, cmp.Or(in.Value, in.Text)
		return "select", f, need("which <select> to choose in")
	case "screenshot":
		f["selector"], f["fullPage"] = element, in.Output == "full"
		return "screenshot", f, nil
	case "text":
		f["selector"] = element
		return "text", f, nil
	case "evaluate":
		f["expression"] = cmp.Or(in.Text, in.Value)
		return "eval", f, nil
	case "scroll":
		f["selector"], f["by"] = element, in.Value
		return "scroll", f, nil
	case "wait":
		return waitAction(in, element, f)
	}
	return "", nil, protocol.Errorf(protocol.CodeBadRequest, "action: %q is not a browser action", in.Action)
}

// waitAction: wait for an element (ref or selector; value visible,
// hidden or gone), for text on the page, or for the load (value
// networkidle: and a quiet network).
func waitAction(in webInput, element string, f map[string]any) (string, map[string]any, error) {
	switch {
	case element != "":
		f["selector"] = element
		switch in.Value {
		case "":
		case "visible", "hidden", "gone":
			f[in.Value] = true
		default:
			return "", nil, protocol.Errorf(protocol.CodeBadRequest, "wait: value %q is not visible, hidden or gone", in.Value)
		}
		return "wait-for", f, nil
	case in.Text != "":
		// Polled in the page until the text shows, or until the action's
		// deadline, when the poll stops too (the action answers timeout).
		text, _ := json.Marshal(in.Text)
		limit := protocol.DefaultActionTimeout.Milliseconds()
		if in.Timeout > 0 {
			limit = int64(in.Timeout)
		}
		f["expression"] = fmt.Sprintf(`new Promise(r => { const t = %s, end = Date.now() + %d; const c = () => (document.body && document.body.innerText.includes(t)) ? r(true) : Date.now() < end && setTimeout(c, 100); c(); })`, text, limit)
		return "eval", f, nil
	case in.Value == "networkidle":
		f["networkIdle"] = true
	case in.Value != "":
		return "", nil, protocol.Errorf(protocol.CodeBadRequest, "wait: value %q needs a ref or selector (visible, hidden, gone), or is networkidle", in.Value)
	}
	return "ready", f, nil
}

// webTab is the tab a browser action of the web tool acts on: the
// session's, else the profile's first. With none open, a running
// profile opens one; a stopped one is the ADR's error.
func (s *Server) webTab(ctx context.Context, ss *mcp.ServerSession, in webInput) (tab string, chosen bool, err error) {
	profile := cmp.Or(in.Profile, protocol.DefaultProfile)
	if tab := s.sessionTab(ss); tab != "" && in.Profile == "" {
		return tab, true, nil
	}
	tab, chosen, err = s.defaultTab(ctx, ss, profile)
	if protocol.CodeOf(err) != protocol.CodeTabNotFound {
		return tab, chosen, err
	}
	st := s.status(ctx, profile)
	if len(st.Profiles) == 0 {
		return "", false, protocol.Errorf(protocol.CodeProfileNotFound, "No profile %q on the bus. Use `web(resource: browser, action: status)` to list the profiles.", profile)
	}
	if !st.Profiles[0].Running {
		return "", false, notRunning(profile, st.Profiles[0].Driver)
	}
	var reply protocol.TabReply
	if err := s.lifecycle(ctx, profile, protocol.OpNewTab, protocol.NewTabRequest{}, &reply); err != nil {
		return "", false, err
	}
	s.selectTab(ss, reply.Tab.Tab)
	return reply.Tab.Tab, false, nil
}

// notRunning is ADR-006's error for an action on a profile whose
// browser does not run.
func notRunning(profile, driver string) error {
	op := "launch"
	if driver == protocol.DriverAttach {
		op = "connect"
	}
	return protocol.Errorf(protocol.CodeBrowserNotRunning,
		"Browser not running for profile '%s'. Use `web(resource: browser, action: %s, profile: \"%s\")` to start it.", profile, op, profile)
}

// adrLifecycleError words a lifecycle failure as ADR-006 does.
func adrLifecycleError(in webInput, err error) error {
	profile := cmp.Or(in.Profile, protocol.DefaultProfile)
	if protocol.CodeOf(err) == protocol.CodeNotLaunchable {
		return protocol.Errorf(protocol.CodeNotLaunchable,
			"Cannot launch the %s profile — it attaches to a browser framebus does not start. Ensure that browser runs with remote debugging, then use `web(resource: browser, action: connect, profile: \"%s\")`.", profile, profile)
	}
	return err
}

// adrProfile is a profile's status in ADR-006's shape.
type adrProfile struct {
	Name      string `json:"name"`
	Driver    string `json:"driver"`
	Running   bool   `json:"running"`
	PageCount int    `json:"page_count"`
	CDPURL    string `json:"cdp_url,omitempty"`
	Node      string `json:"node,omitempty"`
}

type adrStatusReply struct {
	Profiles []adrProfile `json:"profiles"`
}

func adrStatus(r protocol.StatusReply) adrStatusReply {
	out := adrStatusReply{Profiles: []adrProfile{}}
	for _, p := range r.Profiles {
		out.Profiles = append(out.Profiles, adrProfile{Name: p.Name, Driver: p.Driver, Running: p.Running,
			PageCount: p.PageCount, CDPURL: cmp.Or(p.Endpoint, p.Attach), Node: p.Node})
	}
	return out
}
