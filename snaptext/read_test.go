package snaptext

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// The parts of a snapshot, read one after the other from 0, are the
// snapshot: every byte once, in order; each within the budget; whole
// lines but for a line longer than the budget, cut at a character; each
// with the ancestors of the line it starts in.
func TestPartsCoverTheSnapshotOnce(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(3, 4))}
	root := g.tree(30, 5)
	for size := len(render(root)); size < 5<<20; { // 5 MB
		sub := &gnode{kids: []*gnode{g.subtree(6)}}
		size += len(render(sub))
		root.kids = append(root.kids, sub.kids[0])
	}
	long := &gnode{line: "- text: " + strings.Repeat("café ", 20000)} // one line over the budget, in characters of two bytes
	root.kids = append(root.kids[:len(root.kids)/2], append([]*gnode{long}, root.kids[len(root.kids)/2:]...)...)
	text := render(root)
	for _, budget := range []int{4096, 100_000, 1 << 20} {
		var got strings.Builder
		parts := 0
		for from := 0; ; parts++ {
			part, next, context, ok := Part(text, from, budget)
			if !ok {
				t.Fatalf("max %d: part from %d refused", budget, from)
			}
			if len(part) > budget || len(part) == 0 || !utf8.ValidString(part) {
				t.Fatalf("max %d: a part of %d bytes (valid UTF-8: %v)", budget, len(part), utf8.ValidString(part))
			}
			if !strings.HasSuffix(part, "\n") && strings.Count(part, "\n") > 0 {
				t.Fatalf("max %d: a part cuts a line it does not start: %q", budget, part[len(part)-40:])
			}
			if parts%97 == 0 && context != ancestorsSlow(text, strings.LastIndexByte(text[:from], '\n')+1) {
				t.Fatalf("max %d: the context of %d:\n%s\nwant:\n%s", budget, from, context, ancestorsSlow(text, from))
			}
			got.WriteString(part)
			if next == 0 {
				break
			}
			from = next
		}
		if got.String() != text {
			t.Fatalf("max %d: %d parts are not the snapshot", budget, parts)
		}
	}
	if _, _, _, ok := Part(text, strings.Index(text, "é")+1, 100); ok {
		t.Error("a part from inside a character")
	}
}

// ancestorsSlow is the context of a part, from the tree.
func ancestorsSlow(text string, at int) string {
	t, _ := parse(text[:at] + strings.SplitAfter(text[at:], "\n")[0])
	if t == nil || len(t.root.children) == 0 {
		return ""
	}
	n := t.root
	for len(n.children) > 0 {
		n = n.children[len(n.children)-1]
	}
	var lines []string
	for p := n.parent; p != nil && p.parent != nil; p = p.parent {
		lines = append([]string{strings.Repeat("  ", p.depth()) + p.line + "\n"}, lines...)
	}
	return strings.Join(lines, "")
}

// A search shows each matching node under its ancestors, with what is
// under it, as a snapshot (its lines indent as the page's do).
func TestSearch(t *testing.T) {
	text := "- banner:\n  - link \"Home\" [ref=e1]\n- main:\n  - list \"Results\":\n" +
		"    - listitem:\n      - link \"Desk lamp\" [ref=e2]\n      - text: $12\n" +
		"    - listitem:\n      - link \"Floor LAMP\" [ref=e3]\n" +
		"    - listitem:\n      - link \"Chair\" [ref=e4]\n"
	r, ok := Search(text, "lamp", 0, 0)
	want := "- main:\n  - list \"Results\":\n    - listitem:\n      - link \"Desk lamp\" [ref=e2]\n    - listitem:\n      - link \"Floor LAMP\" [ref=e3]\n"
	if !ok || r.Text != want || r.Matches != 2 || r.Shown != 2 {
		t.Fatalf("search: %+v\nwant:\n%s", r, want)
	}
	if _, ok := parse(r.Text); !ok {
		t.Error("the result is not a snapshot's text")
	}
	r, _ = Search(text, "lamp", 1, 0)
	if r.Matches != 2 || r.Shown != 1 || strings.Contains(r.Text, "Floor") {
		t.Errorf("search, one shown: %+v", r)
	}
	r, _ = Search(text, "Results", 0, 0)
	if !strings.Contains(r.Text, "Chair") || r.Matches != 1 {
		t.Errorf("a match shows what is under it: %+v", r)
	}
	if r, _ := Search(text, "nothing like it", 0, 0); r.Matches != 0 || r.Text != "" {
		t.Errorf("no match: %+v", r)
	}
	// Within a byte budget: whole matches, as many as fit, all counted.
	if r, _ := Search(text, "lamp", 0, 100); r.Matches != 2 || r.Shown != 1 || strings.Contains(r.Text, "Floor") || !strings.Contains(r.Text, "Desk") {
		t.Errorf("search within 100 bytes: %+v", r)
	}
	// A name's escapes read as the page shows it.
	odd := "- button \"a \\\"quote\\\" b\" [ref=e1]\n- button \"Sign\\u00a0in\" [ref=e2]\n"
	for _, q := range []string{`a "quote"`, "Sign in"} {
		if r, _ := Search(odd, q, 0, 0); r.Matches != 1 {
			t.Errorf("search %q in %q: %+v", q, odd, r)
		}
	}
}

