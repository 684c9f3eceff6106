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
		in := actionSchema(spec)
		s.addTool(ActionToolName(spec), actionDescription(spec), !spec.Mutates, in["properties"].(schema), in["required"].([]string),
			func(ctx context.Context, ss *mcp.ServerSession, args map[string]json.RawMessage) *mcp.CallToolResult {
				return s.runAction(ctx, ss, spec, args)
			})
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
		d += ". Makes a new frame; the result names it and shows what changed on the page (the whole page when a new one loaded)."
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

// planFor makes a one-action plan from a tool's arguments, checked as a
// node would (DecodePlan: unknown fields, kinds, combinations). The
// frames it makes carry their page as a snapshot when the URL changed,
// for the tab's observers.
func planFor(typ string, args map[string]json.RawMessage) (protocol.Plan, error) {
	action := map[string]json.RawMessage{}
	for k, v := range args {
		action[k] = v
	}
	action["type"], _ = json.Marshal(typ)
	// The plan's id is made here, so a call that ends first can cancel it.
	data, err := json.Marshal(map[string]any{"id": busclient.NewPlanID(), "fullPage": "snapshot", "fullPagePolicy": "url-change", "action": action})
	if err != nil {
		return protocol.Plan{}, protocol.Errorf(protocol.CodeBadRequest, "arguments: %v", err)
	}
	return protocol.DecodePlan(data)
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
		if tab != "" {
			if err := protocol.CheckTabID(tab); err != nil {
				return failure(err, "", 0)
			}
		}
	}
	mode := s.page
	if spec.Resource == "" && (spec.Mutates || spec.Type == "snapshot") {
		_, asked := args[pageParam]
		var err error
		if mode, err = s.pageMode(args); err != nil {
			return failure(err, tab, 0)
		}
		if spec.Type == "eval" && !asked {
			// Most evals read: their value is the answer, and the page
			// is read only when asked (page delta or full).
			mode = PageNone
		}
	}
	plan, err := planFor(spec.Type, args)
	if err != nil {
		return failure(err, tab, 0)
	}
	if spec.Resource != "" {
		return s.runResource(ctx, plan.Actions[0])
	}
	var out actionOutcome
	if tab != "" {
		out, err = s.runPlan(ctx, ss, tab, plan, mode)
	} else {
		pick := func() (string, bool, error) { return s.defaultTab(ctx, ss, "") }
		out, err = s.onChosenTab(ss, pick, func(tab string) (actionOutcome, error) {
			return s.runPlan(ctx, ss, tab, plan, mode)
		})
	}
	return render(spec.Type, out, err)
}

// onChosenTab runs fn on the tab pick chooses: the session's (chosen
// true), else another. A session's tab that is gone (closed, or its
// browser was) is let go, and fn runs once more on the next pick:
// nothing ran on a tab that was not found.
func (s *Server) onChosenTab(ss *mcp.ServerSession, pick func() (string, bool, error), fn func(tab string) (actionOutcome, error)) (actionOutcome, error) {
	tab, chosen, err := pick()
	if err != nil {
		return actionOutcome{}, err
	}
	out, err := fn(tab)
	if !chosen || !gone(err) {
		return out, err
	}
	s.selectTab(ss, "")
	if tab, _, err = pick(); err != nil {
		return actionOutcome{}, err
	}
	return fn(tab)
}

