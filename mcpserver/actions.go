package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
)

// addActionTools adds a tool per declared action, then the tab and
// lifecycle tools.
func (s *Server) addActionTools() {
	for _, spec := range protocol.ActionSpecs() {
		readOnly := !spec.Mutates
		s.mcp.AddTool(&mcp.Tool{
			Name:        ActionToolName(spec),
			Description: actionDescription(spec),
			InputSchema: actionSchema(spec),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, OpenWorldHint: ptr(true)},
		}, guarded(func(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
			args, err := toolArgs(req.Params.Arguments)
			if err != nil {
				return failure(err, "", 0)
			}
			return s.runAction(ctx, req.Session, spec, args)
		}))
	}
	s.addTabTools()
}

func ptr[T any](v T) *T { return &v }

// guarded makes a tool's handler: a panic in it is the call's internal
// error, never the end of the server (and of every session it serves).
func guarded(fn func(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				res = failure(protocol.Errorf(protocol.CodeInternal, "%s: %v", req.Params.Name, p), "", 0)
			}
		}()
		return fn(ctx, req), nil
	}
}

// actionDescription is the tool's description: the action's summary,
// and how its result reads.
func actionDescription(spec protocol.ActionSpec) string {
	d := spec.Summary
	switch {
	case spec.Resource != "":
		d += ". Touches no tab; needs no basedOnSequence."
	case spec.Mutates:
		d += ". Makes a new frame; the result names it and, when the URL changed, carries the new page's snapshot."
	default:
		d += ". Reads the tab without changing it."
	}
	return d
}

// toolArgs reads a tool call's arguments: a JSON object (none is {}).
func toolArgs(raw json.RawMessage) (map[string]json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return args, nil
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "arguments: want a JSON object of the tool's parameters: %v", err)
	}
	return args, nil
}

// takeString removes a string argument from args.
func takeString(args map[string]json.RawMessage, name string) (string, error) {
	raw, ok := args[name]
	if !ok {
		return "", nil
	}
	delete(args, name)
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", protocol.Errorf(protocol.CodeBadRequest, "%s: want a string, got %s", name, raw)
	}
	return v, nil
}

// planFor encodes a one-action plan from a tool's arguments and checks
// it as a node would (DecodePlan: unknown fields, kinds, combinations).
// The frames it makes carry their page as a snapshot when the URL
// changed, what the result shows the model.
func planFor(typ string, args map[string]json.RawMessage) ([]byte, protocol.Plan, error) {
	action := map[string]json.RawMessage{}
	for k, v := range args {
		action[k] = v
	}
	action["type"], _ = json.Marshal(typ)
	data, err := json.Marshal(map[string]any{"fullPage": "snapshot", "fullPagePolicy": "url-change", "action": action})
	if err != nil {
		return nil, protocol.Plan{}, protocol.Errorf(protocol.CodeBadRequest, "arguments: %v", err)
	}
	plan, err := protocol.DecodePlan(data)
	if err != nil {
		return nil, protocol.Plan{}, err
	}
	return data, plan, nil
}

// runAction carries out an action tool's call: a resource's request, or
// a one-action plan to the tab.
func (s *Server) runAction(ctx context.Context, ss *mcp.ServerSession, spec protocol.ActionSpec, args map[string]json.RawMessage) *mcp.CallToolResult {
	tab := ""
	if spec.Resource == "" {
		var err error
		if tab, err = takeString(args, tabParam); err != nil {
			return failure(err, "", 0)
		}
		if tab != "" && !protocol.ValidTabID(tab) {
			return failure(protocol.Errorf(protocol.CodeBadRequest, "tab: %q is not a tab id (letters, digits, '-' and '_')", tab), "", 0)
		}
	}
	data, plan, err := planFor(spec.Type, args)
	if err != nil {
		return failure(err, tab, 0)
	}
	if spec.Resource != "" {
		return s.runResource(ctx, plan.Actions[0])
	}
	if tab == "" {
		if tab, err = s.defaultTab(ctx, ss, ""); err != nil {
			return failure(err, "", 0)
		}
	}
	return s.runPlan(ctx, tab, data, plan)
}

// runResource sends a resource's action (fetch, search) to its
// resource, which any node answers.
func (s *Server) runResource(ctx context.Context, a protocol.Action) *mcp.CallToolResult {
	ctx, cancel := context.WithTimeout(ctx, a.EffectiveTimeout()+10*time.Second)
	defer cancel()
	var reply any
	var err error
	switch a.Type {
	case "fetch":
		reply, err = s.bc.Fetch(ctx, a.FetchRequest())
	case "search":
		reply, err = s.bc.Search(ctx, a.SearchRequest())
	default:
		err = protocol.Errorf(protocol.CodeInternal, "%s: no resource carries it out", a.Type)
	}
	if err != nil {
		return failure(noNode(err), "", 0)
	}
	return jsonResult(reply)
}

