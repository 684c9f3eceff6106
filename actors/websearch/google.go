package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/framebus/framebus/protocol"
)

// googlePageSize is the most results one Custom Search request answers
// (num); more take further requests with start=11, 21, ...
const googlePageSize = 10

// googleResponse is the part of a Custom Search JSON API answer
// (customsearch#search) that makes results, or its error object.
type googleResponse struct {
	Kind  string `json:"kind"`
	Items []struct {
		Title   string `json:"title"`
		Link    string `json:"link"`
		Snippet string `json:"snippet"`
	} `json:"items"`
	Queries struct {
		NextPage []json.RawMessage `json:"nextPage"`
	} `json:"queries"`
	Error *googleError `json:"error"`
}

// googleError is Google's error object: {"error": {"code", "message",
// "status", "errors": [{"reason", ...}]}}.
type googleError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Errors  []struct {
		Reason string `json:"reason"`
	} `json:"errors"`
}

// searchGoogle asks the Custom Search JSON API, a page of at most ten
// results at a time, until it has req.Limit results or the API has no
// more. A later page that fails ends the paging: the results so far are
// the answer.
func (s *Searcher) searchGoogle(ctx context.Context, req protocol.SearchRequest) ([]protocol.SearchResult, error) {
	var results []protocol.SearchResult
	for start := 1; len(results) < req.Limit; start += googlePageSize {
		num := min(googlePageSize, req.Limit-len(results))
		page, more, err := s.googlePage(ctx, req, start, num)
		if err != nil {
			if len(results) > 0 {
				break
			}
			return nil, err
		}
		results = append(results, page...)
		if !more || len(page) == 0 {
			break
		}
	}
	if len(results) > req.Limit {
		results = results[:req.Limit]
	}
	return results, nil
}

// googlePage asks for num results from the start-th on; more says the API
// has a next page.
func (s *Searcher) googlePage(ctx context.Context, req protocol.SearchRequest, start, num int) ([]protocol.SearchResult, bool, error) {
	u := *s.google
	q := u.Query()
	q.Set("key", s.googleKey)
	q.Set("cx", s.googleCX)
	q.Set("q", req.Query)
	q.Set("num", strconv.Itoa(num))
	if start > 1 {
		q.Set("start", strconv.Itoa(start))
	}
	if req.Region != "" {
		q.Set("gl", strings.ToLower(req.Region))
	}
	if req.Site != "" {
		q.Set("siteSearch", req.Site)
		q.Set("siteSearchFilter", "i") // include only that site
	}
	u.RawQuery = q.Encode()
	freq := protocol.FetchRequest{URL: u.String(), Headers: map[string]string{"Accept": "application/json"}, Timeout: req.Timeout}
	reply, body, err := s.get(ctx, protocol.EngineGoogle, freq, s.googleKey)
	if err != nil {
		return nil, false, err
	}
	var resp googleResponse
	jsonErr := json.Unmarshal([]byte(body), &resp)
	switch {
	case jsonErr == nil && resp.Error != nil:
		return nil, false, protocol.Errorf(protocol.CodeSearchFailed, "search google: the Custom Search JSON API answered HTTP %d%s: %s",
			reply.Status, resp.Error.describe(), redact(resp.Error.Message, s.googleKey))
	case reply.Status != 200:
		return nil, false, protocol.Errorf(protocol.CodeSearchFailed,
			"search google: %s answered HTTP %d %s, not a Custom Search JSON API response", s.google, reply.Status, redact(reply.StatusText, s.googleKey))
	case jsonErr != nil || resp.Kind != "customsearch#search":
		return nil, false, protocol.Errorf(protocol.CodeSearchFailed,
			"search google: %s answered something that is not a Custom Search JSON API response (customsearch#search): %s",
			s.google, quote(normalizeSpace(redact(body, s.googleKey)))) // a page may echo the URL asked, key and all
	}
	results := make([]protocol.SearchResult, 0, len(resp.Items))
	for _, it := range resp.Items {
		link, err := url.Parse(it.Link)
		if err != nil || (link.Scheme != "http" && link.Scheme != "https") || link.Host == "" {
			continue
		}
		results = append(results, protocol.SearchResult{
			Title: normalizeSpace(it.Title), URL: it.Link, Snippet: normalizeSpace(it.Snippet),
		})
	}
	return results, len(resp.Queries.NextPage) > 0, nil
}

// describe is the error's status and reasons, e.g.
// " RESOURCE_EXHAUSTED (rateLimitExceeded)".
func (e *googleError) describe() string {
	var reasons []string
	for _, r := range e.Errors {
		if r.Reason != "" {
			reasons = append(reasons, r.Reason)
		}
	}
	s := ""
	if e.Status != "" {
		s = " " + e.Status
	}
	if len(reasons) > 0 {
		s += fmt.Sprintf(" (%s)", strings.Join(reasons, ", "))
	}
	return s
}
