package cdpdriver

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// snapshotJS computes the snapshot in the page (see the file's comment).
//
//go:embed snapshot.js
var snapshotJS string

// SnapshotOptions shape a snapshot.
type SnapshotOptions struct {
	// Selector roots the snapshot at an element (a CSS selector or a ref);
	// the whole page when empty.
	Selector string
	// InteractiveOnly keeps the interactive elements (and headings) only.
	InteractiveOnly bool
	// MaxDepth bounds the tree's depth (0: unbounded).
	MaxDepth int
	// MaxNodes caps the number of nodes (0: unbounded); a snapshot cut
	// short says so in Truncated.
	MaxNodes int
}

// SnapshotNode is one node of the accessibility tree.
type SnapshotNode struct {
	Role string `json:"role"`
	Name string `json:"name,omitempty"`
	// Ref names an interactive element for element-taking actions.
	Ref      string    `json:"ref,omitempty"`
	Level    int       `json:"level,omitempty"`    // headings
	Checked  any       `json:"checked,omitempty"`  // true, false or "mixed"
	Pressed  any       `json:"pressed,omitempty"`  // true, false or "mixed"
	Expanded *bool     `json:"expanded,omitempty"` // set when the element can expand
	Selected *bool     `json:"selected,omitempty"`
	Disabled bool      `json:"disabled,omitempty"`
	Required bool      `json:"required,omitempty"`
	Focused  bool      `json:"focused,omitempty"`
	Value    *string   `json:"value,omitempty"` // form fields
	Attrs    *Locators `json:"attrs,omitempty"` // interactive elements
	// Children are the node's children, in document order.
	Children []SnapshotNode `json:"children,omitempty"`
}

// Locators are the attributes of an interactive element useful to find
// it again by other means.
type Locators struct {
	ID        string `json:"id,omitempty"`
	AriaLabel string `json:"ariaLabel,omitempty"`
	TestID    string `json:"testId,omitempty"`
	Name      string `json:"name,omitempty"`
	Href      string `json:"href,omitempty"`
}

// Snapshot is a page's accessibility snapshot.
type Snapshot struct {
	URL         string         `json:"url"`
	Title       string         `json:"title"`
	Nodes       []SnapshotNode `json:"nodes"`
	Interactive int            `json:"interactive"` // nodes with a ref
	Count       int            `json:"count"`       // nodes in all
	Truncated   bool           `json:"truncated,omitempty"`
}

// Snapshot takes the page's accessibility snapshot. Every interactive
// element gets a ref that element-taking actions accept in place of a
// selector, for as long as the element lives.
func (p *Page) Snapshot(ctx context.Context, o SnapshotOptions) (Snapshot, error) {
	// The page answers the snapshot as one JSON string: a string crosses
	// the protocol much faster than the same tree as a by-value object.
	var r struct {
		elementReply
		JSON string `json:"json"`
	}
	opts := map[string]any{"interactiveOnly": o.InteractiveOnly, "maxDepth": o.MaxDepth, "maxNodes": o.MaxNodes}
	if err := p.callOnDocument(ctx, "snapshot", o.Selector, snapshotJS, false, &r, opts); err != nil {
		return Snapshot{}, err
	}
	var s Snapshot
	if err := json.Unmarshal([]byte(r.JSON), &s); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: unexpected answer: %w", err)
	}
	return s, nil
}

// Text renders the snapshot in its compact text form, one line per node,
// indented by depth:
//
//   - heading "Example shop" [level=1]
//   - button "Buy" [ref=e12]
//   - textbox "Query" [ref=e3] [id=q] [name=q]: lamps
//   - list:
//   - listitem: First
func (s Snapshot) Text() string {
	var b strings.Builder
	for _, n := range s.Nodes {
		writeNode(&b, n, 0)
	}
	if s.Truncated {
		b.WriteString("- note: truncated after " + strconv.Itoa(s.Count) + " nodes\n")
	}
	return b.String()
}

func writeNode(b *strings.Builder, n SnapshotNode, depth int) {
	for range depth {
		b.WriteString("  ")
	}
	b.WriteString("- ")
	b.WriteString(n.Role)
	if n.Role == "text" {
		b.WriteString(": ")
		b.WriteString(n.Name)
		b.WriteByte('\n')
		return
	}
	if n.Name != "" {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(n.Name))
	}
	attr := func(k, v string) {
		b.WriteString(" [")
		b.WriteString(k)
		if v != "" {
			b.WriteByte('=')
			b.WriteString(v)
		}
		b.WriteByte(']')
	}
	tri := func(k string, v any) {
		switch v {
		case true:
			attr(k, "")
		case false:
			attr(k, "false")
		case "mixed":
			attr(k, "mixed")
		}
	}
	if n.Level > 0 {
		attr("level", strconv.Itoa(n.Level))
	}
	tri("checked", n.Checked)
	tri("pressed", n.Pressed)
	if n.Expanded != nil {
		tri("expanded", *n.Expanded)
	}
	if n.Selected != nil && *n.Selected {
		attr("selected", "")
	}
	if n.Disabled {
		attr("disabled", "")
	}
	if n.Required {
		attr("required", "")
	}
	if n.Focused {
		attr("focused", "")
	}
	if n.Ref != "" {
		attr("ref", n.Ref)
	}
	if a := n.Attrs; a != nil {
		for _, kv := range [][2]string{{"id", a.ID}, {"testid", a.TestID}, {"name", a.Name}, {"href", a.Href}} {
			if kv[1] != "" {
				attr(kv[0], strconv.Quote(kv[1]))
			}
		}
		if a.AriaLabel != "" && a.AriaLabel != n.Name {
			attr("aria-label", strconv.Quote(a.AriaLabel))
		}
	}
	switch {
	case n.Value != nil && *n.Value == "":
	case n.Value != nil && len(n.Children) == 0:
		b.WriteString(": ")
		b.WriteString(strconv.Quote(*n.Value))
	case n.Value != nil:
		attr("value", strconv.Quote(*n.Value))
	}
	// One text child and no name: inline (- paragraph: Hello).
	if len(n.Children) == 1 && n.Children[0].Role == "text" && n.Name == "" && (n.Value == nil || *n.Value == "") {
		b.WriteString(": ")
		b.WriteString(n.Children[0].Name)
		b.WriteByte('\n')
		return
	}
	if len(n.Children) > 0 {
		b.WriteByte(':')
	}
	b.WriteByte('\n')
	for _, c := range n.Children {
		writeNode(b, c, depth+1)
	}
}
