package main

import (
	"encoding/json"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/framebus/framebus/protocol"
)

func planCommand() command {
	return command{
		name:    "plan",
		args:    "[file|-]",
		summary: "send a plan (JSON from a file, or stdin) to a tab and print the plan result",
		group:   groupPlans,
		details: `A plan is {"action": {...}} or {"actions": [{...}, ...]}; each action has a
"type", its parameters and optionally "basedOnSequence". The reply is the
PlanResult JSON: "ok", "executed", the tab's "sequence", each action's
"results", and "stopped" when an action's frame was stale or it failed.
Exit status 1 when the plan did not fully succeed.

The command waits as long as the plan's actions may take and sends that
wait as the plan's "deadline", after which the tab starts none of its
actions (expired); a "deadline" in the plan (RFC 3339) that comes sooner
shortens both. When the answer is lost (no answer by then, or the bus
connection gone), the reply is outcome_unknown naming the plan's id: look
at the tab's frames (framebus frames) before sending it again.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, true)
			return func(c *cli, args []string) error {
				if len(args) > 1 {
					return usagef("plan: takes one file (or - for stdin), got %d arguments", len(args))
				}
				data, err := c.readPlan(args)
				if err != nil {
					return err
				}
				plan, err := protocol.DecodePlan(data)
				if err != nil {
					return usagef("%v", err)
				}
				cl, err := c.connect(target)
				if err != nil {
					return err
				}
				defer cl.close()
				tab, err := cl.resolveTab(c.ctx, target.tab)
				if err != nil {
					return err
				}
				res, raw, err := cl.sendPlan(c.ctx, tab, data, plan)
				if err != nil {
					return err
				}
				c.printJSON(json.RawMessage(raw))
				if !res.OK {
					return errReported
				}
				return nil
			}
		},
	}
}

// readPlan reads the plan from the file named, or stdin for none or "-".
func (c *cli) readPlan(args []string) ([]byte, error) {
	if len(args) == 0 || args[0] == "-" {
		if isTerminal(c.stdin) {
			log := quietLogger(c.stderr)
			log.Warn().Msg("reading the plan from the terminal; end it with Ctrl-D")
		}
		data, err := io.ReadAll(c.stdin)
		if err != nil {
			return nil, usagef("plan: read stdin: %v", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return nil, usagef("plan: %v", err)
	}
	return data, nil
}
