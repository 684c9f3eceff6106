package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/framebus/framebus/protocol"
)

// actionCommand builds the subcommand of one declared action: positional
// parameters are arguments in declaration order, the others are flags of
// their kind (bool: --wait, duration: --timeout 2s or a number of
// milliseconds). The last positional parameter takes the rest of the line
// joined with spaces, so `framebus eval 1 + 1` evaluates "1 + 1" (DR-014).
func actionCommand(spec protocol.ActionSpec) command {
	positional := positionalParams(spec)
	return command{
		name:    spec.Type,
		args:    positionalSynopsis(positional),
		summary: spec.Summary,
		group:   groupActions,
		details: actionDetails(spec, positional),
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, true)
			basedOn := fs.Int64("based-on", 0, "run only while frame `N` is the tab's current frame (sets basedOnSequence)")
			dryRun := fs.Bool("dry-run", false, "print the plan instead of sending it (needs no node)")
			var flags []paramFlag
			for _, p := range spec.Params {
				if !p.Positional {
					flags = append(flags, declareParam(fs, p))
				}
			}
			return func(c *cli, args []string) error {
				fields := map[string]any{}
				if err := positionalValues(spec, positional, args, fields); err != nil {
					return err
				}
				for _, f := range flags {
					if fs.Changed(f.param.Name) {
						fields[f.param.Name] = f.value()
					}
				}
				if fs.Changed("based-on") {
					fields["basedOnSequence"] = *basedOn
				}
				data, err := encodeAction(spec, fields)
				if err != nil {
					return err
				}
				plan, err := protocol.DecodePlan(data)
				if err != nil {
					return usagef("%s: %v", spec.Type, err)
				}
				if *dryRun {
					c.printJSON(json.RawMessage(data))
					return nil
				}
				return c.runAction(target, data, plan)
			}
		},
	}
}

func (c *cli) runAction(target clientFlags, data []byte, plan protocol.Plan) error {
	cl, err := c.connect(target)
	if err != nil {
		return err
	}
	defer cl.close()
	tab, err := cl.resolveTab(c.ctx, target.tab)
	if err != nil {
		return err
	}
	res, _, err := cl.sendPlan(c.ctx, tab, data, plan)
	if err != nil {
		return err
	}
	if !res.OK {
		c.printJSON(failureReply(res))
		return errReported
	}
	if len(res.Results) != 1 {
		return protocol.Errorf(protocol.CodeInternal, "the node answered a one-action plan with %d results", len(res.Results))
	}
	reply, err := actionReply(res.Results[0])
	if err != nil {
		return err
	}
	c.printJSON(reply)
	return nil
}

func positionalParams(spec protocol.ActionSpec) []protocol.Param {
	var out []protocol.Param
	for _, p := range spec.Params {
		if p.Positional {
			out = append(out, p)
		}
	}
	return out
}

func positionalSynopsis(params []protocol.Param) string {
	var parts []string
	for _, p := range params {
		if p.Required {
			parts = append(parts, "<"+p.Name+">")
		} else {
			parts = append(parts, "["+p.Name+"]")
		}
	}
	return strings.Join(parts, " ")
}

func actionDetails(spec protocol.ActionSpec, params []protocol.Param) string {
	var b strings.Builder
	if len(params) > 0 {
		b.WriteString("Arguments:\n")
		for _, p := range params {
			fmt.Fprintf(&b, "  %-14s %s\n", p.Name, p.Help)
		}
		fmt.Fprintf(&b, "Extra words are joined to <%s> with spaces, so it needs no quotes.\n\n", params[len(params)-1].Name)
	}
	if spec.Mutates {
		b.WriteString("Changes page state: produces exactly one frame; its number is \"sequence\" in the reply.\n")
	} else {
		b.WriteString("Read-only: produces no frame.\n")
	}
	b.WriteString(`Prints {"ok":true,...} with what the action returned, or {"ok":false,"error":...,"code":...} and exits 1.`)
	return b.String()
}

