package websearch

import (
	"context"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/framebus/framebus/protocol"
)

// maxDuckDuckGoPages bounds the pages one search reads: a page holds
// about ten results, protocol.MaxSearchLimit is 50.
const maxDuckDuckGoPages = 6

// searchDuckDuckGo asks DuckDuckGo's HTML endpoint, as its own search
// form does (a POST of q and kl), and follows the page's "Next" form until
// it has req.Limit results. A later page that fails ends the paging: the
// results so far are the answer.
func (s *Searcher) searchDuckDuckGo(ctx context.Context, req protocol.SearchRequest) ([]protocol.SearchResult, error) {
	form := url.Values{"q": {req.Query}}
	if req.Site != "" {
		form.Set("q", req.Query+" site:"+req.Site)
	}
	if req.Region != "" {
		form.Set("kl", strings.ToLower(req.Region))
	}
	var results []protocol.SearchResult
	seen := map[string]bool{}
	for page := 0; page < maxDuckDuckGoPages && form != nil; page++ {
		found, next, err := s.duckDuckGoPage(ctx, req, form)
		if err != nil {
			if len(results) > 0 {
				break // a later page failed: answer what the earlier ones had
			}
			return nil, err
		}
		added := 0
		for _, r := range found {
			if !seen[r.URL] && len(results) < req.Limit {
				seen[r.URL] = true
				results = append(results, r)
				added++
			}
		}
		if len(results) >= req.Limit || added == 0 {
			break
		}
		form = next
	}
	return results, nil
}

// duckDuckGoPage posts form to the engine and reads the page it answers:
// its results, and the form that asks for the next page (nil at the end).
func (s *Searcher) duckDuckGoPage(ctx context.Context, req protocol.SearchRequest, form url.Values) ([]protocol.SearchResult, url.Values, error) {
	freq := protocol.FetchRequest{
		URL:    s.duckduckgo.String(),
		Method: "POST",
		Headers: map[string]string{
			"Content-Type": "application/x-www-form-urlencoded",
			"Accept":       "text/html",
		},
		Body:    form.Encode(),
		Timeout: req.Timeout,
	}
	reply, body, err := s.get(ctx, protocol.EngineDuckDuckGo, freq, "")
	if err != nil {
		return nil, nil, err
	}
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		return nil, nil, protocol.Errorf(protocol.CodeSearchFailed, "search duckduckgo: its answer is not HTML: %v", err)
	}
	page := readDuckDuckGoPage(doc)
	switch {
	case page.challenge:
		return nil, nil, protocol.Errorf(protocol.CodeSearchFailed,
			"search duckduckgo: DuckDuckGo answered a bot challenge (captcha, \"bots use DuckDuckGo too\", HTTP %d) instead of results; "+
				"it blocks this address for a while: try later, or use the google engine", reply.Status)
	case reply.Status != 200:
		return nil, nil, protocol.Errorf(protocol.CodeSearchFailed,
			"search duckduckgo: %s answered HTTP %d %s%s, not a results page", reply.URL, reply.Status, reply.StatusText, titled(page.title))
	case page.blocks > 0 || page.noResults:
		return page.results, page.next, nil
	case page.searchForm:
		return nil, nil, protocol.Errorf(protocol.CodeSearchFailed,
			"search duckduckgo: %s answered a DuckDuckGo page%s without results in a layout this parser knows (the html or lite layout): "+
				"its layout may have changed", reply.URL, titled(page.title))
	default:
		return nil, nil, protocol.Errorf(protocol.CodeSearchFailed,
			"search duckduckgo: %s answered a page that is not DuckDuckGo's results page%s (check search.duckduckgo.url, or a proxy or portal in the way)",
			reply.URL, titled(page.title))
	}
}

func titled(title string) string {
	if title == "" {
		return ""
	}
	return " (title " + quote(title) + ")"
}

// quote quotes s, cut to about 120 bytes (at a character's start).
func quote(s string) string {
	if n := 120; len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return `"` + s + `"`
}

// duckDuckGoPage is what one page of DuckDuckGo says.
type duckDuckGoPage struct {
	results    []protocol.SearchResult
	blocks     int        // result blocks recognised, ads and engine links included
	noResults  bool       // the page says there are no results
	challenge  bool       // the page is the bot challenge ("anomaly") page
	searchForm bool       // the page has DuckDuckGo's search form: it is DuckDuckGo's
	next       url.Values // the "Next" form's fields; nil on the last page
	title      string
}