// noNode says plainly that nothing answered on the bus.
func noNode(err error) error {
	if errors.Is(err, nats.ErrNoResponders) {
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: "no framebus node answers on the bus; start one with: framebus serve", Err: err}
	}
	return err
}

// defaultTab is the session's chosen tab, else the first tab listed (of
// profile, when given).
func (s *Server) defaultTab(ctx context.Context, ss *mcp.ServerSession, profile string) (string, error) {
	if tab := s.sessionTab(ss); tab != "" && profile == "" {
		return tab, nil
	}
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var list protocol.TabList
	var err error
	if profile == "" {
		list, err = s.bc.Tabs(lctx)
	} else {
		list, err = s.bc.Pages(lctx, "", profile)
	}
	if err != nil {
		return "", noNode(err)
	}
	if tab := s.sessionTab(ss); tab != "" {
		for _, t := range list.Tabs {
			if t.Tab == tab {
				return tab, nil
			}
		}
	}
	if len(list.Tabs) == 0 {
		return "", errNoTab
	}
	return list.Tabs[0].Tab, nil
}

// listTimeout bounds listing the tabs; every node answers at once.
const listTimeout = 5 * time.Second

var errNoTab = protocol.Errorf(protocol.CodeTabNotFound,
	"no tab is open on the bus; open one with browser_tab_new (or web action navigate), and if the browser is stopped start it with browser_launch")

// contentWait bounds waiting for the frame an action made, to show its
// page: the frame is published before the plan's answer, so it is
// normally there already.
const contentWait = 3 * time.Second

// runPlan sends a one-action plan to tab and makes its result.
func (s *Server) runPlan(ctx context.Context, tab string, data []byte, plan protocol.Plan) *mcp.CallToolResult {
	a := plan.Actions[0]
	spec, _ := protocol.LookupAction(a.Type)
	// Follow the tab's frames from before the plan, so the frame it makes
	// is seen (and its page shown) without asking the history.
	var tw *tabWatch
	if spec.Mutates {
		var err error
		if tw, err = s.watch(ctx, tab); err != nil {
			return failure(s.tabError(ctx, tab, err), tab, 0)
		}
	}
	before := tw.lastSeen()
	pctx, cancel := context.WithTimeout(ctx, plan.Wait())
	defer cancel()
	res, _, err := s.bc.PlanData(pctx, tab, data)
	if err != nil {
		if pctx.Err() != nil && ctx.Err() == nil {
			err = protocol.Errorf(protocol.CodeTimeout, "tab %s did not answer within %s", tab, plan.Wait())
		}
		err = s.tabError(ctx, tab, err)
		if protocol.CodeOf(err) == protocol.CodeTabNotFound {
			s.forget(tab) // a made-up id is not followed on
		}
		return failure(err, tab, 0)
	}
	if !res.OK {
		out := &protocol.Error{Code: res.Code, Message: res.Error}
		if len(res.Results) > 0 && res.Results[0].Error != "" {
			out = &protocol.Error{Code: res.Results[0].Code, Message: res.Results[0].Error}
		}
		return failure(out, tab, res.Sequence)
	}
	r := res.Results[0]
	out := actionOutcome{OK: true, Tab: tab, Sequence: res.Sequence, URL: r.URL, Title: r.Title, Status: r.Status, Value: r.Value}
	if spec.Mutates && r.Sequence > 0 {
		out.Frame = r.Sequence
		// A frame carries its page only when the URL changed: no need to
		// wait for one made right after a frame at the same URL.
		if before == nil || before.Sequence != r.Sequence-1 || before.URL != r.URL {
			wctx, cancel := context.WithTimeout(ctx, contentWait)
			f, err := tw.await(wctx, r.Sequence)
			cancel()
			switch {
			case err != nil:
				out.Note = "the page of frame " + itoa(r.Sequence) + " was not seen in time; read it at " + FrameURI(tab, itoa(r.Sequence))
			case f.FullPage != nil:
				out.Page, out.PageFormat = *f.FullPage, f.FullPageFormat
				out.PageResource = FrameURI(tab, itoa(r.Sequence))
			case f.ContentErr != nil:
				out.Note = "the page of frame " + itoa(r.Sequence) + " could not be read: " + f.ContentErr.Error()
			}
		}
	}
	if a.Type == "screenshot" {
		return screenshotResult(out)
	}
	return out.result()
}

// lastSeen is the newest frame the watch saw, nil for none (or no
// watch).
func (tw *tabWatch) lastSeen() *busclient.Frame {
	if tw == nil {
		return nil
	}
	return tw.last()
}

// tabError turns a plan's failure to reach its tab into what the model
// can act on.
func (s *Server) tabError(ctx context.Context, tab string, err error) error {
	if errors.Is(err, nats.ErrNoResponders) {
		return s.bc.TabNotFound(ctx, tab, err)
	}
	return noNode(err)
}
