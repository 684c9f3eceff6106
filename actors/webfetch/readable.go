package webfetch

import (
	"net/url"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"

	"github.com/framebus/framebus/protocol"
)

// maxReadableElements bounds the pages readable reads; ordinary pages
// have a few thousand elements, a long table page tens of thousands.
const maxReadableElements = 100_000

// readable is the main content of an HTML page (already decoded to
// UTF-8, so the extractor guesses no charset), or nil when the page has
// none the extractor can find.
func readable(page string, base *url.URL) *protocol.Readable {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return nil
	}
	parser := readability.NewParser()
	// The extractor's time grows with the page's elements and depth
	// (seconds for 4 MB of nested blocks): a page past the bound gets no
	// reader view rather than holding the fetch.
	parser.MaxElemsToParse = maxReadableElements
	article, err := parser.ParseAndMutate(doc, base)
	if err != nil || article.Node == nil {
		return nil
	}
	var text strings.Builder
	if err := article.RenderText(&text); err != nil {
		return nil
	}
	return &protocol.Readable{
		Title:   article.Title(),
		Byline:  article.Byline(),
		Excerpt: article.Excerpt(),
		Text:    strings.TrimSpace(text.String()),
	}
}
