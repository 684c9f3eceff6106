package snaptext

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBase is Apply's error when the snapshot given is not the one the
// delta was made from.
var ErrBase = errors.New("snaptext: the delta was made from another snapshot")

// Apply applies delta to base, the snapshot it was made from, and returns
// the snapshot it was made to.
func Apply(base, delta string) (string, error) {
	header, body, _ := strings.Cut(delta, "\n")
	want, err := parseHeader(header)
	if err != nil {
		return "", err
	}
	if Hash(base) != want.base {
		return "", fmt.Errorf("%w (base=%s, this one is %s)", ErrBase, want.base, Hash(base))
	}
	t, ok := parse(base)
	if !ok {
		return "", errors.New("snaptext: the base is not a snapshot's text")
	}
	edits := &edits{changed: map[*node]string{}, removed: map[*node]bool{}, added: map[*node][]*node{}, first: map[*node][]*node{}}
	if err := edits.read(t, body); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(base))
	edits.write(&b, t.root, -1)
	out := b.String()
	if Hash(out) != want.result {
		return "", fmt.Errorf("snaptext: the delta's result is not the snapshot it names (result=%s, got %s)", want.result, Hash(out))
	}
	return out, nil
}

type header struct{ base, result string }

// parseHeader reads "delta base=H result=H changes=N".
func parseHeader(line string) (header, error) {
	var h header
	fields := strings.Fields(line)
	if len(fields) < 3 || fields[0] != "delta" {
		return h, fmt.Errorf("snaptext: not a delta: its first line is %q", cut(line))
	}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "base":
			h.base = v
		case "result":
			h.result = v
		}
	}
	if h.base == "" || h.result == "" {
		return h, fmt.Errorf("snaptext: the delta's first line names no base and result: %q", cut(line))
	}
	return h, nil
}

// edits are a delta's operations, on the nodes of its base.
type edits struct {
	changed map[*node]string
	removed map[*node]bool
	added   map[*node][]*node // after a child
	first   map[*node][]*node // first under a parent
}

// read takes the operations of a delta's body.
func (e *edits) read(t *tree, body string) error {
	lines := strings.Split(body, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i := 0; i < len(lines); {
		head := lines[i]
		i++
		var brought []string // the lines under the header
		for i < len(lines) && strings.HasPrefix(lines[i], "  ") {
			brought = append(brought, lines[i][2:])
			i++
		}
		f := strings.Fields(head)
		for k := range min(len(f), 5) {
			f[k] = strings.TrimSuffix(f[k], ":") // the header's colon, right after an address when no context follows
		}
		if len(f) < 2 {
			return fmt.Errorf("snaptext: line %q is no operation", cut(head))
		}
		switch f[0] {
		case "changed":
			n, err := t.find(f[1])
			if err != nil {
				return err
			}
			if len(brought) != 1 || strings.HasPrefix(brought[0], " ") {
				return fmt.Errorf("snaptext: %q: a changed node takes one line", cut(head))
			}
			e.changed[n] = brought[0]
		case "removed":
			n, err := t.find(f[1])
			if err != nil {
				return err
			}
			if n.parent == nil {
				return fmt.Errorf("snaptext: %q: the top is no node to remove", cut(head))
			}
			last := n
			if len(f) >= 4 && f[2] == "through" {
				if last, err = t.find(f[3]); err != nil {
					return err
				}
				if last.parent != n.parent || last.index < n.index {
					return fmt.Errorf("snaptext: %q: %s is not a sibling after %s", cut(head), f[3], f[1])
				}
			}
			for _, c := range n.parent.children[n.index : last.index+1] {
				e.removed[c] = true
			}
		case "added":
			if len(f) < 4 || f[1] != "under" || (f[3] == "after" && len(f) < 5) {
				return fmt.Errorf("snaptext: %q: want 'added under NODE first' or 'added under NODE after NODE'", cut(head))
			}
			parent, err := t.find(f[2])
			if err != nil {
				return err
			}
			nodes, ok := parseBrought(brought)
			if !ok {
				return fmt.Errorf("snaptext: %q: the lines under it are not a snapshot's", cut(head))
			}
			switch f[3] {
			case "first":
				e.first[parent] = append(e.first[parent], nodes...)
			case "after":
				after, err := t.find(f[4])
				if err != nil {
					return err
				}
				if after.parent != parent {
					return fmt.Errorf("snaptext: %q: %s is not under %s", cut(head), f[4], f[2])
				}
				e.added[after] = append(e.added[after], nodes...)
			default:
				return fmt.Errorf("snaptext: %q: want first or after NODE", cut(head))
			}
		default:
			return fmt.Errorf("snaptext: line %q is no operation (changed, added, removed)", cut(head))
		}
	}
	return nil
}

// parseBrought reads the subtrees an added operation brings.
func parseBrought(lines []string) ([]*node, bool) {
	if len(lines) == 0 {
		return nil, false
	}
	t, ok := parse(strings.Join(lines, "\n") + "\n")
	if !ok {
		return nil, false
	}
	return t.root.children, true
}

// find resolves an address of the base: a ref, "top", or a path of
// indices (/2/0, e12/1).
func (t *tree) find(addr string) (*node, error) {
	if addr == "top" {
		return t.root, nil
	}
	start, path, _ := strings.Cut(addr, "/")
	n := t.root
	if start != "" {
		if n = t.refs[start]; n == nil { // none, or several (named by their paths)
			return nil, fmt.Errorf("snaptext: no node %s in the base (or more than one)", start)
		}
	}
	if path == "" {
		if start == "" {
			return nil, fmt.Errorf("snaptext: %q is no address", addr)
		}
		return n, nil
	}
	for _, step := range strings.Split(path, "/") {
		i, err := strconv.Atoi(step)
		if err != nil || i < 0 || i >= len(n.children) {
			return nil, fmt.Errorf("snaptext: no node %s in the base", addr)
		}
		n = n.children[i]
	}
	return n, nil
}

// write writes n's subtree as the edits make it.
func (e *edits) write(b *strings.Builder, n *node, depth int) {
	if depth >= 0 {
		line := n.line
		if l, ok := e.changed[n]; ok {
			line = l
		}
		for range depth {
			b.WriteString("  ")
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	for _, a := range e.first[n] {
		write(b, a, depth+1)
	}
	for _, c := range n.children {
		if !e.removed[c] {
			e.write(b, c, depth+1)
		}
		for _, a := range e.added[c] {
			write(b, a, depth+1)
		}
	}
}

// cut shortens a line quoted in an error.
func cut(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
