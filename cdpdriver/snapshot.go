package cdpdriver

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// snapshotJS computes the snapshot in the page (see the file's comment).
//
//go:embed snapshot.js
var snapshotJS string

// snapshotFunction is the snapshot function, installed once per document
// (see installed.go): a 1,000-row page takes a third longer when its
// source comes with every call.
var snapshotFunction = newInstalledFunction("__framebusSnapshot", `(() => {`+offPageJS+`
	return (`+snapshotJS+`);
})()`)

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
	// Limited refuses a snapshot longer than the page's result limit
	// (SetResultLimit) with a *ResultTooLargeError: an action's value has
	// to fit a reply; a frame's content, which travels in chunks, has
	// its own limit, MaxBytes.
	Limited bool
	// MaxBytes refuses a snapshot longer than this (0: none) the same way,
	// when not Limited.
	MaxBytes int
}

// SnapshotNode is one node of the accessibility tree.
type SnapshotNode struct {
	Role string `json:"role"`
	Name string `json:"name,omitempty"`
	// Ref names an interactive element for element-taking actions.
	Ref      string `json:"ref,omitempty"`
	Level    int    `json:"level,omitempty"`    // headings
	Checked  any    `json:"checked,omitempty"`  // true, false or "mixed"
	Pressed  any    `json:"pressed,omitempty"`  // true, false or "mixed"
	Expanded *bool  `json:"expanded,omitempty"` // set when the element can expand
	Selected *bool  `json:"selected,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
	Required bool   `json:"required,omitempty"`
	Focused  bool   `json:"focused,omitempty"`
	Editable bool   `json:"editable,omitempty"` // editable content with no text field role
	// OffPage: an interactive element no scrolling brings on screen (a
	// closed off-canvas menu), and the side of the page it lies beyond
	// ("left", "top-left"); actions on it fail with not_visible.
	OffPage string    `json:"offpage,omitempty"`
	Value   *string   `json:"value,omitempty"` // form fields
	Attrs   *Locators `json:"attrs,omitempty"` // interactive elements
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
	// The page answers in a compact line format (parseSnapshotWire): the
	// tree as JSON is twice the size and much slower to move and decode.
	var r snapshotReply
	opts := map[string]any{"interactiveOnly": o.InteractiveOnly, "maxDepth": o.MaxDepth, "maxNodes": o.MaxNodes, "firstRef": p.nextRef}
	if o.Limited {
		opts["maxBytes"] = p.resultLimit
	} else if o.MaxBytes > 0 {
		opts["maxBytes"] = o.MaxBytes
	}
	err := p.callInstalled(ctx, "snapshot", o.Selector, snapshotFunction, false, &r, opts)
	var tooLarge *ResultTooLargeError
	if errors.As(err, &tooLarge) && r.Head != "" {
		// Refused, but taken: its refs are given out.
		if _, next, perr := parseSnapshotWire(r.Head); perr == nil {
			p.nextRef = max(p.nextRef, next)
		}
	}
	if err != nil {
		return Snapshot{}, err
	}
	s, next, err := parseSnapshotWire(r.Wire)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: unexpected answer: %w", err)
	}
	p.nextRef = max(p.nextRef, next)
	return s, nil
}

// snapshotReply is snapshot.js's answer: {wire} or {error}.
type snapshotReply struct {
	elementReply
	Wire string `json:"wire"`
	Head string `json:"head"` // the wire's first line, of one too large to return
}

// UnmarshalJSON takes the usual answer, {"wire":"..."}, with a decoder of
// its own that jumps from escape to escape (the wire has few: its first
// line's quotes, the newline after it): a decode with encoding/json
// costs a millisecond on a 1,000-row page. Anything else is decoded by
// encoding/json.
func (r *snapshotReply) UnmarshalJSON(b []byte) error {
	if rest, ok := bytes.CutPrefix(b, []byte(`{"wire":"`)); ok && bytes.HasSuffix(rest, []byte(`"}`)) {
		if wire, ok := unquoteJSON(rest[:len(rest)-2]); ok {
			r.Wire = wire
			return nil
		}
	}
	type plain snapshotReply // without this method
	return json.Unmarshal(b, (*plain)(r))
}

// unquoteJSON decodes the inside of a JSON string as encoding/json would,
// or says it cannot (an unescaped quote or control character, a bad
// escape, bytes that are not UTF-8): then the caller decodes it in full.
func unquoteJSON(s []byte) (string, bool) {
	if !utf8.Valid(s) { // encoding/json replaces what is not UTF-8
		return "", false
	}
	for _, c := range s {
		if c < 0x20 { // not allowed raw in a JSON string
			return "", false
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := bytes.IndexAny(s, "\\\"")
		if i < 0 {
			b.Write(s)
			return b.String(), true
		}
		if s[i] == '"' || i+1 >= len(s) {
			return "", false
		}
		b.Write(s[:i])
		c := s[i+1]
		s = s[i+2:]
		switch c {
		case '"', '\\', '/':
			b.WriteByte(c)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, n := unquoteJSONRune(s)
			if n == 0 {
				return "", false
			}
			b.WriteRune(r)
			s = s[n:]
		default:
			return "", false
		}
	}
}

// unquoteJSONRune decodes the hex digits after \u (and a low surrogate's
// \uXXXX after a high one), returning the rune and the bytes read, 0 when
// they are not hex.
func unquoteJSONRune(s []byte) (rune, int) {
	hex4 := func(s []byte) rune {
		if len(s) < 4 {
			return -1
		}
		v, err := strconv.ParseUint(string(s[:4]), 16, 16)
		if err != nil {
			return -1
		}
		return rune(v)
	}
	r := hex4(s)
	if r < 0 {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if len(s) >= 10 && s[4] == '\\' && s[5] == 'u' {
			if r2 := hex4(s[6:]); r2 >= 0 {
				if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
					return d, 10
				}
			}
		}
		return unicode.ReplacementChar, 4 // as encoding/json does
	}
	return r, 4
}

// The separators of snapshot.js's answer: printable, so that the
// protocol's JSON carries them as one byte each.
const (
	wireLineSep  = "~"
	wireFieldSep = "|"
)

// parseSnapshotWire decodes snapshot.js's answer: a JSON line with the
// snapshot's fields, then one line per node in document order, separated
// by ~: "depth|role" and |-separated fields, each a key letter and its
// value (see the end of snapshot.js), with backslash escapes.
func parseSnapshotWire(wire string) (s Snapshot, nextRef int, err error) {
	head, body, _ := strings.Cut(wire, "\n")
	var h struct {
		Snapshot
		NextRef int `json:"nextRef"`
	}
	if err := json.Unmarshal([]byte(head), &h); err != nil {
		return Snapshot{}, 0, err
	}
	s, nextRef = h.Snapshot, h.NextRef
	s.Nodes = []SnapshotNode{}
	if body == "" {
		return s, nextRef, nil
	}
	// Two passes, so that every list is allocated once, at its size: the
	// depths give each node's number of children, then the nodes are
	// decoded into their places. Locators and values come from slabs (a
	// snapshot has thousands of each).
	lines := strings.Split(body, wireLineSep)
	kids := make([]int, len(lines)+1) // kids[i+1]: children of node i; kids[0]: roots
	parents := []int{-1}              // the open ancestors, by depth
	for i, line := range lines {
		d, rest, ok := strings.Cut(line, wireFieldSep)
		depth, err := strconv.Atoi(d)
		if !ok || err != nil || depth < 0 || depth >= len(parents) {
			return Snapshot{}, 0, fmt.Errorf("bad node line %q", line)
		}
		lines[i] = rest // the node, for the second pass
		parents = append(parents[:depth+1], i)
		kids[parents[depth]+1]++
	}
	slabs := &wireSlabs{
		locators: make([]Locators, 0, s.Interactive),
		values:   make([]string, 0, strings.Count(body, wireFieldSep+"v")),
	}
	next := 0
	var build func(count int) ([]SnapshotNode, error)
	build = func(count int) ([]SnapshotNode, error) {
		list := make([]SnapshotNode, count)
		for c := range list {
			i := next
			next++
			if err := parseSnapshotNode(lines[i], slabs, &list[c]); err != nil {
				return nil, err
			}
			if k := kids[i+1]; k > 0 {
				var err error
				if list[c].Children, err = build(k); err != nil {
					return nil, err
				}
			}
		}
		return list, nil
	}
	if kids[0] > 0 {
		nodes, err := build(kids[0])
		if err != nil {
			return Snapshot{}, 0, err
		}
		s.Nodes = nodes
	}
	return s, nextRef, nil
}

// wireSlabs hand out the locators and values of a snapshot's nodes.
type wireSlabs struct {
	locators []Locators
	values   []string
}

func (w *wireSlabs) locator() *Locators {
	if len(w.locators) == cap(w.locators) { // the page said fewer than it sent
		return &Locators{}
	}
	w.locators = w.locators[:len(w.locators)+1]
	return &w.locators[len(w.locators)-1]
}

func (w *wireSlabs) value(v string) *string {
	if len(w.values) == cap(w.values) {
		return &v
	}
	w.values = append(w.values, v)
	return &w.values[len(w.values)-1]
}

// parseSnapshotNode decodes "role|field|field...".
func parseSnapshotNode(line string, slabs *wireSlabs, n *SnapshotNode) error {
	role, fields, more := strings.Cut(line, wireFieldSep)
	n.Role = role
	if role == "" || more && fields == "" {
		return fmt.Errorf("bad node %q", line)
	}
	loc := func() *Locators {
		if n.Attrs == nil {
			n.Attrs = slabs.locator()
		}
		return n.Attrs
	}
	for fields != "" {
		var f string
		f, fields, _ = strings.Cut(fields, wireFieldSep)
		if f == "" {
			return fmt.Errorf("empty field in %q", line)
		}
		k, v := f[0], unescapeSnapshotWire(f[1:])
		switch k {
		case 'n':
			n.Name = v
		case 'r':
			n.Ref = v
		case 'l':
			n.Level, _ = strconv.Atoi(v)
		case 'c':
			n.Checked = snapshotTri(v)
		case 'p':
			n.Pressed = snapshotTri(v)
		case 'e':
			b := v == "1"
			n.Expanded = &b
		case 's':
			b := v == "1"
			n.Selected = &b
		case 'd':
			n.Disabled = true
		case 'q':
			n.Required = true
		case 'f':
			n.Focused = true
		case 'x':
			n.Editable = true
		case 'o':
			n.OffPage = v
		case 'v':
			n.Value = slabs.value(v)
		case 'i':
			loc().ID = v
		case 'a':
			loc().AriaLabel = v
		case 't':
			loc().TestID = v
		case 'm':
			loc().Name = v
		case 'h':
			loc().Href = v
		}
	}
	return nil
}

func snapshotTri(v string) any {
	switch v {
	case "m":
		return "mixed"
	case "1":
		return true
	}
	return false
}

func unescapeSnapshotWire(v string) string {
	if strings.IndexByte(v, '\\') < 0 {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) {
			i++
			switch v[i] {
			case 'p':
				c = '|'
			case 'w':
				c = '~'
			default:
				c = v[i]
			}
		}
		b.WriteByte(c)
	}
	return b.String()
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
	b.Grow(s.Count * 64) // about a line's length: one allocation, not a dozen
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
		writeQuoted(b, n.Name)
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
	quoted := func(k, v string) {
		b.WriteString(" [")
		b.WriteString(k)
		b.WriteByte('=')
		writeQuoted(b, v)
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
	if n.Editable {
		attr("editable", "")
	}
	if n.Ref != "" {
		attr("ref", n.Ref)
	}
	if n.OffPage != "" {
		attr("offpage", n.OffPage)
	}
	if a := n.Attrs; a != nil {
		for _, kv := range [][2]string{{"id", a.ID}, {"testid", a.TestID}, {"name", a.Name}, {"href", a.Href}} {
			if kv[1] != "" {
				quoted(kv[0], kv[1])
			}
		}
		if a.AriaLabel != "" && a.AriaLabel != n.Name {
			quoted("aria-label", a.AriaLabel)
		}
	}
	switch {
	case n.Value != nil && *n.Value == "":
	case n.Value != nil && len(n.Children) == 0:
		b.WriteString(": ")
		writeQuoted(b, *n.Value)
	case n.Value != nil:
		quoted("value", *n.Value)
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

// writeQuoted writes strconv.Quote(s), without making it when s is plain
// printable ASCII, as most names and attributes are.
func writeQuoted(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			b.WriteString(strconv.Quote(s))
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}
