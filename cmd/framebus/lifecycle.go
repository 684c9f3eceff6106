package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// The browser lifecycle commands (ADR-006): status, launch, close, pages,
// and tab new|close|select. Each is one request on
// <prefix>.browser.<profile>.<op> (any node that has the profile), or
// <prefix>.node.<node>.browser.<profile>.<op> with --node; its reply is
// printed as it comes. status and pages without --node gather every
// node's answer (busclient.Client.Status, Pages).

// lifecycleWait bounds a lifecycle request; launch starts a browser.
const lifecycleWait = 90 * time.Second

// lifecycleOp declares a command that sends one lifecycle request.
func lifecycleOp(name, op, summary string) command {
	return command{
		name:    name,
		summary: summary,
		group:   groupNode,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, false)
			profile := declareProfile(fs, op == protocol.OpStatus)
			node := declareNode(fs, nodeDefaults[op])
			return func(c *cli, args []string) error {
				if len(args) > 0 {
					return usagef("%s: takes no arguments, got %q", name, args)
				}
				return c.lifecycle(target, *node, *profile, op, nil)
			}
		},
	}
}

func lifecycleCommands() []command {
	return []command{
		lifecycleOp("status", protocol.OpStatus, "each profile: whether its browser runs, its pages, and for an attach profile its DevTools endpoint; never an error"),
		lifecycleOp("launch", protocol.OpLaunch, "start a profile's browser (a no-op when it runs); prints the status"),
		lifecycleOp("connect", protocol.OpConnect, "connect an attach profile to the browser it names (a no-op when connected); prints the status"),
		lifecycleOp("close", protocol.OpClose, "stop a profile's browser and its tabs, saving its state (an attach profile only disconnects); prints the status"),
		lifecycleOp("pages", protocol.OpPages, "list a profile's tabs: ids, URLs, titles, frames (list_pages)"),
		tabCommand(),
		sessionCommand(),
	}
}

func tabCommand() command {
	return command{
		name:    "tab",
		args:    "new [url] | close [id] | select <id>",
		summary: "open a tab, close one, or choose the tab commands use without --tab",
		group:   groupNode,
		details: `tab new [url]   opens a tab (about:blank by default) and prints it
tab close [id]  closes a tab (default: the one commands use)
tab select <id> makes commands without --tab use this tab (kept in the state file)`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, false)
			profile := declareProfile(fs, false)
			node := declareNode(fs, "tab new: placed on the node with the most room that has the profile; tab close: the node that has the tab")
			return func(c *cli, args []string) error {
				if len(args) == 0 {
					return usagef("tab: want new [url], close [id] or select <id>")
				}
				switch sub, rest := args[0], args[1:]; {
				case sub == "new" && len(rest) <= 1:
					req := protocol.NewTabRequest{}
					if len(rest) == 1 {
						req.URL = rest[0]
					}
					return c.lifecycle(target, *node, *profile, protocol.OpNewTab, req)
				case sub == "close" && len(rest) <= 1:
					return c.closeTab(target, rest)
				case sub == "select" && len(rest) == 1:
					return c.selectTab(target, rest[0])
				}
				return usagef("tab: want new [url], close [id] or select <id>, got %q", args)
			}
		},
	}
}

// declareProfile declares --profile; all says that without it the
// command covers every profile.
func declareProfile(fs *pflag.FlagSet, all bool) *string {
	def := "default: " + protocol.DefaultProfile
	if all {
		def = "default: every profile"
	}
	return fs.String("profile", "", "the browser profile `NAME` ("+def+"); a session's profile is named by its domain")
}

// nodeDefaults say which node a lifecycle command without --node asks.
var nodeDefaults = map[string]string{
	protocol.OpStatus:  "every node",
	protocol.OpPages:   "every node",
	protocol.OpLaunch:  "placed on the node with the most room (fewest tabs) that has the profile",
	protocol.OpConnect: "any node that has the profile",
	protocol.OpClose:   "the node that runs the profile's browser",
}

