package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/framebus/framebus/protocol"
)

// toolFunc carries out a tool call from its arguments.
type toolFunc func(ctx context.Context, ss *mcp.ServerSession, args map[string]json.RawMessage) *mcp.CallToolResult

// addTool adds a tool whose arguments are checked against props (no
// others taken) before fn runs.
func (s *Server) addTool(name, description string, readOnly bool, props schema, required []string, fn toolFunc) {
	if required == nil {
		// "required": null is no JSON Schema: clients that check the
		// schemas (the TypeScript SDK) refuse the whole tools/list.
		required = []string{}
	}
	s.mcp.AddTool(&mcp.Tool{
		Name: name, Description: description,
		InputSchema: schema{"type": "object", "properties": props, "required": required, "additionalProperties": false},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, OpenWorldHint: ptr(true)},
	}, guarded(func(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
		args, err := toolArgs(req.Params.Arguments)
		if err == nil {
			err = onlyArgs(args, props, required)
		}
		if err != nil {
			return failure(err, "", 0)
		}
		return fn(withRoundTrip(ctx, req), req.Session, args)
	}))
}

// onlyArgs refuses arguments the tool does not take, of another type
// than it takes, and missing ones.
func onlyArgs(args map[string]json.RawMessage, props schema, required []string) error {
	for name, raw := range args {
		p, ok := props[name].(schema)
		if !ok {
			return protocol.Errorf(protocol.CodeBadRequest, "%s is not a parameter of this tool", name)
		}
		if want, ok := ofType(raw, p); !ok {
			return protocol.Errorf(protocol.CodeBadRequest, "%s: want %s, got %s", name, want, capMessage(string(raw)))
		}
	}
	for _, name := range required {
		if _, ok := args[name]; !ok {
			return protocol.Errorf(protocol.CodeBadRequest, "%s: missing; %s", name, props[name].(schema)["description"])
		}
	}
	return nil
}

// ofType says whether a JSON value is what a parameter's schema says
// (its type, a name or a list of them; an array's items; an object's
// values), and names what it wants.
func ofType(raw json.RawMessage, p schema) (string, bool) {
	names, ok := p["type"].([]string)
	if !ok {
		name, _ := p["type"].(string)
		names = []string{name}
	}
	want := strings.Join(names, " or ")
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return want, false
	}
	for _, name := range names {
		switch v := v.(type) {
		case string:
			ok = name == "string"
		case bool:
			ok = name == "boolean"
		case float64:
			ok = name == "number" || (name == "integer" && v == math.Trunc(v))
		case map[string]any:
			ok = name == "object" && allOfType(v, p["additionalProperties"])
		case []any:
			ok = name == "array" && allOfType(v, p["items"])
		}
		if ok {
			return "", true
		}
	}
	if inner, found := p["items"].(schema); found {
		want += " of " + fmt.Sprint(inner["type"])
	}
	if inner, found := p["additionalProperties"].(schema); found {
		want += " of " + fmt.Sprint(inner["type"]) + " values"
	}
	return want, false
}

// allOfType says whether every value of a list or object is of the
// schema's type (any, without one).
func allOfType(values, inner any) bool {
	in, ok := inner.(schema)
	if !ok {
		return true
	}
	var each []any
	switch v := values.(type) {
	case []any:
		each = v
	case map[string]any:
		for _, x := range v {
			each = append(each, x)
		}
	}
	for _, x := range each {
		raw, _ := json.Marshal(x)
		if _, ok := ofType(raw, in); !ok {
			return false
		}
	}
	return true
}

var (
	profileProp = schema{"type": "string", "description": "the browser profile (default: the node's managed one, \"default\")"}
	tabProp     = schema{"type": "string", "description": "the tab's id (as browser_tabs lists it)"}
)

// lifecycleWait bounds a lifecycle request: launch starts a browser.
const lifecycleWait = 90 * time.Second

