package snaptext

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// landmarkRoles are the roles a summary lists as the page's regions.
var landmarkRoles = map[string]bool{
	"banner": true, "navigation": true, "main": true, "contentinfo": true, "complementary": true,
	"search": true, "form": true, "region": true, "dialog": true, "alertdialog": true,
}

// summaryHeadings and summaryRegions bound the headings and regions a
// summary lists: a page of 3,000 labelled sections is summarized in a
// few lines too.
const (
	summaryHeadings = 40
	summaryRegions  = 30
)

// Summary is a short account of a snapshot for a reader who is not
// given the whole: its size, its regions (landmarks, with how many
// elements with refs each holds), its headings as an outline, and how
// many elements of each interactive role it has.
func Summary(text string) string {
	t, ok := parse(text)
	if !ok {
		return ""
	}
	var b strings.Builder
	nodes, refs := 0, 0
	kinds := map[string]int{}
	var headings, landmarks []string
	moreHeadings, moreRegions := 0, 0
	var walk func(n *node, depth int) int // the refs under n, n's included
	walk = func(n *node, depth int) int {
		inside := 0
		for _, c := range n.children {
			nodes++
			r := 0
			if c.ref != "" {
				refs++
				r = 1
				kinds[c.role()]++
			}
			role := c.role()
			if role == "heading" {
				if len(headings) < summaryHeadings {
					headings = append(headings, headingLine(c.line))
				} else {
					moreHeadings++
				}
			}
			at := len(landmarks)
			listed := landmarkRoles[role] && at < summaryRegions
			switch {
			case listed:
				landmarks = append(landmarks, "") // filled once its refs are counted
			case landmarkRoles[role]:
				moreRegions++
			}
			r += walk(c, depth+1)
			if listed {
				landmarks[at] = strings.Repeat("  ", min(depth, 3)) + "- " + label(c.line, 60) + " (" + strconv.Itoa(r) + " with refs)"
			}
			inside += r
		}
		return inside
	}
	walk(t.root, 0)
	fmt.Fprintf(&b, "%s of snapshot, %d nodes, %d with refs", size(len(text)), nodes, refs)
	if len(kinds) > 0 {
		b.WriteString(": ")
		b.WriteString(counts(kinds))
	}
	b.WriteString("\n")
	if len(landmarks) > 0 {
		b.WriteString("regions:\n" + strings.Join(landmarks, "\n") + "\n")
		if moreRegions > 0 {
			fmt.Fprintf(&b, "  (and %d more regions)\n", moreRegions)
		}
	}
	if len(headings) > 0 {
		b.WriteString("headings:\n" + strings.Join(headings, "\n") + "\n")
		if moreHeadings > 0 {
			fmt.Fprintf(&b, "  (and %d more headings)\n", moreHeadings)
		}
	}
	return b.String()
}

// headingLine is a heading's line in a summary's outline, indented by its
// level.
func headingLine(line string) string {
	level := 1
	if i := strings.Index(line, "[level="); i >= 0 {
		if n, err := strconv.Atoi(strings.TrimRight(line[i+7:i+8], "]")); err == nil {
			level = n
		}
	}
	return strings.Repeat("  ", max(level-1, 0)) + "- h" + strconv.Itoa(level) + " " + strings.TrimPrefix(label(line, 80), "heading ")
}

// counts lists kinds by count, the largest first: "120 link, 4 button".
func counts(kinds map[string]int) string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if kinds[names[i]] != kinds[names[j]] {
			return kinds[names[i]] > kinds[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = strconv.Itoa(kinds[k]) + " " + k
	}
	return strings.Join(parts, ", ")
}

// size reads a byte count: "812 bytes", "48 KB", "1.2 MB".
func size(n int) string {
	switch {
	case n < 1<<10:
		return strconv.Itoa(n) + " bytes"
	case n < 1<<20:
		return strconv.Itoa((n+1<<9)>>10) + " KB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
}
