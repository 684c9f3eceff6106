package snaptext

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Delta is the change from one snapshot to another.
type Delta struct {
	// Text is the delta as Apply reads it (see docs/deltas.md).
	Text string
	// Changes counts its operations: 0 when the snapshots are equal.
	Changes int
}

// Diff is the delta from base to next, two snapshots of one document; false
// when either is not a snapshot's text (see parse). The delta is checked:
// Apply(base, delta) is next.
func Diff(base, next string) (Delta, bool) {
	old, ok := parse(base)
	if !ok {
		return Delta{}, false
	}
	cur, ok := parse(next)
	if !ok {
		return Delta{}, false
	}
	d := &differ{old: old, cur: cur, refKeys: map[string]int{}, lineKeys: map[string]int{}}
	d.children(old.root, cur.root)
	var b strings.Builder
	b.WriteString("delta base=" + Hash(base) + " result=" + Hash(next) + " changes=" + strconv.Itoa(len(d.ops)) + "\n")
	for _, o := range d.ops {
		d.write(&b, o)
	}
	delta := Delta{Text: b.String(), Changes: len(d.ops)}
	if got, err := Apply(base, delta.Text); err != nil || got != next {
		return Delta{}, false // not expected; the caller sends the whole snapshot
	}
	return delta, true
}

// opKind is what an operation does.
type opKind int

const (
	opChanged opKind = iota // a node's line: its new line
	opAdded                 // subtrees added under a node, after one of its children
	opRemoved               // a subtree removed
)

// op is one operation of a delta; the nodes it names are base's, but for
// the added subtrees.
type op struct {
	kind   opKind
	target *node   // changed, removed: the node; added: the parent
	last   *node   // removed: the last of the run of siblings removed from target on
	after  *node   // added: the child they follow; nil: first
	nodes  []*node // added: the subtrees; changed: the node as it is now
}

type differ struct {
	old, cur          *tree
	refKeys, lineKeys map[string]int
	ops               []op
}

// key interns a node's key: its ref when it names that node only in its
// tree, else its line and the first such ref under it (a table's rows
// are all "- row:", each told by the link in it: a row removed is one
// removal, not every row after it changed).
func (d *differ) key(t *tree, n *node) int {
	keys, k := d.lineKeys, n.line
	if t.keyed(n) {
		keys, k = d.refKeys, n.ref
	} else if r := firstRef(t, n); r != "" {
		k += "\x00" + r
	}
	id, ok := keys[k]
	if !ok {
		id = len(d.refKeys) + len(d.lineKeys)
		keys[k] = id
	}
	return id
}

// firstRef is the first ref under n that names one node only, "" when
// none (in document order, at most a few levels down: deeper refs tell a
// container apart less well than they cost).
func firstRef(t *tree, n *node) string {
	var find func(n *node, depth int) string
	find = func(n *node, depth int) string {
		for _, c := range n.children {
			if t.keyed(c) {
				return c.ref
			}
			if depth < firstRefDepth {
				if r := find(c, depth+1); r != "" {
					return r
				}
			}
		}
		return ""
	}
	return find(n, 1)
}

// firstRefDepth bounds how far below a node firstRef looks.
const firstRefDepth = 4

// keyed reports whether n is matched by its ref.
func (t *tree) keyed(n *node) bool { return n.ref != "" && t.refs[n.ref] == n }