// declareNode declares --node; def says what the command asks without it.
func declareNode(fs *pflag.FlagSet, def string) *string {
	return fs.String("node", "", "the `NAME` of the node to ask (default: "+def+")")
}

// lifecycle sends one lifecycle request to a profile ("" for the default
// one, or for status every profile) of a node ("": any that has it, or
// for status and pages every node) and prints the reply; a reply with ok
// false is a failure.
func (c *cli) lifecycle(target clientFlags, node, profile, op string, req any) error {
	if profile != "" {
		if err := protocol.CheckProfileName(profile); err != nil {
			return usagef("--profile: %v", err)
		}
	}
	if node != "" {
		if err := protocol.CheckNodeName(node); err != nil {
			return usagef("--node: %v", err)
		}
	}
	switch {
	case op == protocol.OpStatus && profile == "":
		return c.gathered(target, func(ctx context.Context, cl *client) (any, error) { return nodeStatus(ctx, cl, node) })
	case node == "" && op == protocol.OpPages:
		return c.gathered(target, func(ctx context.Context, cl *client) (any, error) { return cl.bc.Pages(ctx, "", profile) })
	}
	subject := func(cl *client) string {
		switch {
		case node != "":
			return cl.subj.NodeProfile(node, cmp.Or(profile, protocol.DefaultProfile), op)
		}
		return cl.subj.Profile(cmp.Or(profile, protocol.DefaultProfile), op)
	}
	return c.send(target, subject, req, func(cl *client, err error) error {
		switch {
		case node != "" && errors.Is(err, nats.ErrNoResponders):
			return protocol.NodeUnavailable(node, "profile "+cmp.Or(profile, protocol.DefaultProfile))
		case profile != "" && errors.Is(err, nats.ErrNoResponders):
			return cl.noProfile(c.ctx, profile, err)
		}
		return errNoNode(err)
	})
}

// nodeStatus is the status of every node's profiles, or of one node's
// (node_unavailable when it does not answer).
func nodeStatus(ctx context.Context, cl *client, node string) (protocol.StatusReply, error) {
	st, err := cl.bc.Status(ctx)
	if err != nil || node == "" {
		return st, err
	}
	answered := slices.ContainsFunc(st.Nodes, func(n protocol.NodeState) bool { return n.Node == node && n.State == protocol.NodeAnswered })
	if !answered && st.Node != node {
		return protocol.StatusReply{}, protocol.NodeUnavailable(node, "status")
	}
	st.Profiles = slices.DeleteFunc(st.Profiles, func(p protocol.ProfileStatus) bool { return p.Node != node })
	st.Node, st.Nodes = node, nil
	return st, nil
}

// gathered connects, asks every node (ask gathers their answers, see
// busclient's GatherWait) and prints the reply.
func (c *cli) gathered(target clientFlags, ask func(context.Context, *client) (any, error)) error {
	cl, err := c.connect(target)
	if err != nil {
		return err
	}
	defer cl.close()
	ctx, cancel := context.WithTimeout(c.ctx, tabsTimeout)
	defer cancel()
	reply, err := ask(ctx, cl)
	switch {
	case err != nil && interrupted(ctx):
		return errInterrupted("the nodes to answer", "nothing was changed")
	case protocol.CodeOf(err) == protocol.CodeNodeUnavailable:
		return err
	case err != nil:
		return busError(err, errNoNode)
	}
	c.printJSON(reply)
	return nil
}

// send connects, sends req (JSON; none when nil) to the subject and prints
// the reply (see request); noReply turns no answer into the error.
func (c *cli) send(target clientFlags, subject func(*client) string, req any, noReply func(*client, error) error, into ...any) error {
	cl, err := c.connect(target)
	if err != nil {
		return err
	}
	defer cl.close()
	var data []byte
	if req != nil {
		data, _ = json.Marshal(req)
	}
	return c.request(cl, subject(cl), data, func(err error) error { return noReply(cl, err) }, into...)
}

// noNode is the answer to a request nobody took.
func noNode(_ *client, err error) error { return errNoNode(err) }