// A summary gives a page's size, regions, outline and elements in a few
// lines.
func TestSummary(t *testing.T) {
	text := "- banner:\n  - navigation \"Main\":\n    - link \"Home\" [ref=e1]\n    - link \"Docs\" [ref=e2]\n" +
		"- main:\n  - heading \"Vec\" [level=1]\n  - heading \"Methods\" [level=2]\n  - button \"Copy\" [ref=e3]\n" +
		"  - region \"Examples\":\n    - heading \"Examples\" [level=3]\n"
	want := "240 bytes of snapshot, 10 nodes, 3 with refs: 2 link, 1 button\n" +
		"regions:\n- banner (2 with refs)\n  - navigation \"Main\" (2 with refs)\n- main (1 with refs)\n  - region \"Examples\" (0 with refs)\n" +
		"headings:\n- h1 \"Vec\"\n  - h2 \"Methods\"\n    - h3 \"Examples\"\n"
	if got := Summary(text); got != want {
		t.Fatalf("summary:\n%s\nwant:\n%s", got, want)
	}
}

// A page with a main region shows it whole and folds the regions a site
// repeats; a page without one is shown as it is.
func TestFold(t *testing.T) {
	text := "- banner:\n  - link \"Home\" [ref=e1]\n  - navigation \"Site\":\n    - link \"Shop\" [ref=e2]\n    - link \"Blog\" [ref=e3]\n" +
		"- main:\n  - heading \"Sign in\" [level=1]\n  - navigation \"Steps\":\n    - link \"One\" [ref=e4]\n    - link \"Two\" [ref=e5]\n    - link \"Three\" [ref=e6]\n" +
		"  - textbox \"Email\" [ref=e7]\n" +
		"- contentinfo:\n  - link \"Privacy\" [ref=e8]\n  - link \"Terms\" [ref=e9]\n  - button \"Top\" [ref=e10]\n" +
		"- navigation \"Short\":\n  - link \"X\" [ref=e11]\n"
	want := "- banner (folded: 3 link)\n" +
		"- main:\n  - heading \"Sign in\" [level=1]\n  - navigation \"Steps\":\n    - link \"One\" [ref=e4]\n    - link \"Two\" [ref=e5]\n    - link \"Three\" [ref=e6]\n" +
		"  - textbox \"Email\" [ref=e7]\n" +
		"- contentinfo (folded: 2 link, 1 button)\n" +
		"- navigation \"Short\":\n  - link \"X\" [ref=e11]\n"
	got, n := Fold(text)
	if got != want || n != 2 {
		t.Fatalf("fold (%d):\n%s\nwant:\n%s", n, got, want)
	}
	if _, ok := parse(got); !ok {
		t.Error("a folded page is not a snapshot's text")
	}
	noMain := "- banner:\n  - link \"Home\" [ref=e1]\n  - link \"A\" [ref=e2]\n  - link \"B\" [ref=e3]\n- heading \"X\"\n"
	if got, n := Fold(noMain); got != noMain || n != 0 {
		t.Errorf("a page without main: %d folded:\n%s", n, got)
	}
}
