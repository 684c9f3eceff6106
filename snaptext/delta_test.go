package snaptext

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// A generated page's snapshot, changed at random as pages change:
// nodes added, removed and moved, lines changed (a text, a state, a
// value), subtrees replaced; refs kept by nodes that stay, new ones for
// new nodes, some nodes without any. Every delta applied to its base is
// the new snapshot, byte for byte.
func TestApplyDiffIsTheNewSnapshot(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 7))
		g := &gen{r: r}
		base := g.tree(r.IntN(4)+1, 4)
		next := g.mutate(base, r.IntN(8)+1)
		a, b := render(base), render(next)
		d, ok := Diff(a, b)
		if !ok {
			t.Fatalf("seed %d: no delta\nbase:\n%s\nnext:\n%s", seed, a, b)
		}
		got, err := Apply(a, d.Text)
		if err != nil || got != b {
			t.Fatalf("seed %d: apply: %v\nbase:\n%s\nnext:\n%s\ndelta:\n%s\ngot:\n%s", seed, err, a, b, d.Text, got)
		}
		if (a == b) != (d.Changes == 0) {
			t.Fatalf("seed %d: %d changes between %s snapshots", seed, d.Changes, map[bool]string{true: "equal", false: "different"}[a == b])
		}
	}
}

// A small change to a long page is a short delta, naming the nodes by
// their refs and saying where they are.
func TestSmallChangeIsShort(t *testing.T) {
	var b strings.Builder
	b.WriteString("- banner:\n  - navigation \"Main\":\n    - button \"Menu\" [expanded=false] [ref=e1]\n")
	b.WriteString("- main:\n  - list \"Results\":\n")
	for i := range 500 {
		fmt.Fprintf(&b, "    - listitem:\n      - link \"Result %d\" [ref=e%d] [href=\"/r/%d\"]\n", i, i+10, i)
	}
	base := b.String()
	next := strings.Replace(base, `- button "Menu" [expanded=false] [ref=e1]`, `- button "Menu" [expanded] [ref=e1]`, 1)
	next = strings.Replace(next, "    - button \"Menu\" [expanded] [ref=e1]\n",
		"    - button \"Menu\" [expanded] [ref=e1]\n    - menu:\n      - menuitem \"Settings\" [ref=e900]\n", 1)
	d, ok := Diff(base, next)
	if !ok {
		t.Fatal("no delta")
	}
	want := "delta base=" + Hash(base) + " result=" + Hash(next) + " changes=2\n" +
		"changed e1 in banner > navigation \"Main\":\n" +
		"  - button \"Menu\" [expanded] [ref=e1]\n" +
		"added under /0/0 after e1 in banner > navigation \"Main\":\n" +
		"  - menu:\n" +
		"    - menuitem \"Settings\" [ref=e900]\n"
	if d.Text != want {
		t.Fatalf("delta:\n%s\nwant:\n%s", d.Text, want)
	}
	if len(d.Text)*100 > len(base) {
		t.Errorf("the delta is %d bytes for a %d-byte page", len(d.Text), len(base))
	}
}

// What is not a snapshot gets no delta; a delta applied to another base,
// or changed, is refused, never applied wrong.
func TestRefusals(t *testing.T) {
	for _, s := range []string{"no dash\n", "- a", "- a\n      - too deep\n", " - odd\n"} {
		if _, ok := Diff(s, "- a\n"); ok {
			t.Errorf("a delta from %q", s)
		}
		if _, ok := Diff("- a\n", s); ok {
			t.Errorf("a delta to %q", s)
		}
	}
	base, next := "- a:\n  - b [ref=e1]\n  - x [ref=e2]\n", "- a:\n  - b [ref=e1]\n  - x [ref=e2]\n  - c [ref=e3]\n"
	d, _ := Diff(base, next)
	if _, err := Apply("- a:\n  - y [ref=e1]\n  - x [ref=e2]\n", d.Text); err == nil {
		t.Error("applied to another base")
	}
	bad := strings.Replace(d.Text, "c [ref=e3]", "d [ref=e3]", 1)
	if _, err := Apply(base, bad); err == nil {
		t.Error("a changed delta applied")
	}
	for _, body := range []string{"frobbed e1:\n", "removed e9:\n", "added under e1 after:\n  - x\n", "changed e1:\n", "added under top first:\n   - odd\n", "removed /7\n", "removed top\n", "removed e2 through e1\n", "removed /0 through top\n", "removed e1 through /0\n"} {
		h := "delta base=" + Hash(base) + " result=" + Hash(next) + " changes=1\n"
		if _, err := Apply(base, h+body); err == nil {
			t.Errorf("applied %q", body)
		}
	}
	if _, err := Apply(base, "not a delta\n"); err == nil {
		t.Error("applied no delta")
	}
	// A ref two lines carry names neither: refused, not a crash.
	twice := "- button \"A\" [ref=e1]\n- link \"y\" [ref=e1]\n"
	for _, body := range []string{"added under top after e1:\n  - text: z\n", "changed e1/0:\n  - text: z\n", "removed e1\n"} {
		if _, err := Apply(twice, "delta base="+Hash(twice)+" result=00000000 changes=1\n"+body); err == nil {
			t.Errorf("applied %q to a base where e1 is two nodes", body)
		}
	}
}

