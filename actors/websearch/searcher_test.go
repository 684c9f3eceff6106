package websearch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
)

// TestBadInput: each bad field is bad_request naming it, and no engine is
// asked.
func TestBadInput(t *testing.T) {
	ddg := ddgServer(t, nil)
	g := natsServer(t)
	s := newSearcher(t, ddg, g)
	for _, tc := range []struct {
		name  string
		req   protocol.SearchRequest
		field string
	}{
		{"no query", protocol.SearchRequest{}, "search.query: "},
		{"blank query", protocol.SearchRequest{Query: " \t\n"}, "search.query: "},
		{"query too long", protocol.SearchRequest{Query: strings.Repeat("word ", 410)}, "search.query: "},
		{"limit below 1", protocol.SearchRequest{Query: "x", Limit: -1}, "search.limit: "},
		{"limit past the maximum", protocol.SearchRequest{Query: "x", Limit: protocol.MaxSearchLimit + 1}, "search.limit: "},
		{"unknown engine", protocol.SearchRequest{Query: "x", Engine: "bing"}, "search.engine: "},
		{"engine in capitals", protocol.SearchRequest{Query: "x", Engine: "Google"}, "search.engine: "},
		{"site with a scheme", protocol.SearchRequest{Query: "x", Site: "https://example.com"}, "search.site: "},
		{"site with a space", protocol.SearchRequest{Query: "x", Site: "example .com"}, "search.site: "},
		{"site without a dot", protocol.SearchRequest{Query: "x", Site: "example"}, "search.site: "},
		{"region with a space", protocol.SearchRequest{Query: "x", Region: "de de"}, "search.region: "},
		{"region with an ampersand", protocol.SearchRequest{Query: "x", Region: "de&x=1"}, "search.region: "},
		{"negative timeout", protocol.SearchRequest{Query: "x", Timeout: protocol.Duration(-time.Second)}, "search.timeout: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Search(context.Background(), tc.req)
			if msg := wantCode(t, err, protocol.CodeBadRequest); !strings.HasPrefix(msg, tc.field) {
				t.Errorf("message %q does not start with the field %q", msg, tc.field)
			}
		})
	}
	if n := len(ddg.got()) + len(g.got()); n != 0 {
		t.Errorf("%d requests reached an engine, want 0", n)
	}
	// The edges of what is accepted.
	for _, req := range []protocol.SearchRequest{
		{Query: "x", Limit: 1},
		{Query: "x", Limit: protocol.MaxSearchLimit},
		{Query: "x", Site: "docs.nats.io/nats-concepts"},
		{Query: "x", Region: "wt-wt"},
	} {
		if _, err := s.Search(context.Background(), req); err != nil {
			t.Errorf("%+v: %v", req, err)
		}
	}
}

// TestNew: an engine URL that is not an absolute http(s) URL, an unknown
// default engine or no Fetch is refused, naming the option.
func TestNew(t *testing.T) {
	for _, tc := range []struct {
		o      Options
		option string
	}{
		{Options{}, "Options.Fetch"},
		{Options{Fetch: httpFetch, DuckDuckGoURL: "ftp://html.duckduckgo.com/html/"}, "search.duckduckgo.url: "},
		{Options{Fetch: httpFetch, DuckDuckGoURL: "html.duckduckgo.com/html/"}, "search.duckduckgo.url: "},
		{Options{Fetch: httpFetch, DuckDuckGoURL: "/html/"}, "search.duckduckgo.url: "},
		{Options{Fetch: httpFetch, DuckDuckGoURL: "http://"}, "search.duckduckgo.url: "},
		{Options{Fetch: httpFetch, DuckDuckGoURL: "https://user:pw@html.duckduckgo.com/html/"}, "search.duckduckgo.url: "},
		{Options{Fetch: httpFetch, GoogleURL: "https://www.googleapis.com/customsearch/v1#x"}, "search.google.url: "},
		{Options{Fetch: httpFetch, GoogleURL: "http://[::1"}, "search.google.url: "},
		{Options{Fetch: httpFetch, DefaultEngine: "bing"}, "search.engine: "},
	} {
		_, err := New(tc.o)
		if msg := wantCode(t, err, protocol.CodeBadRequest); !strings.Contains(msg, tc.option) {
			t.Errorf("New(%+v): %q does not name %q", tc.o, msg, tc.option)
		}
	}
	s, err := New(Options{Fetch: httpFetch, DefaultEngine: protocol.EngineGoogle})
	if err != nil {
		t.Fatal(err)
	}
	if s.duckduckgo.String() != DefaultDuckDuckGoURL || s.google.String() != DefaultGoogleURL || s.defaultEngine != protocol.EngineGoogle {
		t.Errorf("defaults %s %s %s", s.duckduckgo, s.google, s.defaultEngine)
	}
}

