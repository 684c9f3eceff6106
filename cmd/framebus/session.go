package main

import (
	"context"
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/framebus/framebus/protocol"
)

// The session command (the spec's browser sessions): start runs a
// domain's persistent profile and makes its tab the one commands use;
// stop saves and closes it; list shows them.

func sessionCommand() command {
	return command{
		name:    "session",
		args:    "start <domain> [url] | stop <id> | list",
		summary: "run a domain's own persistent browser profile (cookies and localStorage kept), stop it, list them",
		group:   groupNode,
		details: `session start <domain> [url]  starts the session of a domain in its profile,
                              <profileDir>/<domain>/ (made on first use, reused
                              after); prints its id and tab, and makes that tab
                              the one commands use without --tab
session stop <id>             closes the session's browser, saving its state
session list                  the sessions running`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, false)
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
					return c.startSession(target, req)
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

func (c *cli) startSession(target clientFlags, req protocol.SessionStartRequest) error {
	var reply protocol.SessionReply
	err := c.send(target, func(cl *client) string { return cl.subj.SessionStart() }, req, noNode, &reply)
	if err != nil {
		return err
	}
	// Commands without --tab now drive the session, when they find the
	// node through the state file.
	if target.bus == "" && c.getenv(envURL) == "" && len(reply.Tabs) > 0 {
		if path, err := c.statePath(); err == nil {
			if st, err := readState(path); err == nil {
				st.Active = reply.Tabs[0].Tab
				_ = writeState(path, st)
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
