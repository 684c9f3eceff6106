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
const contentJS = `function (_, text, max) {` + visibleTextJS + outerHTMLJS + tooLargeJS + `
	const root = document.documentElement;
	const content = text ? (document.body ? visibleText(document.body) : "") : (root ? outerHTML(root) : "");
	return tooLarge("the page's content", content, max) || {url: location.href, title: document.title, content};
}`

// Content returns the page's URL, title and content in one round trip:
// the accessibility snapshot's text form for ContentSnapshot, the
// serialized DOM for ContentHTML, the visible text for ContentText.
// Content longer than the content limit (SetContentLimit) is refused in
// the page, with a *ResultTooLargeError.
func (p *Page) Content(ctx context.Context, format string) (url, title, content string, err error) {
	if format == ContentSnapshot {
		s, err := p.Snapshot(ctx, SnapshotOptions{MaxBytes: p.contentLimit})
		return s.URL, s.Title, s.Text(), err
	}
	var r struct {
		elementReply
		URL, Title, Content string
	}
	err = p.callOnDocument(ctx, "read content", "", contentJS, false, &r, format == ContentText, p.contentLimit)
	return r.URL, r.Title, r.Content, err
}
