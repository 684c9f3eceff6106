package cdpdriver

import "context"

// Content formats.
const (
	ContentSnapshot = "snapshot"
	ContentHTML     = "html"
	ContentText     = "text"
)

// contentTextJS reads the page's location, title and visible text.
const contentTextJS = `function () {` + visibleTextJS + `
	return {url: location.href, title: document.title, text: document.body ? visibleText(document.body) : ""};
}`

// Content returns the page's URL, title and content in one round trip:
// the accessibility snapshot's text form for ContentSnapshot, the
// serialized DOM for ContentHTML, the visible text for ContentText.
func (p *Page) Content(ctx context.Context, format string) (url, title, content string, err error) {
	if format == ContentSnapshot {
		s, err := p.Snapshot(ctx, SnapshotOptions{})
		return s.URL, s.Title, s.Text(), err
	}
	if format == ContentText {
		var r struct {
			elementReply
			URL, Title, Text string
		}
		err := p.callOnDocument(ctx, "read content", "", contentTextJS, false, &r)
		return r.URL, r.Title, r.Text, err
	}
	expr := `[location.href, document.title, document.documentElement ? document.documentElement.outerHTML : ""]`
	var v [3]string
	if err := p.evalValue(ctx, "read content", expr, &v); err != nil {
		return "", "", "", err
	}
	return v[0], v[1], v[2], nil
}
