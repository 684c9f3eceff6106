package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/framebus/framebus/protocol"
)

// actionCommand builds the subcommand of one declared action from its
// protocol.ActionSpec alone:
//
//   - positional parameters are arguments in declaration order; an optional
//     one is filled only when the line has more arguments than the required
//     ones (type [selector] <text>); a Rest parameter takes the rest of the
//     line, joined with spaces (eval 1 + 1) or as a list (upload f1 f2);
//   - the other parameters are flags named after them in kebab case
//     (networkIdle: --network-idle) of their kind: bool --wait, duration
//     --timeout 2s (a bare number is milliseconds), string, list (repeat);
//   - ClientOnly parameters are done here with the result (clientParams),
//     never sent;
//   - file paths (localPathParams) are the user's: made absolute against
//     the client's working directory, read and sent to the tab over the
//     bus, and named in the plan by the ids it staged them under;
//   - every action also takes --tab, --bus, --prefix, --based-on, --dry-run.
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
			onTab := spec.Resource == "" // a resource's action touches no tab
			target.declare(fs, onTab)
			var basedOn intFlag
			var dryRun bool
			if onTab {
				fs.Var(&basedOn, "based-on", "run only while frame `N` is the tab's current frame (sets basedOnSequence)")
			}
			boolVarP(fs, &dryRun, "dry-run", "", "print the plan instead of sending it (needs no node)")
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
					if fs.Changed(f.name) {
						fields[f.param.Name] = f.value()
					}
				}
				if err := absolutePaths(spec, fields); err != nil {
					return err
				}
				if fs.Changed("based-on") {
					fields["basedOnSequence"] = int64(basedOn)
				}
				local := map[string]any{} // ClientOnly values, kept here
				for _, p := range spec.Params {
					if v, ok := fields[p.Name]; ok && p.ClientOnly {
						if err := clientParams[p.Name].check(v); err != nil {
							return usagef("%s: %v", spec.Type, err)
						}
						local[p.Name] = v
						delete(fields, p.Name)
					}
				}
				data, err := encodeAction(spec, fields)
				if err != nil {
					return err
				}
				plan, err := protocol.DecodePlan(data)
				if err != nil {
					return inCLITerms(spec, err)
				}
				if dryRun {
					c.printJSON(json.RawMessage(data))
					return nil
				}
				if !onTab {
					return c.runResource(target, plan.Actions[0])
				}
				return c.runAction(target, data, plan, local)
			}
		},
	}
}

// runResource sends a resource's action (fetch, search) to its resource,
// which any node answers, and prints the reply.
func (c *cli) runResource(target clientFlags, a protocol.Action) error {
	cl, err := c.connect(target)
	if err != nil {
		return err
	}
	defer cl.close()
	var reply any
	switch a.Type {
	case "fetch":
		reply, err = cl.bc.Fetch(c.ctx, a.FetchRequest())
	case "search":
		reply, err = cl.bc.Search(c.ctx, a.SearchRequest())
	default:
		return protocol.Errorf(protocol.CodeInternal, "%s: no resource carries it out", a.Type)
	}
	if err != nil {
		return errNoNode(err)
	}
	c.printJSON(reply)
	return nil
}