// gone says an action found no tab to run on.
func gone(err error) bool {
	code := protocol.CodeOf(err)
	return code == protocol.CodeTabNotFound || code == protocol.CodeBrowserNotRunning
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

// defaultTab is the session's chosen tab (chosen true), else the first
// tab listed (of profile, when given).
func (s *Server) defaultTab(ctx context.Context, ss *mcp.ServerSession, profile string) (tab string, chosen bool, err error) {
	if tab := s.sessionTab(ss); tab != "" && profile == "" {
		return tab, true, nil
	}
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var list protocol.TabList
	if profile == "" {
		list, err = s.bc.Tabs(lctx)
	} else {
		list, err = s.bc.Pages(lctx, "", profile)
	}
	if err != nil {
		return "", false, noNode(err)
	}
	if tab := s.sessionTab(ss); tab != "" {
		for _, t := range list.Tabs {
			if t.Tab == tab {
				return tab, true, nil
			}
		}
	}
	if len(list.Tabs) == 0 {
		return "", false, errNoTab
	}
	return list.Tabs[0].Tab, false, nil
}

// listTimeout bounds listing the tabs; every node answers at once.
const listTimeout = 5 * time.Second

var errNoTab = protocol.Errorf(protocol.CodeTabNotFound,
	"no tab is open on the bus; open one with browser_tab_new (or web action navigate), and if the browser is stopped start it with browser_launch")

// frameWait bounds waiting for the frame an action made, which is
// published right after the plan's answer, normally there already.
const frameWait = 3 * time.Second

// cancelWait bounds the cancel of a plan whose call ended first.
const cancelWait = 2 * time.Second

// runPlan sends a one-action plan to tab. A state-changing action's
// plan ends with a snapshot, and what the result shows of the page comes
// from it (pages.go), as does a snapshot's without options: in delta
// mode, what changed since the page the session was last shown. On
// failure the outcome still names the tab and, when known, its current
// frame.
func (s *Server) runPlan(ctx context.Context, ss *mcp.ServerSession, tab string, plan protocol.Plan, mode string) (actionOutcome, error) {
	a := plan.Actions[0]
	spec, _ := protocol.LookupAction(a.Type)
	out := actionOutcome{Tab: tab}
	viewed := -1 // the step whose snapshot the result shows as the page
	wait := plan.Wait()
	switch {
	case mode == PageNone:
	case spec.Mutates:
		held, _ := s.held(ss, tab)
		step := pageStep(mode, held)
		plan.Actions = append(plan.Actions, step)
		wait += step.EffectiveTimeout() // it makes no frame to settle
		viewed = 1
	case a.Type == "snapshot" && wholePage(a):
		if held, ok := s.held(ss, tab); ok && mode == PageDelta {
			plan.Actions[0].Since = held.id
		}
		viewed = 0
	case a.Type == "snapshot" && (a.Search != "" || a.Cursor != "") && a.MaxBytes == 0:
		// A search's matches, a part: within the budget too, unless the
		// model asks for more.
		plan.Actions[0].MaxBytes = s.budget
	}
	plan.Action = nil
	var person *mcp.ElicitParams
	if spec.Person && elicits(ss) {
		var err error
		if person, err = s.personRound(ctx, ss, tab, &plan); err != nil {
			return out, err
		}
	}
	data, err := protocol.Marshal(plan)
	if err != nil {
		return out, protocol.Errorf(protocol.CodeInternal, "plan: %v", err)
	}
	if person != nil {
		// The plan goes out on its own (its retry asks for its result
		// by its id), and the user is asked.
		answered := s.sentAsking(plan.ID)
		go func() {
			defer answered()
			pctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			_, _, _ = s.bc.PlanData(pctx, tab, data)
		}()
		return out, inputRequired{params: person, state: s.sealState(tab, plan.ID)}
	}
	// Follow the tab's frames from before the plan, so the frame it makes
	// is seen without asking the history.
	var tw *tabWatch
	if spec.Mutates {
		if tw, err = s.watch(ctx, tab); err != nil {
			return out, s.tabError(ctx, tab, err)
		}
	}
	before := tw.lastSeen()
	if before != nil {
		out.Sequence = before.Sequence
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	res, _, err := s.bc.PlanData(pctx, tab, data)
	if err != nil {
		if pctx.Err() != nil && protocol.CodeOf(err) == protocol.CodeOutcomeUnknown {
			// The call ended first (cancelled, or past its wait) with
			// the plan sent: so does the plan, rather than hold the tab
			// for nobody. The error stays outcome_unknown: the cancel
			// may not reach it before it runs. (A plan never sent is
			// said so by the client: nothing to cancel.)
			cctx, ccancel := context.WithTimeout(context.Background(), cancelWait)
			s.bc.Cancel(cctx, tab, plan.ID)
			ccancel()
		}
		err = s.tabError(ctx, tab, err)
		if protocol.CodeOf(err) == protocol.CodeTabNotFound {
			s.forget(tab) // a made-up id is not followed on
		}
		return out, err
	}
	out.Sequence = res.Sequence
	if len(res.Results) == 0 || res.Results[0].Error != "" || (!res.OK && viewed != 1) {
		if len(res.Results) > 0 && res.Results[0].Error != "" {
			return out, &protocol.Error{Code: res.Results[0].Code, Message: res.Results[0].Error}
		}
		return out, &protocol.Error{Code: res.Code, Message: res.Error}
	}
	r := res.Results[0]
	out.OK, out.URL, out.Title, out.Status, out.Value = true, r.URL, r.Title, r.Status, r.Value
	if spec.Mutates && r.Sequence > 0 {
		out.Frame = r.Sequence
		if before == nil || before.URL != r.URL {
			// A new page's frame, with its content, goes out right after
			// the plan's answer: the result waits for the watch to have
			// it, so its resource reads at once.
			wctx, cancel := context.WithTimeout(ctx, frameWait)
			_, _ = tw.await(wctx, r.Sequence)
			cancel()
		}
	}
	if viewed < 0 {
		return out, nil
	}
	if viewed >= len(res.Results) || res.Results[viewed].Error != "" {
		// The action ran; its page could not be read after it.
		why := "no answer"
		if viewed < len(res.Results) {
			why = string(res.Results[viewed].Code) + ": " + res.Results[viewed].Error
		}
		out.Note = "the page could not be read after the action (" + capMessage(why) + "); take browser_snapshot"
		return out, nil
	}
	if v, ok := s.view(ss, tab, res.Results[viewed].Value, mode, s.budget); ok {
		out.View = &v
		if viewed == 0 {
			out.Value = nil // the view shows it
		}
	}
	return out, nil
}

// wholePage reports whether a snapshot action asks for the whole page as
// text, which a result shows as the session's page; one that asks for a
// part, a search or the tree is shown as it comes.
func wholePage(a protocol.Action) bool {
	return a.Since == "" && a.Search == "" && a.Cursor == "" && a.MaxBytes == 0 && a.Format != "json" &&
		a.Selector == "" && !a.Interactive && a.Depth == 0 && a.MaxNodes == 0
}

// render is an action's outcome as a tool result.
func render(typ string, out actionOutcome, err error) *mcp.CallToolResult {
	if ask, ok := err.(inputRequired); ok {
		return ask.result()
	}
	switch {
	case err != nil:
		return failure(err, out.Tab, out.Sequence)
	case typ == "screenshot":
		return screenshotResult(out)
	}
	return out.result()
}

// tabError turns a plan's failure to reach its tab into what the model
// can act on.
func (s *Server) tabError(ctx context.Context, tab string, err error) error {
	if errors.Is(err, nats.ErrNoResponders) {
		return s.bc.TabNotFound(ctx, tab, err)
	}
	return noNode(err)
}