// encodeAction writes the one-action plan {"action": {...}} with the
// fields in declaration order: type, parameters, basedOnSequence.
func encodeAction(spec protocol.ActionSpec, fields map[string]any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"action":{"type":`)
	add := func(v any) error {
		data, err := marshalLine(v)
		b.Write(data)
		return err
	}
	if err := add(spec.Type); err != nil {
		return nil, err
	}
	names := []string{}
	for _, p := range spec.Params {
		names = append(names, p.Name)
	}
	for _, name := range append(names, "basedOnSequence") {
		v, ok := fields[name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, ",%q:", name)
		if err := add(v); err != nil {
			return nil, err
		}
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

// positionalValues stores the positional arguments in fields.
func positionalValues(spec protocol.ActionSpec, params []protocol.Param, args []string, fields map[string]any) error {
	if len(params) == 0 {
		if len(args) > 0 {
			return usagef("%s: takes no arguments, got %q; usage: framebus %s [flags]", spec.Type, args, spec.Type)
		}
		return nil
	}
	if len(args) > len(params) {
		last := len(params) - 1
		args = append(args[:last:last], strings.Join(args[last:], " "))
	}
	for i, p := range params {
		if i >= len(args) {
			if p.Required {
				return usagef("%s: missing <%s> (%s); usage: framebus %s %s [flags]",
					spec.Type, p.Name, p.Help, spec.Type, positionalSynopsis(params))
			}
			continue
		}
		v, err := parseParam(p, args[i])
		if err != nil {
			return usagef("%s: <%s>: %v", spec.Type, p.Name, err)
		}
		fields[p.Name] = v
	}
	return nil
}

// parseParam converts one command-line word to the JSON value of p's kind.
func parseParam(p protocol.Param, s string) (any, error) {
	switch p.Kind {
	case protocol.KindBool:
		return strconv.ParseBool(s)
	case protocol.KindDuration:
		var d msDuration
		if err := d.Set(s); err != nil {
			return nil, err
		}
		return time.Duration(d).String(), nil
	}
	return s, nil
}

// paramFlag is a non-positional parameter declared as a flag.
type paramFlag struct {
	param protocol.Param
	value func() any // the flag's value as JSON
}

func declareParam(fs *pflag.FlagSet, p protocol.Param) paramFlag {
	if fs.Lookup(p.Name) != nil {
		// A programming error in the declarations: caught by TestActionCommands.
		panic(fmt.Sprintf("framebus: parameter %q clashes with a flag of the command line", p.Name))
	}
	switch p.Kind {
	case protocol.KindBool:
		v := fs.Bool(p.Name, false, p.Help)
		return paramFlag{p, func() any { return *v }}
	case protocol.KindDuration:
		var v msDuration
		fs.Var(&v, p.Name, p.Help)
		return paramFlag{p, func() any { return time.Duration(v).String() }}
	}
	v := fs.String(p.Name, "", p.Help)
	return paramFlag{p, func() any { return *v }}
}

// msDuration is a duration flag that also takes a bare number of
// milliseconds, the seeds' unit: --timeout 2s, --timeout 1500.
type msDuration time.Duration

func (d *msDuration) Set(s string) error {
	var v time.Duration
	if ms, err := strconv.ParseFloat(s, 64); err == nil {
		v = time.Duration(ms * float64(time.Millisecond))
	} else if v, err = time.ParseDuration(s); err != nil {
		return fmt.Errorf("%q is not a duration; use e.g. 500ms, 2s, 1m, or a number of milliseconds", s)
	}
	if v < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	*d = msDuration(v)
	return nil
}

// String is "" for zero, so help shows no "(default 0s)".
func (d *msDuration) String() string {
	if *d == 0 {
		return ""
	}
	return time.Duration(*d).String()
}

func (d *msDuration) Type() string { return "duration" }