func (c *cli) runAction(target clientFlags, data []byte, plan protocol.Plan, local map[string]any) error {
	cl, err := c.connect(target)
	if err != nil {
		return err
	}
	defer cl.close()
	tab, err := cl.resolveTab(c.ctx, target.tab)
	if err != nil {
		return err
	}
	if a := plan.Actions[0]; localPathParams["files"] && len(a.Files) > 0 && local["onNode"] != true {
		if data, plan, err = cl.stagedUpload(c.ctx, tab, plan); err != nil {
			return err
		}
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
	result := res.Results[0]
	var extra []replyField
	for name, v := range local {
		fields, err := clientParams[name].apply(v, &result)
		if err != nil {
			return err
		}
		extra = append(extra, fields...)
	}
	reply, err := actionReply(result, extra...)
	if err != nil {
		return err
	}
	c.printJSON(reply)
	return nil
}

// localPathParams are the parameters, by name, that name files the user
// points at from the command line (upload's files): the CLI makes them
// absolute against its working directory, reads them and stages them on
// the tab (stagedUpload), unless --on-node says they are the node's.
// TestActionCommands checks each is a declared string or list parameter.
var localPathParams = map[string]bool{"files": true}

// absolutePaths makes the relative paths among fields absolute against the
// client's working directory. An empty path is left for the node to refuse.
func absolutePaths(spec protocol.ActionSpec, fields map[string]any) error {
	for name := range localPathParams {
		switch v := fields[name].(type) {
		case string:
			abs, err := absolutePath(v)
			if err != nil {
				return protocol.Errorf(protocol.CodeBadRequest, "%s: <%s>: %v", spec.Type, name, err)
			}
			fields[name] = abs
		case []string:
			abs := make([]string, len(v))
			for i, p := range v {
				var err error
				if abs[i], err = absolutePath(p); err != nil {
					return protocol.Errorf(protocol.CodeBadRequest, "%s: <%s>: %v", spec.Type, name, err)
				}
			}
			fields[name] = abs
		}
	}
	return nil
}

func absolutePath(path string) (string, error) {
	if path == "" {
		return path, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("cannot make %s absolute: %v", path, err)
	}
	return abs, nil
}

// flagName is a parameter's flag: its JSON name in kebab case.
func flagName(p protocol.Param) string {
	var b strings.Builder
	for i, r := range p.Name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
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
		name := p.Name
		if p.Rest {
			name += "..."
		}
		if p.Required {
			parts = append(parts, "<"+name+">")
		} else {
			parts = append(parts, "["+name+"]")
		}
	}
	return strings.Join(parts, " ")
}

func actionDetails(spec protocol.ActionSpec, params []protocol.Param) string {
	var b strings.Builder
	if len(params) > 0 {
		b.WriteString("Arguments:\n")
		for _, p := range params {
			fmt.Fprintf(&b, "  %-14s %s%s\n", p.Name, p.Help, choices(p))
		}
		for _, p := range params {
			switch {
			case p.Rest && p.Kind == protocol.KindStrings:
				fmt.Fprintf(&b, "Every argument from <%s> on is one more item.\n", p.Name)
			case p.Rest:
				fmt.Fprintf(&b, "Extra words are joined to <%s> with spaces, so it needs no quotes.\n", p.Name)
			}
		}
		b.WriteString("Put -- before an argument that starts with a dash: framebus " + spec.Type + " -- -x.\n\n")
	}
	switch {
	case spec.Resource != "":
		fmt.Fprintf(&b, "The %s resource, which any node answers: touches no tab, produces no frame.\n", spec.Resource)
	case spec.Mutates:
		b.WriteString("Changes page state: produces exactly one frame; its number is \"sequence\" in the reply.\n")
	default:
		b.WriteString("Read-only: produces no frame.\n")
	}
	b.WriteString(`Prints {"ok":true,...} with what the action returned, or {"ok":false,"error":...,"code":...} and exits 1.`)
	return b.String()
}

func choices(p protocol.Param) string {
	if len(p.Choices) == 0 {
		return ""
	}
	return " (" + strings.Join(p.Choices, " or ") + ")"
}

