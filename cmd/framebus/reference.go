package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/framebus/framebus/protocol"
)

// The reference in docs/ is partly written from the declarations the CLI
// itself parses (protocol.ActionSpecs, the command table, protocol.Codes),
// so it cannot drift from them: TestDocsReference fails when a generated
// part of docs/ differs from what these functions write, and
// `go generate ./cmd/framebus` rewrites those parts.
//
//go:generate go test -run ^TestDocsReference$ -update-docs .

// docSection is one generated part of a file under docs/: the text between
// the lines "<!-- generated: NAME -->" and "<!-- end generated: NAME -->".
type docSection struct {
	file, name string
	write      func(w io.Writer)
}

var docSections = []docSection{
	{"commands.md", "actions", writeActionsTable},
	{"commands.md", "help", writeCommandsHelp},
	{"errors.md", "codes", writeCodesTable},
}

// writeActionsTable writes one row per declared action: its synopsis, its
// flags (the common ones left out) and what it does.
func writeActionsTable(w io.Writer) {
	fmt.Fprintln(w, "| action | flags | what it does |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, spec := range protocol.ActionSpecs() {
		use := spec.Type
		if args := positionalSynopsis(positionalParams(spec)); args != "" {
			use += " " + args
		}
		var flags []string
		for _, p := range spec.Params {
			if !p.Positional {
				flags = append(flags, "--"+flagName(p)+flagValueHint(p))
			}
		}
		kind := "read-only"
		switch {
		case spec.Resource != "":
			kind = "the " + spec.Resource + " resource: no tab, no frame"
		case spec.Mutates:
			kind = "makes a frame"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s (%s) |\n", use, mdCode(strings.Join(flags, " ")), mdCell(spec.Summary), kind)
	}
}

// flagValueHint is what follows a flag in the table: nothing for a switch,
// its choices, or the kind of value it takes.
func flagValueHint(p protocol.Param) string {
	switch {
	case p.Kind == protocol.KindBool:
		return ""
	case len(p.Choices) > 0:
		return " " + strings.Join(p.Choices, "|")
	case p.Kind == protocol.KindDuration:
		return " D"
	case p.Kind == protocol.KindInt:
		return " N"
	case p.Kind == protocol.KindNumber:
		return " X"
	case p.Kind == protocol.KindMap:
		return " 'NAME: VALUE'"
	}
	return " " + strings.ToUpper(flagName(p))
}

// writeCommandsHelp writes `framebus help <command>` for every command,
// in the order help lists them.
func writeCommandsHelp(w io.Writer) {
	all := commands()
	c := &cli{}
	for _, group := range groupOrder {
		fmt.Fprintf(w, "### %s\n", group)
		for _, cmd := range all {
			if cmd.group != group {
				continue
			}
			var help bytes.Buffer
			c.printCommandHelp(&help, cmd)
			fmt.Fprintf(w, "\n#### `%s`\n\n```text\n%s\n```\n", cmd.name, strings.TrimRight(help.String(), "\n"))
		}
		fmt.Fprintln(w)
	}
}

// writeCodesTable writes the error codes and what each means.
func writeCodesTable(w io.Writer) {
	fmt.Fprintln(w, "| code | meaning |")
	fmt.Fprintln(w, "|---|---|")
	for _, k := range protocol.Codes {
		fmt.Fprintf(w, "| `%s` | %s |\n", k.Code, mdCell(k.Meaning))
	}
}

// mdCell makes text safe inside a markdown table cell (a tag-like
// "<select>" would be taken for HTML).
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;").Replace(s)
}

// mdCode is s as code in a table cell, or nothing for an empty s.
func mdCode(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

// regenerate returns doc with every generated section of file rewritten,
// or an error naming a section whose markers are missing.
func regenerate(file, doc string) (string, error) {
	for _, s := range docSections {
		if s.file != file {
			continue
		}
		begin := "<!-- generated: " + s.name + " (go generate ./cmd/framebus; do not edit) -->\n"
		end := "<!-- end generated: " + s.name + " -->"
		i := strings.Index(doc, begin)
		j := strings.Index(doc, end)
		if i < 0 || j < i {
			return "", fmt.Errorf("docs/%s: no %q ... %q markers around the generated %s", file, strings.TrimSpace(begin), end, s.name)
		}
		var body bytes.Buffer
		s.write(&body)
		doc = doc[:i+len(begin)] + body.String() + doc[j:]
	}
	return doc, nil
}
