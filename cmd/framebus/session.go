package main

import (
	"context"
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// The session command (the spec's browser sessions): start runs a
// domain's persistent profile and makes its tab the one commands use;
// stop saves and closes it; list shows them.

func sessionCommand() command {
	return command{
		name:    "session",
		args:    "start <domain> [url] [--node NAME] | stop <id> | list",
		summary: "run a domain's own persistent browser profile (cookies and localStorage kept), stop it, list them",
		group:   groupNode,
		details: `session start <domain> [url]  starts the session of a domain in its profile,
                              <profileDir>/<domain>/ (made on first use, reused
                              after); prints its id and tab, and makes that tab
                              the one commands use without --tab. A domain has
                              one session on the bus: when it runs, on any node,
                              that one is returned (its node in "node")
session stop <id>             closes the session's browser, saving its state
session list                  the sessions, those of nodes that are gone
                              with "state": "unreachable"`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, false)
			node := fs.String("node", "", "session start: the `NAME` of the node to start it on (default: the node with the most room); a session that runs on another node is returned there")
			return func(c *cli, args []string) error {
				if len(args) == 0 {
					return usagef("session: want start <domain> [url], stop <id> or list")
				}
				switch sub, rest := args[0], args[1:]; {
				case sub == "start" && (len(rest) == 1 || len(rest) == 2):
					if strings.TrimSpace(rest[0]) == "" {
						return usagef("session start: <domain> is empty; want a domain such as example.com")
					}
					req := protocol.SessionStartRequest{Domain: rest[0]}
					if len(rest) == 2 {
						req.URL = rest[1]
					}
					return c.startSession(target, *node, req)
				case *node != "":
					return usagef("session: --node is for session start")
				case sub == "stop" && len(rest) == 1:
					return c.stopSession(target, rest[0])
				case sub == "list" && len(rest) == 0:
					return c.gathered(target, func(ctx context.Context, cl *client) (any, error) { return cl.bc.Sessions(ctx) })
				}
				return usagef("session: want start <domain> [url], stop <id> or list, got %q", args)
			}
		},
	}
}

func (c *cli) startSession(target clientFlags, node string, req protocol.SessionStartRequest) error {
	subject, noReply := func(cl *client) string { return cl.subj.SessionStart() }, noNode
	if node != "" {
		if err := protocol.CheckNodeName(node); err != nil {
			return usagef("--node: %v", err)
		}
		subject = func(cl *client) string { return cl.subj.NodeSessionStart(node) }
		noReply = func(_ *client, err error) error {
			if errors.Is(err, nats.ErrNoResponders) {
				return protocol.NodeUnavailable(node, "session start "+req.Domain)
			}
			return errNoNode(err)
		}
	}
	var reply protocol.SessionReply
	err := c.send(target, subject, req, noReply, &reply)
	if err != nil {
		return err
	}
	// Commands without --tab now drive the session, when they find the
	// node through the state file.
	if target.bus == "" && c.getenv(envURL) == "" && len(reply.Tabs) > 0 {
		if path, err := c.statePath(); err == nil {
			if st, err := serving.ReadState(path); err == nil {
				st.Active = reply.Tabs[0].Tab
				_ = serving.WriteState(path, st)
			}
		}
	}
	return nil
}

func (c *cli) stopSession(target clientFlags, id string) error {
	if !protocol.ValidTabID(id) {
		return usagef("session stop: %q is not a session id", id)
	}
	return c.send(target, func(cl *client) string { return cl.subj.SessionStop(id) }, nil, func(_ *client, err error) error {
		if errors.Is(err, nats.ErrNoResponders) {
			return protocol.Errorf(protocol.CodeSessionNotFound, "no session %s on the bus (framebus session list shows them)", id)
		}
		return errNoNode(err)
	})
}
