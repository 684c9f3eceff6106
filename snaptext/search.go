package snaptext

import "strings"

// SearchResult is the part of a snapshot a search found.
type SearchResult struct {
	// Text is the matching nodes in the snapshot's form, each under its
	// ancestors (an ancestor shared by several written once) and with
	// the nodes under it, up to SubtreeLines lines each.
	Text string
	// Matches counts the matching nodes; Shown, those in Text (at most
	// the search's max).
	Matches, Shown int
}

// SubtreeLines bounds the lines under a match that a search shows: a
// list item's link, a form's fields, not a whole section.
const SubtreeLines = 12

// Search finds the nodes whose line holds query, without regard to case
// (and with a name's escapes read: a quote, a no-break space), and shows
// at most max of them (0: all), in at most maxBytes (0: no bound; the
// first match is shown whatever its size).
func Search(text, query string, max, maxBytes int) (SearchResult, bool) {
	t, ok := parse(text)
	if !ok {
		return SearchResult{}, false
	}
	var r SearchResult
	if strings.TrimSpace(query) == "" {
		return r, true
	}
	shown := map[*node]bool{} // the lines written, so far
	var b strings.Builder
	query = readable(query)
	full := false
	var walk func(n *node)
	walk = func(n *node) {
		for _, c := range n.children {
			if containsFold(readable(c.line), query) {
				r.Matches++
				if !full && (max == 0 || r.Shown < max) {
					before := b.Len()
					var one strings.Builder
					writeMatch(&one, c, shown)
					if maxBytes > 0 && r.Shown > 0 && before+one.Len() > maxBytes {
						full = true // the rest are counted, not shown
					} else {
						b.WriteString(one.String())
						r.Shown++
					}
				}
			}
			walk(c)
		}
	}
	walk(t.root)
	r.Text = b.String()
	return r, true
}

// writeMatch writes a match's ancestors not written yet, then it and
// its subtree, up to SubtreeLines lines under it.
func writeMatch(b *strings.Builder, n *node, shown map[*node]bool) {
	var path []*node
	for p := n.parent; p != nil && p.parent != nil; p = p.parent {
		path = append(path, p)
	}
	for i := len(path) - 1; i >= 0; i-- {
		if !shown[path[i]] {
			shown[path[i]] = true
			writeLine(b, path[i].line, len(path)-1-i)
		}
	}
	if shown[n] { // inside an earlier match's subtree
		return
	}
	left := SubtreeLines + 1
	var sub func(n *node, depth int)
	sub = func(n *node, depth int) {
		if left == 0 || shown[n] {
			return
		}
		left--
		shown[n] = true
		writeLine(b, n.line, depth)
		for _, c := range n.children {
			sub(c, depth+1)
		}
	}
	sub(n, len(path))
	if left == 0 && n.size() > SubtreeLines+1 {
		writeLine(b, "- note: more under it", len(path)+1)
	}
}

func writeLine(b *strings.Builder, line string, depth int) {
	for range depth {
		b.WriteString("  ")
	}
	b.WriteString(line)
	b.WriteByte('\n')
}

// readable is a line as it reads: a quoted name's escaped quotes and
// backslashes, and no-break spaces (written \u00a0 in a name, raw in a
// text), as plain characters.
func readable(s string) string {
	if !strings.ContainsAny(s, "\\\u00a0") {
		return s
	}
	return unescaper.Replace(s)
}

var unescaper = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\u00a0`, " ", "\u00a0", " ")

// containsFold reports whether s holds sub, without regard to case.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
