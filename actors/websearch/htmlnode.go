package websearch

import (
	"strings"

	"golang.org/x/net/html"
)

// The few questions the result parsers ask of a parsed page, over
// golang.org/x/net/html's node tree.

// attr is n's attribute key ("" when absent).
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

// hasClass reports whether n is an element with class c among its classes.
func hasClass(n *html.Node, c string) bool {
	if n.Type != html.ElementNode {
		return false
	}
	for _, have := range strings.Fields(attr(n, "class")) {
		if have == c {
			return true
		}
	}
	return false
}

// isElement reports whether n is an element named tag.
func isElement(n *html.Node, tag string) bool {
	return n.Type == html.ElementNode && n.Data == tag
}

// find is the first node under n (n included, document order) that
// match accepts, or nil.
func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if match(n) {
		return n
	}
	for d := range n.Descendants() {
		if match(d) {
			return d
		}
	}
	return nil
}

// findAll is every node under n (document order) that match accepts.
func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var found []*html.Node
	for d := range n.Descendants() {
		if match(d) {
			found = append(found, d)
		}
	}
	return found
}

// ancestor is n's nearest ancestor that match accepts, or nil.
func ancestor(n *html.Node, match func(*html.Node) bool) *html.Node {
	for p := n.Parent; p != nil; p = p.Parent {
		if match(p) {
			return p
		}
	}
	return nil
}

// withClass matches elements that have class c.
func withClass(c string) func(*html.Node) bool {
	return func(n *html.Node) bool { return hasClass(n, c) }
}

// text is the text under n as a reader sees it: entities decoded (the
// parser did that), tags dropped, every run of white space (NBSP
// included) one space, trimmed.
func text(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return normalizeSpace(b.String())
}

// normalizeSpace makes every run of white space one space and trims.
func normalizeSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
