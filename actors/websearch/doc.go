// Package websearch is the engine behind the search resource (ADR-006,
// search.query): it asks a web search engine and answers title, URL and
// snippet per result, with the engine's ads and its own links removed and
// its redirect wrappers unwrapped.
//
// Two engines:
//
//   - duckduckgo (the default): DuckDuckGo's HTML results page
//     (html.duckduckgo.com/html/), asked as its own search form asks (a
//     POST of q, kl for the region; a site goes into q as the site:
//     operator). Both of DuckDuckGo's result layouts are read: the html
//     endpoint's div.result blocks and the lite endpoint's table. Past the
//     first page the page's own "Next" form is posted, up to the limit.
//   - google: the Custom Search JSON API (www.googleapis.com/customsearch/v1)
//     with the node's key and engine id (cx): q, num (at most 10 a request,
//     more take start= paging), gl for the region, siteSearch for the site.
//
// Every request an engine makes goes through Options.Fetch, which the
// node gives as the http resource's fetcher: the engine's domain must be
// on the whitelist, like any other fetch.
//
//	s, err := websearch.New(websearch.Options{Fetch: fetcher.Fetch})
//	reply, err := s.Search(ctx, protocol.SearchRequest{Query: "nats jetstream", Limit: 5})
//	for _, r := range reply.Results {
//		fmt.Println(r.Title, r.URL)
//	}
//
// Errors, by code:
//
//   - bad_request: the request (no query; a limit below 1 or above
//     protocol.MaxSearchLimit; an unknown engine; a site or region that is
//     none), or google asked for on a node that has no key and cx. The
//     message names the field. A limit of 0 is the default.
//   - search_failed: the engine answered, but not with results: DuckDuckGo's
//     bot challenge ("anomaly" page), an HTTP error status (4xx and 5xx
//     alike: the engine answered, and the message quotes the status), a
//     Google error object (quota, invalid key: its message is quoted), or a
//     page that is no results page at all. An engine that answers 5xx is
//     search_failed and not unavailable, because unavailable means that
//     nothing answered on the bus.
//   - the fetch's own codes, passed on: permission_denied (the whitelist),
//     timeout, and fetch_failed for an engine that cannot be reached (no
//     HTTP answer).
//
// A search past the first page that fails on a later page answers the
// results it has.
//
// Pages are parsed with golang.org/x/net/html, which the project already
// depends on; the few questions asked of a page (an element's classes, its
// text, the next row) do not need goquery's selectors, and the parser is
// the one goquery itself is built on.
package websearch
