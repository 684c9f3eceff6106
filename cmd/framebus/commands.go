package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/framebus/framebus/protocol"
)

// command is one subcommand, declared once: help and parsing both read it.
type command struct {
	name    string
	args    string // the positional part of the synopsis: "<url>", "[file|-]"
	summary string
	group   string
	details string // more help, shown by "framebus help <name>"
	// setup declares the command's flags on fs and returns its body, which
	// runs with the positional arguments once fs has parsed the line.
	setup func(fs *pflag.FlagSet) func(c *cli, args []string) error
}

// Command groups, in the order help lists them.
const (
	groupNode    = "Node"
	groupPlans   = "Plans and frames"
	groupActions = "Actions (each sends a one-action plan to a tab)"
	groupOther   = "Other"
)

var groupOrder = []string{groupNode, groupPlans, groupActions, groupOther}

// commands is every subcommand: the built-in ones and one per declared
// action. Nothing here lists actions by hand.
func commands() []command {
	cmds := []command{serveCommand(), mcpCommand(), viewCommand(), busCommand(), configCommand(), demoCommand(), planCommand(), watchCommand(), framesCommand()}
	cmds = append(cmds, lifecycleCommands()...)
	cmds = append(cmds, personCommands()...)
	cmds = append(cmds, credsCommand())
	for _, spec := range protocol.ActionSpecs() {
		cmds = append(cmds, actionCommand(spec))
	}
	return append(cmds, replCommand(), helpCommand())
}

// lookupCommand finds a command by name. Built-in commands come first in
// the table, so an action can never shadow them (a test checks no action
// is named like one).
func lookupCommand(name string) (command, bool) {
	for _, cmd := range commands() {
		if cmd.name == name {
			return cmd, true
		}
	}
	return command{}, false
}

func (cmd command) synopsis() string {
	s := "framebus " + cmd.name
	if cmd.args != "" {
		s += " " + cmd.args
	}
	return s + " [flags]"
}

// newFlagSet declares cmd's flags and returns the flag set and the body.
func (cmd command) newFlagSet() (*pflag.FlagSet, func(c *cli, args []string) error) {
	fs := pflag.NewFlagSet(cmd.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported as JSON by run
	fs.SortFlags = false
	body := cmd.setup(fs)
	return fs, body
}

func (c *cli) runCommand(cmd command, args []string) error {
	fs, body := cmd.newFlagSet()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			c.printCommandHelp(c.stdout, cmd)
			return nil
		}
		return usagef("%s: %v; usage: %s", cmd.name, err, cmd.synopsis())
	}
	return body(c, fs.Args())
}

func helpCommand() command {
	return command{
		name:    "help",
		args:    "[command]",
		summary: "list the commands, or show one command's arguments and flags",
		group:   groupOther,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			return func(c *cli, args []string) error {
				switch len(args) {
				case 0:
					c.printHelp(c.stdout)
					return nil
				case 1:
					cmd, ok := lookupCommand(args[0])
					if !ok {
						return usagef("help: unknown command %q; run: framebus help", args[0])
					}
					c.printCommandHelp(c.stdout, cmd)
					return nil
				}
				return usagef("help: takes at most one command name, got %d arguments", len(args))
			}
		},
	}
}

// printHelp writes the command list, generated from the table.
func (c *cli) printHelp(w io.Writer) {
	fmt.Fprint(w, `framebus drives Chromium tabs over NATS. Agents send plans of actions to a
tab; the tab publishes a numbered frame for every state change and runs an
action only while the frame it was planned against is still current.

Usage: framebus <command> [arguments] [flags]
`)
	all := commands()
	width := 0
	for _, cmd := range all {
		width = max(width, len(cmd.name))
	}
	for _, group := range groupOrder {
		fmt.Fprintf(w, "\n%s:\n", group)
		for _, cmd := range all {
			if cmd.group == group {
				fmt.Fprintf(w, "  %-*s   %s\n", width, cmd.name, cmd.summary)
			}
		}
	}
	fmt.Fprintf(w, `
Client commands find the bus from --bus, else $%s, else the state file
that serve writes ($%s, default %s),
and the tab from --tab, else the one "tab select" (or "session start") chose,
failing once that tab is closed, else, with none chosen, the first tab listed.

Every reply on stdout is JSON: {"ok":true,...} or {"ok":false,"error":...,"code":...}.
Exit status: 0 ok, 1 the request failed, 2 usage error (code bad_request).

Error codes:
`, envURL, envState, defaultStateHint())
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, k := range protocol.Codes {
		fmt.Fprintf(tw, "  %s\t%s\n", k.Code, k.Meaning)
	}
	tw.Flush()
	fmt.Fprint(w, "\nRun framebus help <command> for a command's arguments and flags.\n")
}

// printCommandHelp writes one command's synopsis, arguments and flags.
func (c *cli) printCommandHelp(w io.Writer, cmd command) {
	fs, _ := cmd.newFlagSet()
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", cmd.synopsis(), capitalize(cmd.summary)+".")
	if cmd.details != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(cmd.details, "\n"))
	}
	if usage := fs.FlagUsages(); usage != "" {
		fmt.Fprintf(w, "\nFlags:\n%s", usage)
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