// addTabTools adds the tools of tabs and of the browser's lifecycle.
func (s *Server) addTabTools() {
	s.addTool("browser_tabs", "list the open tabs on the bus: id, URL, title, current frame, node and profile; the tab this session works in is marked selected",
		true, schema{"profile": profileProp}, nil, s.listTabs)
	s.addTool("browser_tab_new", "open a tab (at url, else blank) and work in it from now on; answers its id and frame",
		false, schema{"url": schema{"type": "string", "description": "the URL to open (default about:blank)"}, "profile": profileProp}, nil, s.newTab)
	s.addTool("browser_tab_select", "work in this tab from now on (the action tools' default tab)",
		true, schema{"tab": tabProp}, []string{"tab"}, s.chooseTab)
	s.addTool("browser_tab_close", "close a tab (default: the one this session works in)",
		false, schema{"tab": tabProp}, nil, s.closeTab)
	s.addTool("browser_sessions", "list the per-domain sessions on the bus: id, domain, node, profile and tabs",
		true, schema{}, nil, func(ctx context.Context, _ *mcp.ServerSession, _ map[string]json.RawMessage) *mcp.CallToolResult {
			ctx, cancel := context.WithTimeout(ctx, listTimeout)
			defer cancel()
			list, err := s.bc.Sessions(ctx)
			if err != nil {
				return failure(noNode(err), "", 0)
			}
			return jsonResult(list)
		})
	s.addTool("browser_session_start", "start (or rejoin) the session of a domain: a browser profile of its own, kept across restarts, so a login there lasts; works in its tab from now on",
		false, schema{"domain": schema{"type": "string", "description": "the domain (example.com)"},
			"url": schema{"type": "string", "description": "the URL its tab opens (default https://<domain>/)"}}, []string{"domain"}, s.startSession)
	s.addTool("browser_session_stop", "stop a session, saving its browser state (cookies, storage)",
		false, schema{"session": schema{"type": "string", "description": "the session's id (browser_sessions lists them)"}}, []string{"session"},
		func(ctx context.Context, _ *mcp.ServerSession, args map[string]json.RawMessage) *mcp.CallToolResult {
			id, err := takeString(args, "session")
			if err != nil {
				return failure(err, "", 0)
			}
			ctx, cancel := context.WithTimeout(ctx, lifecycleWait)
			defer cancel()
			reply, err := s.bc.StopSession(ctx, id)
			if err != nil {
				return failure(noNode(err), "", 0)
			}
			return jsonResult(reply)
		})
	for _, op := range []struct{ name, op, what string }{
		{"browser_status", protocol.OpStatus, "each profile's browser: running or not, its page count, its DevTools endpoint; never an error"},
		{"browser_launch", protocol.OpLaunch, "start a profile's browser (nothing when it runs); answers the status"},
		{"browser_connect", protocol.OpConnect, "connect an attach profile to the browser it names (a browser framebus does not start); answers the status"},
		{"browser_close", protocol.OpClose, "stop a profile's browser and close its tabs (an attach profile only disconnects); answers the status"},
	} {
		s.addTool(op.name, op.what, op.op == protocol.OpStatus, schema{"profile": profileProp}, nil,
			func(ctx context.Context, _ *mcp.ServerSession, args map[string]json.RawMessage) *mcp.CallToolResult {
				profile, err := takeString(args, "profile")
				if err != nil {
					return failure(err, "", 0)
				}
				if op.op == protocol.OpStatus {
					return jsonResult(s.status(ctx, profile))
				}
				var reply protocol.StatusReply
				if err := s.lifecycle(ctx, profile, op.op, nil, &reply); err != nil {
					return failure(err, "", 0)
				}
				return jsonResult(reply)
			})
	}
}

// lifecycle sends a profile's lifecycle request.
func (s *Server) lifecycle(ctx context.Context, profile, op string, req, reply any) error {
	if profile != "" && !protocol.ValidProfileName(profile) {
		return protocol.Errorf(protocol.CodeBadRequest, "profile: %q is not a profile name (letters, digits, '-' and '_' in dot-separated labels)", profile)
	}
	ctx, cancel := context.WithTimeout(ctx, lifecycleWait)
	defer cancel()
	return noNode(s.bc.Lifecycle(ctx, profile, op, req, reply))
}

// status is every node's profiles' status (of profile, when given). It
// never fails (ADR-006): a bus that does not answer is a status of no
// profiles.
func (s *Server) status(ctx context.Context, profile string) protocol.StatusReply {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	reply, err := s.bc.Status(ctx)
	if err != nil {
		return protocol.StatusReply{Profiles: []protocol.ProfileStatus{}}
	}
	if profile != "" {
		only := []protocol.ProfileStatus{} // [] in JSON, not null
		for _, p := range reply.Profiles {
			if p.Name == profile {
				only = append(only, p)
			}
		}
		reply.Profiles = only
	}
	return reply
}

// tabsListing is browser_tabs' answer.
type tabsListing struct {
	Tabs     []protocol.TabInfo `json:"tabs"`
	Selected string             `json:"selected,omitempty"`
}

func (s *Server) listTabs(ctx context.Context, ss *mcp.ServerSession, args map[string]json.RawMessage) *mcp.CallToolResult {
	profile, err := takeString(args, "profile")
	if err != nil {
		return failure(err, "", 0)
	}
	return s.pages(ctx, ss, profile)
}

