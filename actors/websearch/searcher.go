package websearch

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/framebus/framebus/protocol"
)

// The engines' public endpoints, used when Options leaves them empty.
const (
	DefaultDuckDuckGoURL = "https://html.duckduckgo.com/html/"
	DefaultGoogleURL     = "https://www.googleapis.com/customsearch/v1"
)

// FetchFunc makes one HTTP request. The node passes the http resource's
// fetcher (webfetch), so every request an engine makes passes the
// whitelist; its errors are *protocol.Error.
type FetchFunc func(ctx context.Context, req protocol.FetchRequest) (protocol.FetchReply, error)

// Options configure a Searcher.
type Options struct {
	// Fetch makes one HTTP request (the node passes webfetch.Fetcher.Fetch).
	// Its errors are *protocol.Error (permission_denied when the engine's
	// domain is not allowed, timeout, fetch_failed): their code is passed on.
	Fetch         FetchFunc
	DefaultEngine string // "": protocol.EngineDuckDuckGo
	DuckDuckGoURL string // "": DefaultDuckDuckGoURL
	GoogleURL     string // "": DefaultGoogleURL
	// GoogleKey and GoogleCX are the Custom Search JSON API's key and
	// engine id; without both, google is refused (bad_request saying how
	// to configure it).
	GoogleKey, GoogleCX string
}

// Searcher answers searches. It holds no state between searches, so one
// Searcher serves any number of them at once.
type Searcher struct {
	fetch         FetchFunc
	defaultEngine string
	duckduckgo    *url.URL
	google        *url.URL
	googleKey     string
	googleCX      string
}

// New checks o and returns its Searcher: an engine URL that is not an
// absolute http(s) URL, an unknown default engine or a missing Fetch is
// refused with bad_request naming the option.
func New(o Options) (*Searcher, error) {
	if o.Fetch == nil {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "websearch: Options.Fetch is required")
	}
	s := &Searcher{fetch: o.Fetch, defaultEngine: o.DefaultEngine, googleKey: o.GoogleKey, googleCX: o.GoogleCX}
	if s.defaultEngine == "" {
		s.defaultEngine = protocol.EngineDuckDuckGo
	}
	if !slices.Contains(protocol.SearchEngines, s.defaultEngine) {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "search.engine: unknown engine %q (one of %s)",
			s.defaultEngine, strings.Join(protocol.SearchEngines, ", "))
	}
	var err error
	if s.duckduckgo, err = engineURL("search.duckduckgo.url", o.DuckDuckGoURL, DefaultDuckDuckGoURL); err != nil {
		return nil, err
	}
	if s.google, err = engineURL("search.google.url", o.GoogleURL, DefaultGoogleURL); err != nil {
		return nil, err
	}
	return s, nil
}

func engineURL(option, raw, def string) (*url.URL, error) {
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "%s: %q is not an absolute http(s) URL", option, raw)
	}
	if u.Fragment != "" || u.User != nil {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "%s: %q may have no fragment and no user info", option, raw)
	}
	return u, nil
}

// maxQueryBytes bounds a query: Google answers a longer one with an
// error, and DuckDuckGo cuts it.
const maxQueryBytes = 2048

// engine is one search engine's way of answering a validated request
// with at most req.Limit results.
type engine func(ctx context.Context, req protocol.SearchRequest) ([]protocol.SearchResult, error)

// Search runs req on its engine (the default engine when req.Engine is
// empty) and answers at most req.Limit results (DefaultSearchLimit when
// 0). Bad input is bad_request naming the field; an engine that answers
// with something other than results (a captcha, a quota error, a page
// that is no results page) is search_failed; the fetch's own errors keep
// their code (permission_denied, timeout, fetch_failed).
func (s *Searcher) Search(ctx context.Context, req protocol.SearchRequest) (protocol.SearchReply, error) {
	start := time.Now()
	req, err := s.normalize(req)
	if err != nil {
		return protocol.SearchReply{}, err
	}
	var run engine
	switch req.Engine {
	case protocol.EngineDuckDuckGo:
		run = s.searchDuckDuckGo
	case protocol.EngineGoogle:
		if s.googleKey == "" || s.googleCX == "" {
			return protocol.SearchReply{}, protocol.Errorf(protocol.CodeBadRequest,
				"search.engine: google is not configured on this node: it needs the Custom Search JSON API's key "+
					"and engine id (search.google.key or search.google.keyFile, and search.google.cx)")
		}
		run = s.searchGoogle
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout.Std())
		defer cancel()
	}
	results, err := run(ctx, req)
	if err != nil {
		return protocol.SearchReply{}, err
	}
	if results == nil {
		results = []protocol.SearchResult{} // "results": [] on the wire, never null
	}
	return protocol.SearchReply{OK: true, Engine: req.Engine, Query: req.Query, Results: results,
		Took: protocol.Duration(time.Since(start))}, nil
}

