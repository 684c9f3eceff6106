package cdpdriver

import "context"

// Content formats.
const (
	ContentSnapshot = "snapshot"
	ContentHTML     = "html"
	ContentText     = "text"
)

// Content returns the page's URL, title and content in one round trip:
// the accessibility snapshot's text form for ContentSnapshot, the
// serialized DOM for ContentHTML, the visible text for ContentText.
func (p *Page) Content(ctx context.Context, format string) (url, title, content string, err error) {
	if format == ContentSnapshot {
		s, err := p.Snapshot(ctx, SnapshotOptions{})
		return s.URL, s.Title, s.Text(), err
	}
	expr := `[location.href, document.title, document.documentElement ? document.documentElement.outerHTML : ""]`
	if format == ContentText {
		expr = `[location.href, document.title, document.body ? document.body.innerText : ""]`
	}
	var v [3]string
	if err := p.evalValue(ctx, "read content", expr, &v); err != nil {
		return "", "", "", err
	}
	return v[0], v[1], v[2], nil
}
