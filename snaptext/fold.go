package snaptext

import (
	"strconv"
	"strings"
)

// foldedRoles are the regions a page repeats on every page of its site:
// its header, navigation, footer and sidebars.
var foldedRoles = map[string]bool{"banner": true, "navigation": true, "contentinfo": true, "complementary": true}

// foldMin is the fewest lines a region must have to be folded: a short
// one costs less shown than said.
const foldMin = 4

// Fold is a snapshot with the regions a site repeats on every page (its
// header, navigation, footer, sidebars) each folded to its one line and
// what it holds ("(folded: 27 link, 2 button)"), when the page has a main
// region to show in full; and how many it folded. A page without a main
// region, or that is not a snapshot's text, comes back as it is.
func Fold(text string) (string, int) {
	t, ok := parse(text)
	if !ok {
		return text, 0
	}
	hasMain := false
	var find func(n *node)
	find = func(n *node) {
		for _, c := range n.children {
			if c.role() == "main" {
				hasMain = true
				return
			}
			find(c)
		}
	}
	find(t.root)
	if !hasMain {
		return text, 0
	}
	var b strings.Builder
	b.Grow(len(text))
	folded := 0
	var walk func(n *node, depth int)
	walk = func(n *node, depth int) {
		role := n.role()
		if foldedRoles[role] && n.size() >= foldMin {
			folded++
			kinds := map[string]int{}
			var count func(n *node)
			count = func(n *node) {
				for _, c := range n.children {
					if c.ref != "" {
						kinds[c.role()]++
					}
					count(c)
				}
			}
			count(n)
			writeLine(&b, strings.TrimSuffix(n.line, ":")+" (folded: "+foldCounts(kinds, n.size()-1)+")", depth)
			return
		}
		writeLine(&b, n.line, depth)
		if role == "main" {
			for _, c := range n.children {
				write(&b, c, depth+1)
			}
			return
		}
		for _, c := range n.children {
			walk(c, depth+1)
		}
	}
	for _, c := range t.root.children {
		walk(c, 0)
	}
	return b.String(), folded
}

// foldCounts says what a folded region holds: its elements with refs by
// role, else its nodes.
func foldCounts(kinds map[string]int, nodes int) string {
	if len(kinds) == 0 {
		return strconv.Itoa(nodes) + " nodes"
	}
	return counts(kinds)
}