// normalize checks req and fills in its defaults.
func (s *Searcher) normalize(req protocol.SearchRequest) (protocol.SearchRequest, error) {
	req.Query = strings.TrimSpace(req.Query)
	if req.Query == "" {
		return req, protocol.Errorf(protocol.CodeBadRequest, "search.query: required (the words to search for)")
	}
	if len(req.Query) > maxQueryBytes {
		return req, protocol.Errorf(protocol.CodeBadRequest, "search.query: %d bytes, at most %d", len(req.Query), maxQueryBytes)
	}
	if req.Engine == "" {
		req.Engine = s.defaultEngine
	}
	if !slices.Contains(protocol.SearchEngines, req.Engine) {
		return req, protocol.Errorf(protocol.CodeBadRequest, "search.engine: unknown engine %q (one of %s)",
			req.Engine, strings.Join(protocol.SearchEngines, ", "))
	}
	switch {
	case req.Limit == 0:
		req.Limit = protocol.DefaultSearchLimit
	case req.Limit < 1 || req.Limit > protocol.MaxSearchLimit:
		return req, protocol.Errorf(protocol.CodeBadRequest, "search.limit: %d is out of range (1 to %d)", req.Limit, protocol.MaxSearchLimit)
	}
	req.Site = strings.TrimSpace(req.Site)
	if req.Site != "" && !validSite(req.Site) {
		return req, protocol.Errorf(protocol.CodeBadRequest,
			"search.site: %q is not a site (a domain such as example.com, optionally with a path)", req.Site)
	}
	req.Region = strings.TrimSpace(req.Region)
	if strings.ContainsFunc(req.Region, func(r rune) bool { return !isRegionRune(r) }) {
		return req, protocol.Errorf(protocol.CodeBadRequest,
			"search.region: %q is not a region code (letters, digits and '-', e.g. de-de or de)", req.Region)
	}
	if req.Timeout < 0 {
		return req, protocol.Errorf(protocol.CodeBadRequest, "search.timeout: %s is negative", req.Timeout.Std())
	}
	return req, nil
}

// validSite accepts a domain, optionally followed by a path: what both
// engines' site restriction takes. A scheme is not part of it.
func validSite(site string) bool {
	if strings.Contains(site, "://") || strings.ContainsAny(site, " \t\r\n\"") {
		return false
	}
	host, _, _ := strings.Cut(site, "/")
	return host == "localhost" || (strings.Contains(host, ".") && !strings.HasPrefix(host, ".") && !strings.HasSuffix(host, "."))
}

func isRegionRune(r rune) bool {
	return r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
}

// get makes one request to an engine and answers its body as text. The
// fetch's errors keep their code, with the engine named in the message;
// secret is left out of every message (Google's key travels in the URL).
func (s *Searcher) get(ctx context.Context, engineName string, freq protocol.FetchRequest, secret string) (protocol.FetchReply, string, error) {
	reply, err := s.fetch(ctx, freq)
	if err != nil {
		return reply, "", fetchError(engineName, err, secret)
	}
	body := reply.Body
	if reply.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(reply.Body)
		if err != nil {
			return reply, "", protocol.Errorf(protocol.CodeSearchFailed, "search %s: its answer's body is not valid base64: %v", engineName, err)
		}
		body = string(b)
	}
	return reply, body, nil
}

// fetchError names the engine in a fetch's error and keeps its code. An
// error that carries no code is judged by what it is: a deadline is
// timeout, a cancellation cancelled, anything else fetch_failed (the
// engine could not be asked).
func fetchError(engineName string, err error, secret string) error {
	code := protocol.CodeFetchFailed
	var perr *protocol.Error
	switch {
	case errors.As(err, &perr):
		code = perr.Code
	case errors.Is(err, context.DeadlineExceeded):
		code = protocol.CodeTimeout
	case errors.Is(err, context.Canceled):
		code = protocol.CodeCancelled
	}
	msg := redact(fmt.Sprintf("search %s: %v", engineName, err), secret)
	return &protocol.Error{Code: code, Message: msg, Err: err}
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	s = strings.ReplaceAll(s, secret, "REDACTED")
	return strings.ReplaceAll(s, url.QueryEscape(secret), "REDACTED")
}