// TestDefaultEngine: a request without an engine goes to the node's
// default.
func TestDefaultEngine(t *testing.T) {
	ddg := ddgServer(t, nil)
	g := natsServer(t)
	s, err := New(Options{Fetch: httpFetch, DefaultEngine: protocol.EngineGoogle, DuckDuckGoURL: ddg.URL + "/html/",
		GoogleURL: g.URL + "/customsearch/v1", GoogleKey: testGoogleKey, GoogleCX: testGoogleCX})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := s.Search(context.Background(), protocol.SearchRequest{Query: "nats jetstream", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Engine != protocol.EngineGoogle || len(g.got()) != 1 || len(ddg.got()) != 0 {
		t.Errorf("engine %q, google asked %d times, duckduckgo %d; want google once", reply.Engine, len(g.got()), len(ddg.got()))
	}
}

// TestEngineUnreachable: an engine nothing listens for is fetch_failed
// (the fetch's code, passed on) naming the engine; the Google key in the
// URL that the fetch error quotes is left out.
func TestEngineUnreachable(t *testing.T) {
	closed := "http://" + bustest.FreeAddr(t)
	s, err := New(Options{Fetch: httpFetch, DuckDuckGoURL: closed + "/html/", GoogleURL: closed + "/customsearch/v1",
		GoogleKey: testGoogleKey, GoogleCX: testGoogleCX})
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range protocol.SearchEngines {
		_, err := s.Search(context.Background(), protocol.SearchRequest{Query: "x", Engine: engine})
		msg := wantCode(t, err, protocol.CodeFetchFailed)
		if !strings.HasPrefix(msg, "search "+engine+": ") || !strings.Contains(msg, "connection refused") {
			t.Errorf("%s: message %q does not name the engine and the cause", engine, msg)
		}
		if strings.Contains(msg, testGoogleKey) {
			t.Errorf("%s: message %q shows the Google key", engine, msg)
		}
	}
}

// TestWhitelistApplies: an engine whose domain the fetch's whitelist
// denies is permission_denied, and the engine is never asked.
func TestWhitelistApplies(t *testing.T) {
	ddg := ddgServer(t, nil)
	g := natsServer(t)
	s, err := New(Options{
		Fetch:         allowOnly("allowed.example", httpFetch),
		DuckDuckGoURL: ddg.URL + "/html/", GoogleURL: g.URL + "/customsearch/v1",
		GoogleKey: testGoogleKey, GoogleCX: testGoogleCX,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range protocol.SearchEngines {
		_, err := s.Search(context.Background(), protocol.SearchRequest{Query: "x", Engine: engine})
		if msg := wantCode(t, err, protocol.CodePermissionDenied); !strings.Contains(msg, "127.0.0.1") {
			t.Errorf("%s: message %q does not name the domain", engine, msg)
		}
	}
	if n := len(ddg.got()) + len(g.got()); n != 0 {
		t.Errorf("%d requests reached an engine, want 0", n)
	}
}

// TestTimeout: an engine that never answers is timeout within the
// request's timeout.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(release) }) // runs first: the handler returns, then the server closes
	s, err := New(Options{Fetch: httpFetch, DuckDuckGoURL: silent.URL + "/html/"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Search(context.Background(), protocol.SearchRequest{Query: "x", Timeout: protocol.Duration(200 * time.Millisecond)})
	wantCode(t, err, protocol.CodeTimeout)
}

// TestConcurrentSearches: one Searcher answers many searches at once.
func TestConcurrentSearches(t *testing.T) {
	s := newSearcher(t, golangServer(t), natsServer(t))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			req := protocol.SearchRequest{Query: "golang http client", Limit: 15}
			want := 15
			if i%2 == 1 {
				req = protocol.SearchRequest{Query: "nats jetstream", Engine: protocol.EngineGoogle, Limit: 12}
				want = 12
			}
			reply, err := s.Search(context.Background(), req)
			if err == nil && len(reply.Results) != want {
				err = protocol.Errorf(protocol.CodeInternal, "%s: %d results, want %d", req.Engine, len(reply.Results), want)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