// children diffs the children of two nodes taken for the same one.
func (d *differ) children(o, c *node) {
	a := make([]int, len(o.children))
	for i, n := range o.children {
		a[i] = d.key(d.old, n)
	}
	b := make([]int, len(c.children))
	for j, n := range c.children {
		b[j] = d.key(d.cur, n)
	}
	pairs := append(common(a, b), [2]int{len(a), len(b)}) // a last pair past both ends closes the last gap
	i, j := 0, 0
	var anchor *node // the last child of o kept, in the new order
	for _, p := range pairs {
		// The gap before the pair: nodes of the same role without a ref
		// at the same place are taken for one changed node (a text that
		// changed); the rest are removed and added.
		for i < p[0] && j < p[1] && !d.old.keyed(o.children[i]) && !d.cur.keyed(c.children[j]) &&
			o.children[i].role() == c.children[j].role() {
			d.same(o.children[i], c.children[j])
			anchor = o.children[i]
			i, j = i+1, j+1
		}
		if i < p[0] { // a run of siblings removed: one operation
			d.ops = append(d.ops, op{kind: opRemoved, target: o.children[i], last: o.children[p[0]-1]})
			i = p[0]
		}
		if j < p[1] {
			d.ops = append(d.ops, op{kind: opAdded, target: o, after: anchor, nodes: c.children[j:p[1]]})
			j = p[1]
		}
		if p[0] < len(a) {
			d.same(o.children[p[0]], c.children[p[1]])
			anchor = o.children[p[0]]
			i, j = p[0]+1, p[1]+1
		}
	}
}

// same diffs two nodes taken for the same one.
func (d *differ) same(o, c *node) {
	if o.line != c.line {
		d.ops = append(d.ops, op{kind: opChanged, target: o, nodes: []*node{c}})
	}
	d.children(o, c)
}

// address names a node of base: its ref when that names it alone, else
// its place: the address of its parent (none at the top) and its index.
func (d *differ) address(n *node) string {
	if d.old.keyed(n) {
		return n.ref
	}
	if n.parent == nil {
		return "top"
	}
	up := ""
	if n.parent.parent != nil {
		up = d.address(n.parent)
	}
	return up + "/" + strconv.Itoa(n.index)
}

// write renders an operation: a header line, then the lines it brings,
// indented two spaces more than the delta's.
func (d *differ) write(b *strings.Builder, o op) {
	switch o.kind {
	case opChanged:
		b.WriteString("changed " + d.address(o.target))
		writeContext(b, o.target.parent)
		b.WriteString(":\n")
		b.WriteString("  " + o.nodes[0].line + "\n")
	case opRemoved:
		b.WriteString("removed " + d.address(o.target))
		if o.last != o.target {
			b.WriteString(" through " + d.address(o.last))
		}
		writeContext(b, o.target.parent)
		b.WriteString(": " + label(o.target.line, 80))
		n := 0
		for _, c := range o.target.parent.children[o.target.index : o.last.index+1] {
			n += c.size()
		}
		switch {
		case o.last != o.target:
			b.WriteString(" … " + label(o.last.line, 80) + " (" + strconv.Itoa(o.last.index-o.target.index+1) + " siblings, " + strconv.Itoa(n) + " nodes)")
		case n > 1:
			b.WriteString(" (and " + strconv.Itoa(n-1) + " nodes under it)")
		}
		b.WriteByte('\n')
	case opAdded:
		parent := "top"
		if o.target.parent != nil {
			parent = d.address(o.target)
		}
		after := "first"
		if o.after != nil {
			after = "after " + d.address(o.after)
		}
		b.WriteString("added under " + parent + " " + after)
		writeContext(b, o.target)
		b.WriteString(":\n")
		for _, n := range o.nodes {
			write(b, n, 1)
		}
	}
}

// writeContext writes where a node under parent is, for a reader: " in "
// and its nearest ancestors, outermost first; nothing at the top.
func writeContext(b *strings.Builder, parent *node) {
	var path []string
	for p := parent; p != nil && p.parent != nil; p = p.parent {
		if len(path) == contextDepth {
			path = append(path, "…")
			break
		}
		path = append(path, label(p.line, 40))
	}
	if len(path) == 0 {
		return
	}
	b.WriteString(" in ")
	for i := len(path) - 1; i >= 0; i-- {
		b.WriteString(path[i])
		if i > 0 {
			b.WriteString(" > ")
		}
	}
}

// contextDepth is how many ancestors an operation names.
const contextDepth = 3

// label is a node's line for a reader: without its dash, attributes
// and colon, at most max characters.
func label(line string, max int) string {
	s := strings.TrimPrefix(line, "- ")
	if i := strings.Index(s, " ["); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(s, ":")
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-1]) + "…"
	}
	return s
}