// encodeAction writes the one-action plan {"action": {...}} with the
// fields in declaration order: type, parameters, basedOnSequence.
func encodeAction(spec protocol.ActionSpec, fields map[string]any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"action":{"type":`)
	add := func(v any) error {
		data, err := protocol.Marshal(v)
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
		key, _ := json.Marshal(name)
		fmt.Fprintf(&b, ",%s:", key)
		if err := add(v); err != nil {
			return nil, err
		}
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

// positionalValues assigns the arguments to the positional parameters:
// required ones always take one, optional ones only while the line has
// arguments to spare, and a Rest parameter takes what is left.
func positionalValues(spec protocol.ActionSpec, params []protocol.Param, args []string, fields map[string]any) error {
	usage := fmt.Sprintf("usage: framebus %s %s [flags]", spec.Type, positionalSynopsis(params))
	if len(params) == 0 {
		if len(args) > 0 {
			return usagef("%s: takes no arguments, got %q; usage: framebus %s [flags]", spec.Type, args, spec.Type)
		}
		return nil
	}
	required := 0
	for _, p := range params {
		if p.Required {
			required++
		}
	}
	spare := len(args) - required
	next := 0
	for _, p := range params {
		if next >= len(args) || (!p.Required && spare <= 0) {
			if p.Required {
				return usagef("%s: missing <%s> (%s); %s", spec.Type, p.Name, protocol.LowerFirst(p.Help), usage)
			}
			continue
		}
		if !p.Required {
			spare--
		}
		words := args[next : next+1]
		if p.Rest {
			words = args[next:]
		}
		next += len(words)
		v, err := parseParam(p, words)
		if err != nil {
			return usagef("%s: <%s>: %v", spec.Type, p.Name, err)
		}
		fields[p.Name] = v
	}
	if next < len(args) {
		return usagef("%s: too many arguments: %q; %s", spec.Type, args[next:], usage)
	}
	return nil
}

// parseParam converts command-line words to the JSON value of p's kind.
func parseParam(p protocol.Param, words []string) (any, error) {
	switch p.Kind {
	case protocol.KindStrings:
		return words, nil
	case protocol.KindInt:
		return wholeNumber(strings.Join(words, " "))
	case protocol.KindNumber:
		return decimalNumber(strings.Join(words, " "))
	case protocol.KindBool:
		b, err := strconv.ParseBool(strings.Join(words, " "))
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", strings.Join(words, " "))
		}
		return b, nil
	case protocol.KindDuration:
		var d msDuration
		if err := d.Set(strings.Join(words, " ")); err != nil {
			return nil, err
		}
		return time.Duration(d).String(), nil
	}
	return strings.Join(words, " "), nil
}

// paramFlag is a non-positional parameter declared as a flag.
type paramFlag struct {
	param protocol.Param
	name  string     // the flag's name
	value func() any // the flag's value as JSON
}

func declareParam(fs *pflag.FlagSet, p protocol.Param) paramFlag {
	name := flagName(p)
	if fs.Lookup(name) != nil || p.Short != "" && fs.ShorthandLookup(p.Short) != nil {
		// A programming error in the declarations: caught by TestActionCommands.
		panic(fmt.Sprintf("framebus: parameter %q clashes with the flag --%s", p.Name, name))
	}
	help := p.Help + choices(p)
	switch p.Kind {
	case protocol.KindBool:
		var v bool
		boolVarP(fs, &v, name, p.Short, help)
		return paramFlag{p, name, func() any { return v }}
	case protocol.KindDuration:
		var v msDuration
		fs.VarP(&v, name, p.Short, help)
		return paramFlag{p, name, func() any { return time.Duration(v).String() }}
	case protocol.KindInt:
		var v intFlag
		fs.VarP(&v, name, p.Short, help)
		return paramFlag{p, name, func() any { return int(v) }}
	case protocol.KindNumber:
		var v numberFlag
		fs.VarP(&v, name, p.Short, help)
		return paramFlag{p, name, func() any { return float64(v) }}
	case protocol.KindStrings:
		v := fs.StringArrayP(name, p.Short, nil, help+" (repeat the flag for more)")
		return paramFlag{p, name, func() any { return *v }}
	case protocol.KindMap:
		v := mapFlag{}
		fs.VarP(v, name, p.Short, help+" (repeat the flag for more)")
		return paramFlag{p, name, func() any { return map[string]string(v) }}
	}
	v := fs.StringP(name, p.Short, "", help)
	return paramFlag{p, name, func() any { return *v }}
}

// inCLITerms words an error decoding a command's one-action plan as the
// command line speaks: "action.to" is the --to flag, "action.url" the
// <url> argument, and the command is named once.
func inCLITerms(spec protocol.ActionSpec, err error) error {
	msg := strings.TrimPrefix(err.Error(), "action: ")
	for _, p := range spec.Params {
		name := "--" + p.Name
		if p.Positional {
			name = "<" + p.Name + ">"
		}
		msg = strings.ReplaceAll(msg, "action."+p.Name+":", name+":")
		msg = strings.ReplaceAll(msg, spec.Type+"."+p.Name+":", name+":")
	}
	if !strings.HasPrefix(msg, spec.Type+": ") {
		msg = spec.Type + ": " + msg
	}
	return usagef("%s", msg)
}
