package main

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/framebus/framebus/protocol"
)

// The commands of people in the loop (docs/people.md): take a tab over,
// hand it back, answer an agent's question. The agents' side, handoff and
// ask, are actions like any other.

// personTimeout bounds a person's request: the tab answers it between
// plans, so a long action before it delays it.
const personTimeout = 60 * time.Second

func personCommands() []command {
	return []command{
		{
			name:    "takeover",
			args:    "[tab]",
			summary: "take a tab over as a person: agents' changes get user_control until you hand it back (claims an agent's handoff)",
			group:   groupPlans,
			details: "Prints the tab's control and its takeover frame's sequence. The tab defaults to --tab, else the one the node lists first.",
			setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
				var target clientFlags
				target.declarePerson(fs, true)
				by := declareBy(fs)
				message := fs.String("message", "", "why, for others watching the tab")
				return func(c *cli, args []string) error {
					return c.personRequest(target, args, "takeover", func(ctx context.Context, cl *client, tab string) (any, error) {
						return cl.bc.TakeOver(ctx, tab, c.personName(cl, *by), *message)
					})
				}
			},
		},
		{
			name:    "handback",
			args:    "[tab]",
			summary: "hand a tab back to the agents (ends a handoff or a takeover): they plan from its handback frame",
			group:   groupPlans,
			setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
				var target clientFlags
				target.declarePerson(fs, true)
				by := declareBy(fs)
				return func(c *cli, args []string) error {
					return c.personRequest(target, args, "handback", func(ctx context.Context, cl *client, tab string) (any, error) {
						return cl.bc.HandBack(ctx, tab, c.personName(cl, *by))
					})
				}
			},
		},
		{
			name:    "answer",
			args:    "<answer...>",
			summary: "answer the question an agent asks on a tab (its ask action)",
			group:   groupPlans,
			details: "Extra words are joined to <answer> with spaces. With more than one question open on the tab, name one with --id (framebus tabs lists them).",
			setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
				var target clientFlags
				target.declarePerson(fs, true)
				by := declareBy(fs)
				id := fs.String("id", "", "the question's `ID` (default: the tab's one open question)")
				return func(c *cli, args []string) error {
					if len(args) == 0 {
						return usagef("answer: want the answer")
					}
					answer := strings.Join(args, " ")
					return c.personRequest(target, nil, "answer", func(ctx context.Context, cl *client, tab string) (any, error) {
						err := cl.bc.Answer(ctx, tab, protocol.AnswerRequest{ID: *id, Answer: answer, By: c.personName(cl, *by)})
						return map[string]any{"ok": err == nil, "tab": tab}, err
					})
				}
			},
		},
	}
}

func declareBy(fs *pflag.FlagSet) *string {
	return fs.String("by", "", "your `NAME`, shown to others (default: the credentials' user, else $USER)")
}

// personName is who a person's request says they are.
func (c *cli) personName(cl *client, by string) string {
	return cmp.Or(by, cl.creds.User, c.getenv("USER"))
}

// personRequest sends a person's request to the tab args (or --tab)
// name and prints the reply.
func (c *cli) personRequest(target clientFlags, args []string, what string, send func(context.Context, *client, string) (any, error)) error {
	if len(args) > 1 {
		return usagef("%s: want at most one tab id, got %q", what, args)
	}
	if len(args) == 1 {
		if !protocol.ValidTabID(args[0]) {
			return usagef("%s: %q is not a tab id", what, args[0])
		}
		target.tab = args[0]
	}
	cl, err := c.connect(target)
	if err != nil {
		return err
	}
	defer cl.close()
	ctx, cancel := context.WithTimeout(c.ctx, personTimeout)
	defer cancel()
	tab, err := cl.resolveTab(ctx, target.tab)
	if err != nil {
		return err
	}
	reply, err := send(ctx, cl, tab)
	if err != nil {
		return err
	}
	c.printJSON(reply)
	return nil
}