// gen makes snapshots' trees.
type gen struct {
	r    *rand.Rand
	refs int
}

type gnode struct {
	line string
	kids []*gnode
}

var roles = []string{"button", "link", "textbox", "listitem", "paragraph", "text", "heading", "generic", "menuitem", "checkbox"}

func (g *gen) node() *gnode {
	role := roles[g.r.IntN(len(roles))]
	switch g.r.IntN(6) {
	case 0: // a text, as text and inline texts are
		return &gnode{line: "- " + role + ": " + g.word()}
	case 1: // no ref
		return &gnode{line: "- " + role + ` "` + g.word() + `"`}
	case 2: // a line that looks like a ref in a name
		return &gnode{line: "- " + role + ` "a [ref=e` + fmt.Sprint(g.r.IntN(5)) + `] b"`}
	default:
		g.refs++
		return &gnode{line: fmt.Sprintf(`- %s "%s" [ref=e%d]`, role, g.word(), g.refs)}
	}
}

func (g *gen) word() string {
	return []string{"Buy", "Sign in", "Next", "Results", "Total: $12", "Menu", "x", "Cart (1)", "Cart (2)"}[g.r.IntN(9)]
}

func (g *gen) tree(width, depth int) *gnode {
	root := &gnode{}
	for range width {
		root.kids = append(root.kids, g.subtree(depth))
	}
	return root
}

func (g *gen) subtree(depth int) *gnode {
	n := g.node()
	if depth > 0 {
		for range g.r.IntN(4) {
			n.kids = append(n.kids, g.subtree(depth-1))
		}
	}
	return n
}

func clone(n *gnode) *gnode {
	c := &gnode{line: n.line}
	for _, k := range n.kids {
		c.kids = append(c.kids, clone(k))
	}
	return c
}

// all lists the nodes of a tree with their parents (the root's is nil).
func all(root *gnode) (nodes, parents []*gnode) {
	var walk func(n, p *gnode)
	walk = func(n, p *gnode) {
		nodes, parents = append(nodes, n), append(parents, p)
		for _, k := range n.kids {
			walk(k, n)
		}
	}
	walk(root, nil)
	return nodes, parents
}

func (g *gen) mutate(base *gnode, changes int) *gnode {
	t := clone(base)
	for range changes {
		nodes, parents := all(t)
		i := g.r.IntN(len(nodes))
		n, p := nodes[i], parents[i]
		switch g.r.IntN(6) {
		case 0: // add a subtree
			at := g.r.IntN(len(n.kids) + 1)
			n.kids = append(n.kids[:at], append([]*gnode{g.subtree(2)}, n.kids[at:]...)...)
		case 1: // remove
			if p != nil {
				p.kids = without(p.kids, n)
			}
		case 2: // change the line, keeping its ref
			if p != nil {
				ref := ""
				if i := strings.LastIndex(n.line, " [ref="); i >= 0 {
					ref = n.line[i:]
				}
				n.line = strings.TrimSuffix(g.node().line, "") + " [expanded]" + ref
			}
		case 3: // move
			if p != nil {
				p.kids = without(p.kids, n)
				dest := nodes[g.r.IntN(len(nodes))]
				if !inside(n, dest) {
					at := g.r.IntN(len(dest.kids) + 1)
					dest.kids = append(dest.kids[:at], append([]*gnode{n}, dest.kids[at:]...)...)
				}
			}
		case 4: // a text changes
			if p != nil && strings.Contains(n.line, ": ") && !strings.Contains(n.line, "[ref=") {
				n.line = n.line[:strings.Index(n.line, ": ")] + ": " + g.word()
			}
		case 5: // a line repeated (a list of like items)
			if p != nil {
				c := &gnode{line: n.line}
				p.kids = append(p.kids, c)
			}
		}
	}
	return t
}

func without(list []*gnode, n *gnode) []*gnode {
	var out []*gnode
	for _, k := range list {
		if k != n {
			out = append(out, k)
		}
	}
	return out
}

func inside(n, dest *gnode) bool {
	if n == dest {
		return true
	}
	for _, k := range n.kids {
		if inside(k, dest) {
			return true
		}
	}
	return false
}

func render(root *gnode) string {
	var b strings.Builder
	var walk func(n *gnode, depth int)
	walk = func(n *gnode, depth int) {
		b.WriteString(strings.Repeat("  ", depth) + n.line + "\n")
		for _, k := range n.kids {
			walk(k, depth+1)
		}
	}
	for _, k := range root.kids {
		walk(k, 0)
	}
	return b.String()
}

// BenchmarkDiff is a delta of a few changes on a page of about 5,000
// nodes: the work the tab adds to a snapshot since another.
func BenchmarkDiff(b *testing.B) {
	g := &gen{r: rand.New(rand.NewPCG(1, 2))}
	base := g.tree(40, 5)
	for len(strings.Split(render(base), "\n")) < 5000 {
		base.kids = append(base.kids, g.subtree(5))
	}
	next := g.mutate(base, 5)
	a, c := render(base), render(next)
	b.SetBytes(int64(len(c)))
	b.ReportMetric(float64(strings.Count(c, "\n")), "nodes")
	for b.Loop() {
		if _, ok := Diff(a, c); !ok {
			b.Fatal("no delta")
		}
	}
}
