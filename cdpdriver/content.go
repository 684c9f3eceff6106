package cdpdriver

import "context"

// Content formats.
const (
	ContentSnapshot = "snapshot"
	ContentHTML     = "html"
	ContentText     = "text"
)

// contentJS reads the page's location, title and content: its visible
// text (visibleText) when text, else its serialized DOM (outerHTML).
const contentJS = `function (_, text) {` + visibleTextJS + outerHTMLJS + `
	const root = document.documentElement;
	const content = text ? (document.body ? visibleText(document.body) : "") : (root ? outerHTML(root) : "");
	return {url: location.href, title: document.title, content};
}`

// Content returns the page's URL, title and content in one round trip:
// the accessibility snapshot's text form for ContentSnapshot, the
// serialized DOM for ContentHTML, the visible text for ContentText.
func (p *Page) Content(ctx context.Context, format string) (url, title, content string, err error) {
	if format == ContentSnapshot {
		s, err := p.Snapshot(ctx, SnapshotOptions{})
		return s.URL, s.Title, s.Text(), err
	}
	var r struct {
		elementReply
		URL, Title, Content string
	}
	err = p.callOnDocument(ctx, "read content", "", contentJS, false, &r, format == ContentText)
	return r.URL, r.Title, r.Content, err
}