// request sends one request, prints the reply and fails when it says
// ok false; noReply turns a request that got no answer into the error.
// The reply is also decoded into each of into.
func (c *cli) request(cl *client, subject string, data []byte, noReply func(error) error, into ...any) error {
	ctx, cancel := context.WithTimeout(c.ctx, lifecycleWait)
	defer cancel()
	reply, err := cl.bc.RequestData(ctx, subject, data)
	switch {
	case err != nil && interrupted(ctx):
		return errInterrupted("the node to answer "+subject, "the node may still carry the request out")
	case err != nil:
		return busError(err, noReply)
	}
	var head struct {
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal(reply, &head); err != nil {
		return protocol.Errorf(protocol.CodeInternal, "%s reply: invalid JSON: %v", subject, err)
	}
	for _, v := range into {
		_ = json.Unmarshal(reply, v)
	}
	c.printJSON(json.RawMessage(reply))
	if !head.OK {
		return errReported
	}
	return nil
}

func (c *cli) closeTab(target clientFlags, args []string) error {
	id := ""
	if len(args) == 1 {
		id = args[0]
	} else {
		cl, err := c.connect(target)
		if err != nil {
			return err
		}
		id, err = cl.resolveTab(c.ctx, "")
		cl.close()
		if err != nil {
			return err
		}
	}
	if !protocol.ValidTabID(id) {
		return usagef("tab close: %q is not a tab id", id)
	}
	return c.closeTabIn(target, id)
}

// selectTab records the tab commands use without --tab, in the state
// file of the node, after checking the node has it.
func (c *cli) selectTab(target clientFlags, id string) error {
	if !protocol.ValidTabID(id) {
		return usagef("tab select: %q is not a tab id", id)
	}
	if target.bus != "" || c.getenv(envURL) != "" {
		return usagef("tab select: keeps the choice in the state file of framebus serve, which --bus and $%s bypass; give --tab to each command instead", envURL)
	}
	found, list, err := c.findTab(target, id)
	if err != nil {
		return err
	}
	if found == nil {
		return protocol.Errorf(protocol.CodeTabNotFound, "no tab %s on the bus (open: %s)", id, describeTabs(list))
	}
	path, err := c.statePath()
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "%v", err)
	}
	st, err := serving.ReadState(path)
	if err != nil {
		return errState(path, err)
	}
	st.Active = id
	if err := serving.WriteState(path, st); err != nil {
		return protocol.Errorf(protocol.CodeInternal, "write state file %s: %v", path, err)
	}
	c.printJSON(protocol.TabReply{OK: true, Tab: *found})
	return nil
}

// closeTabIn closes a tab in whichever profile has it: the node's tab list
// says which.
func (c *cli) closeTabIn(target clientFlags, id string) error {
	found, _, err := c.findTab(target, id)
	if err != nil {
		return err
	}
	profile, node := "", ""
	if found != nil {
		profile, node = found.Profile, found.Node
	}
	return c.lifecycle(target, node, profile, protocol.OpCloseTab, protocol.CloseTabRequest{Tab: id})
}

// findTab looks a tab up in the node's list: nil when it is not there.
func (c *cli) findTab(target clientFlags, id string) (*protocol.TabInfo, []protocol.TabInfo, error) {
	cl, err := c.connect(target)
	if err != nil {
		return nil, nil, err
	}
	list, err := cl.tabs(c.ctx)
	cl.close()
	if err != nil {
		return nil, nil, err
	}
	for i := range list.Tabs {
		if list.Tabs[i].Tab == id {
			return &list.Tabs[i], list.Tabs, nil
		}
	}
	return nil, list.Tabs, nil
}

// noProfile is the error for a profile nothing answers for: the
// profiles the nodes have (each once), when any answers at all.
func (cl *client) noProfile(ctx context.Context, profile string, cause error) error {
	ctx, cancel := context.WithTimeout(ctx, tabsTimeout)
	defer cancel()
	st, err := cl.bc.Status(ctx)
	if err != nil {
		return errNoNode(cause)
	}
	var names []string
	for _, p := range st.Profiles {
		if !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	return protocol.ProfileNotFound(profile, names)
}