// pages lists the tabs of profile ("": every tab).
func (s *Server) pages(ctx context.Context, ss *mcp.ServerSession, profile string) *mcp.CallToolResult {
	if profile != "" {
		if err := protocol.CheckProfileName(profile); err != nil {
			return failure(err, "", 0)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var list protocol.TabList
	var err error
	if profile == "" {
		list, err = s.bc.Tabs(ctx)
	} else {
		list, err = s.bc.Pages(ctx, "", profile)
	}
	if err != nil {
		return failure(noNode(err), "", 0)
	}
	return jsonResult(tabsListing{Tabs: list.Tabs, Selected: s.sessionTab(ss)})
}

func (s *Server) newTab(ctx context.Context, ss *mcp.ServerSession, args map[string]json.RawMessage) *mcp.CallToolResult {
	url, err := takeString(args, "url")
	if err != nil {
		return failure(err, "", 0)
	}
	profile, err := takeString(args, "profile")
	if err != nil {
		return failure(err, "", 0)
	}
	var reply protocol.TabReply
	if err := s.lifecycle(ctx, profile, protocol.OpNewTab, protocol.NewTabRequest{URL: url}, &reply); err != nil {
		return failure(err, "", 0)
	}
	s.selectTab(ss, reply.Tab.Tab)
	t := reply.Tab
	return actionOutcome{OK: true, Tab: t.Tab, Sequence: t.Sequence, URL: t.URL, Title: t.Title}.result()
}

func (s *Server) chooseTab(ctx context.Context, ss *mcp.ServerSession, args map[string]json.RawMessage) *mcp.CallToolResult {
	tab, err := takeString(args, "tab")
	if err != nil {
		return failure(err, "", 0)
	}
	info, err := s.findTab(ctx, tab)
	if err != nil {
		return failure(err, tab, 0)
	}
	s.selectTab(ss, tab)
	return actionOutcome{OK: true, Tab: tab, Sequence: info.Sequence, URL: info.URL, Title: info.Title}.result()
}

// findTab is tab as the nodes list it; tab_not_found naming the open
// tabs when none does.
func (s *Server) findTab(ctx context.Context, tab string) (protocol.TabInfo, error) {
	if err := protocol.CheckTabID(tab); err != nil {
		return protocol.TabInfo{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	list, err := s.bc.Tabs(ctx)
	if err != nil {
		return protocol.TabInfo{}, noNode(err)
	}
	var open []string
	for _, t := range list.Tabs {
		if t.Tab == tab {
			return t, nil
		}
		open = append(open, t.Tab)
	}
	return protocol.TabInfo{}, protocol.Errorf(protocol.CodeTabNotFound, "no tab %s on the bus (open: %v)", tab, open)
}

func (s *Server) closeTab(ctx context.Context, ss *mcp.ServerSession, args map[string]json.RawMessage) *mcp.CallToolResult {
	tab, err := takeString(args, "tab")
	if err != nil {
		return failure(err, "", 0)
	}
	if tab == "" {
		if tab, _, err = s.defaultTab(ctx, ss, ""); err != nil {
			return failure(err, "", 0)
		}
	}
	info, err := s.findTab(ctx, tab)
	if err != nil {
		return failure(err, tab, 0)
	}
	cctx, cancel := context.WithTimeout(ctx, lifecycleWait)
	defer cancel()
	closed, err := s.bc.CloseTab(cctx, info.Profile, tab)
	if err != nil {
		return failure(noNode(err), tab, 0)
	}
	s.forget(tab)
	if s.sessionTab(ss) == tab {
		s.selectTab(ss, "")
	}
	return jsonResult(map[string]any{"ok": true, "closed": closed})
}

func (s *Server) startSession(ctx context.Context, ss *mcp.ServerSession, args map[string]json.RawMessage) *mcp.CallToolResult {
	domain, err := takeString(args, "domain")
	if err != nil {
		return failure(err, "", 0)
	}
	url, err := takeString(args, "url")
	if err != nil {
		return failure(err, "", 0)
	}
	ctx, cancel := context.WithTimeout(ctx, lifecycleWait)
	defer cancel()
	reply, err := s.bc.StartSession(ctx, protocol.SessionStartRequest{Domain: domain, URL: url})
	if err != nil {
		return failure(noNode(err), "", 0)
	}
	if len(reply.Tabs) > 0 {
		s.selectTab(ss, reply.Tabs[0].Tab)
	}
	return jsonResult(reply)
}
