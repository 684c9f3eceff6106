// Package snaptext reads snapshots in their text form (a line per node,
// indented two spaces per level, as cdpdriver's Snapshot.Text writes
// them): the change between two of one document (Diff, Apply), the nodes
// that match a text (Search), and a long one in parts under a byte
// budget (Part).
//
// A delta names nodes by their refs (e12), the names agents already use
// to act, and says what changed as whole nodes: a node whose line
// changed, with its new line; a subtree added, with the node it follows;
// a subtree removed. Each operation names where it happens by the path of
// its ancestors too, for a reader. Applied to the snapshot it was made
// from, a delta gives back, byte for byte, the snapshot it was made to;
// both are named by a hash in the delta's first line, and Apply checks
// them. See docs/deltas.md for the format.
package snaptext

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// node is one line of a snapshot and the lines indented under it.
type node struct {
	line     string // without its indentation, e.g. `- button "Buy" [ref=e12]`
	ref      string // the line's [ref=...], "" when none
	parent   *node
	index    int // among its parent's children
	children []*node
}

// tree is a parsed snapshot: its top-level nodes under a root with no
// line.
type tree struct {
	root *node
	refs map[string]*node // every ref; nil for one that names several nodes
}

// parse reads a snapshot's text into a tree, or says it is not one: every
// line indented by an even number of spaces, at most one level deeper
// than the line before, and starting with "- "; every line, the last
// included, ends with a newline. "" is the empty snapshot.
func parse(text string) (*tree, bool) {
	lines := strings.Count(text, "\n")
	slab := make([]node, lines+1) // one allocation for every node
	t := &tree{root: &slab[lines], refs: make(map[string]*node, lines/4)}
	open := []*node{t.root} // open[d]: the node at depth d-1 lines are added under
	for i := 0; text != ""; i++ {
		line, rest, ok := strings.Cut(text, "\n")
		if !ok {
			return nil, false
		}
		text = rest
		spaces := 0
		for spaces < len(line) && line[spaces] == ' ' {
			spaces++
		}
		depth := spaces / 2
		if spaces%2 != 0 || depth >= len(open) || !strings.HasPrefix(line[spaces:], "- ") {
			return nil, false
		}
		parent := open[depth]
		n := &slab[i]
		n.line, n.parent, n.index = line[spaces:], parent, len(parent.children)
		if n.ref = refOf(n.line); n.ref != "" {
			if _, dup := t.refs[n.ref]; dup {
				t.refs[n.ref] = nil // named by its path instead
			} else {
				t.refs[n.ref] = n
			}
		}
		parent.children = append(parent.children, n)
		open = append(open[:depth+1], n)
	}
	return t, true
}

// refOf is the ref a node's line carries ([ref=e12]), "" when none. A
// name or value holding the same characters comes before it, quoted: the
// last one on the line is the node's. A text node has none: what looks
// like one is the page's text.
func refOf(line string) string {
	if strings.HasPrefix(line, "- text:") {
		return ""
	}
	i := strings.LastIndex(line, " [ref=")
	if i < 0 {
		return ""
	}
	rest := line[i+len(" [ref="):]
	end := strings.IndexByte(rest, ']')
	if end <= 0 || !validRef(rest[:end]) {
		return ""
	}
	return rest[:end]
}

// validRef: a ref as snapshots write them, letters and digits.
func validRef(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// write appends n's lines, and its subtree's, at depth.
func write(b *strings.Builder, n *node, depth int) {
	for range depth {
		b.WriteString("  ")
	}
	b.WriteString(n.line)
	b.WriteByte('\n')
	for _, c := range n.children {
		write(b, c, depth+1)
	}
}

// depth is n's level: 0 for a top-level node.
func (n *node) depth() int {
	d := -1
	for p := n.parent; p != nil; p = p.parent {
		d++
	}
	return d
}

// role is the first word of a node's line: `- button "Buy"` is a button;
// `- text: Hello` is text.
func (n *node) role() string {
	s := strings.TrimPrefix(n.line, "- ")
	if i := strings.IndexAny(s, " :"); i >= 0 {
		s = s[:i]
	}
	return s
}

// size counts the nodes of n's subtree, n included.
func (n *node) size() int {
	c := 1
	for _, k := range n.children {
		c += k.size()
	}
	return c
}

// Hash names a snapshot's text in a delta: the first 8 hex digits of its
// SHA-256.
func Hash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:4])
}