// readDuckDuckGoPage reads either of DuckDuckGo's result layouts: the html
// endpoint's (div.result blocks, a.result__a, .result__snippet, ads with
// class result--ad) and the lite endpoint's table (a.result-link, the next
// row's td.result-snippet, ads in tr.result-sponsored).
func readDuckDuckGoPage(doc *html.Node) duckDuckGoPage {
	var page duckDuckGoPage
	page.title = text(find(doc, func(n *html.Node) bool { return isElement(n, "title") }))
	challengeText := false
	for n := range doc.Descendants() {
		switch {
		case n.Type == html.ElementNode && (attr(n, "id") == "challenge-form" || hasClassPrefix(n, "anomaly-modal")):
			page.challenge = true
		case n.Type == html.TextNode && strings.Contains(strings.ToLower(n.Data), "bots use duckduckgo too"):
			challengeText = true
		case hasClass(n, "no-results") || hasClass(n, "result--no-result"):
			page.noResults = true
		case isElement(n, "td") && strings.EqualFold(text(n), "No results."):
			page.noResults = true // the lite layout's notice
		case isElement(n, "form") && isSearchForm(n):
			page.searchForm = true
		}
	}
	for _, block := range findAll(doc, withClass("result")) {
		title := find(block, withClass("result__a"))
		if title == nil {
			continue
		}
		page.blocks++
		if hasClass(block, "result--ad") {
			continue
		}
		page.add(title, find(block, withClass("result__snippet")))
	}
	for _, title := range findAll(doc, withClass("result-link")) {
		page.blocks++
		row := ancestor(title, func(n *html.Node) bool { return isElement(n, "tr") })
		if row != nil && hasClass(row, "result-sponsored") {
			continue
		}
		var snippet *html.Node
		if row != nil {
			if next := nextElement(row); next != nil {
				snippet = find(next, withClass("result-snippet"))
			}
		}
		page.add(title, snippet)
	}
	// The challenge's words alone make a challenge only on a page without
	// results: a result about the challenge quotes them too.
	page.challenge = page.challenge || (challengeText && page.blocks == 0)
	page.next = nextPageForm(doc)
	return page
}

// add appends the result whose title link is title, unless its link is
// an ad or one of the engine's own.
func (p *duckDuckGoPage) add(title, snippet *html.Node) {
	target, ok := resultURL(attr(title, "href"))
	if !ok {
		return
	}
	p.results = append(p.results, protocol.SearchResult{Title: text(title), URL: target, Snippet: text(snippet)})
}

// ddgBase resolves the engine's relative and scheme-relative links
// ("/l/?uddg=", "//duckduckgo.com/l/?uddg="): they are DuckDuckGo's own
// whatever URL the page came from.
var ddgBase = &url.URL{Scheme: "https", Host: "duckduckgo.com", Path: "/"}

// resultURL is where a result link leads: a redirect wrapper
// (duckduckgo.com/l/?uddg=<escaped URL>&rut=...) unwrapped; false for an
// ad (duckduckgo.com/y.js), any other link of the engine's own, and what
// is not an http(s) URL.
func resultURL(href string) (string, bool) {
	u, err := ddgBase.Parse(strings.TrimSpace(href))
	if err != nil {
		return "", false
	}
	if isDuckDuckGoHost(u.Hostname()) {
		target := u.Query().Get("uddg")
		if strings.TrimSuffix(u.Path, "/") != "/l" || target == "" {
			return "", false // y.js ads, searches, settings, feedback
		}
		if u, err = url.Parse(target); err != nil || isDuckDuckGoHost(u.Hostname()) {
			return "", false
		}
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return u.String(), true
}

func isDuckDuckGoHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "duckduckgo.com" || strings.HasSuffix(host, ".duckduckgo.com")
}

// isSearchForm reports whether form is DuckDuckGo's search form: it posts
// a q to /html/ or /lite/.
func isSearchForm(form *html.Node) bool {
	action := strings.TrimSuffix(attr(form, "action"), "/")
	if !strings.HasSuffix(action, "/html") && !strings.HasSuffix(action, "/lite") {
		return false
	}
	return find(form, func(n *html.Node) bool { return isElement(n, "input") && attr(n, "name") == "q" }) != nil
}

// nextPageForm is the fields of the page's "Next" form (html: value
// "Next"; lite: "Next Page >"): the hidden inputs beside its button. The
// lite page nests that form in its search form, so the parser drops the
// inner <form> tag; the button's parent holds the fields either way.
func nextPageForm(doc *html.Node) url.Values {
	button := find(doc, func(n *html.Node) bool {
		return isElement(n, "input") && strings.EqualFold(attr(n, "type"), "submit") &&
			strings.HasPrefix(strings.ToLower(strings.TrimSpace(attr(n, "value"))), "next")
	})
	if button == nil || button.Parent == nil {
		return nil
	}
	form := url.Values{}
	for _, in := range findAll(button.Parent, func(n *html.Node) bool {
		return isElement(n, "input") && strings.EqualFold(attr(n, "type"), "hidden") && attr(n, "name") != ""
	}) {
		form.Add(attr(in, "name"), attr(in, "value"))
	}
	if form.Get("q") == "" {
		return nil
	}
	return form
}

// nextElement is n's next sibling element, or nil.
func nextElement(n *html.Node) *html.Node {
	for s := n.NextSibling; s != nil; s = s.NextSibling {
		if s.Type == html.ElementNode {
			return s
		}
	}
	return nil
}

// hasClassPrefix reports whether one of n's classes starts with prefix.
func hasClassPrefix(n *html.Node, prefix string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}
