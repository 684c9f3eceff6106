package websearch

import (
	"context"
	"strings"
	"testing"

	"github.com/framebus/framebus/protocol"
)

func natsServer(t *testing.T) *engineServer {
	return googleServer(t, map[string]answer{
		"nats jetstream":          jsonAnswer(t, 200, "google-results.json"),
		"nats jetstream start=11": jsonAnswer(t, 200, "google-results-2.json"),
		"quota":                   jsonAnswer(t, 429, "google-quota.json"),
		"daily limit":             jsonAnswer(t, 403, "google-daily-limit.json"),
		"html page":               htmlAnswer(t, 200, "not-results.html"),
		"bad gateway":             answer{502, "text/html", []byte("<html><body><h1>502 Bad Gateway</h1></body></html>")},
	})
}

// TestGoogleResults: items are title, link and snippet (white space
// normalised); more than ten take a second request with start=11 and
// num for the rest; the key and cx go with every request.
func TestGoogleResults(t *testing.T) {
	g := natsServer(t)
	reply, err := newSearcher(t, nil, g).Search(context.Background(), protocol.SearchRequest{Query: "nats jetstream", Engine: "google", Limit: 12})
	if err != nil {
		t.Fatal(err)
	}
	if !reply.OK || reply.Engine != protocol.EngineGoogle || len(reply.Results) != 12 {
		t.Fatalf("reply ok %v engine %q, %d results; want ok google 12", reply.OK, reply.Engine, len(reply.Results))
	}
	if got, want := reply.Results[0], (protocol.SearchResult{Title: "JetStream | NATS Docs", URL: "https://docs.nats.io/nats-concepts/jetstream",
		Snippet: "NATS has a built-in persistence engine called JetStream which enables messages to be stored and replayed at a later time."}); got != want {
		t.Errorf("first result %+v, want %+v", got, want)
	}
	if got, want := reply.Results[5].Snippet, "Feb 12, 2026 ... A side-by-side look at NATS JetStream and Apache Kafka: storage, replication, consumers and operations."; got != want {
		t.Errorf("a snippet with a line break: %q, want %q", got, want)
	}
	if got, want := reply.Results[11], (protocol.SearchResult{Title: "Understanding NATS JetStream acknowledgement models", URL: "https://blog.example.org/nats-jetstream-acks",
		Snippet: "AckExplicit, AckAll and AckNone: what each one means for redelivery, and when to choose which."}); got != want {
		t.Errorf("twelfth result %+v, want %+v", got, want)
	}
	reqs := g.got()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	if first.method != "GET" || first.path != "/customsearch/v1" || first.form.Get("num") != "10" || first.form.Has("start") ||
		first.form.Get("key") != testGoogleKey || first.form.Get("cx") != testGoogleCX || first.form.Get("q") != "nats jetstream" {
		t.Errorf("first request %s %s %v", first.method, first.path, first.form)
	}
	if second.form.Get("start") != "11" || second.form.Get("num") != "2" {
		t.Errorf("second request %v, want start=11 num=2", second.form)
	}
}

// TestGoogleLimit: at most limit results, however many the API sends; no
// second request when the first page has them; none past the API's last
// page.
func TestGoogleLimit(t *testing.T) {
	g := natsServer(t)
	s := newSearcher(t, nil, g)
	reply, err := s.Search(context.Background(), protocol.SearchRequest{Query: "nats jetstream", Engine: "google", Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Results) != 4 || reply.Results[3].URL != "https://github.com/nats-io/nats.go" {
		t.Errorf("results %v, want the first 4", urls(reply.Results))
	}
	if reqs := g.got(); len(reqs) != 1 || reqs[0].form.Get("num") != "4" {
		t.Errorf("requests %v, want one with num=4", reqs)
	}

	reply, err = s.Search(context.Background(), protocol.SearchRequest{Query: "nats jetstream", Engine: "google", Limit: protocol.MaxSearchLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Results) != 13 {
		t.Errorf("%d results, want the 13 of both pages", len(reply.Results))
	}
	if n := len(g.got()); n != 3 {
		t.Errorf("%d requests in all, want 3 (page 2 has no nextPage)", n)
	}
}

// TestGoogleLaterPageFails: a quota error on the second page answers the
// first page's results.
func TestGoogleLaterPageFails(t *testing.T) {
	g := googleServer(t, map[string]answer{
		"nats jetstream":          jsonAnswer(t, 200, "google-results.json"),
		"nats jetstream start=11": jsonAnswer(t, 429, "google-quota.json"),
	})
	reply, err := newSearcher(t, nil, g).Search(context.Background(), protocol.SearchRequest{Query: "nats jetstream", Engine: "google", Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Results) != 10 || len(g.got()) != 2 {
		t.Errorf("%d results after %d requests, want the first page's 10 after 2", len(reply.Results), len(g.got()))
	}
}

func TestGoogleNoResults(t *testing.T) {
	reply, err := newSearcher(t, nil, natsServer(t)).Search(context.Background(), protocol.SearchRequest{Query: "zqxjv flurbomatic", Engine: "google"})
	if err != nil {
		t.Fatal(err)
	}
	if !reply.OK || reply.Results == nil || len(reply.Results) != 0 {
		t.Errorf("reply %+v, want ok with results []", reply)
	}
}

// TestGoogleErrors: the API's error object is search_failed quoting its
// message (quota, an invalid key, which never shows the key); an answer
// that is no API answer is search_failed too.
func TestGoogleErrors(t *testing.T) {
	g := natsServer(t)
	for _, tc := range []struct {
		name, query, key string
		want             []string
	}{
		{"quota", "quota", testGoogleKey, []string{"HTTP 429 RESOURCE_EXHAUSTED (rateLimitExceeded)",
			"Quota exceeded for quota metric 'Queries' and limit 'Queries per day' of service 'customsearch.googleapis.com'"}},
		{"daily limit (the older error shape)", "daily limit", testGoogleKey, []string{"HTTP 403 (dailyLimitExceeded): Daily Limit Exceeded"}},
		{"key invalid", "nats jetstream", "AIzaSyWRONG-key-9876543210", []string{"HTTP 400 INVALID_ARGUMENT (badRequest)", "API key not valid. Please pass a valid API key."}},
		{"not JSON", "html page", testGoogleKey, []string{"not a Custom Search JSON API response", "Network Login"}},
		{"HTTP 502", "bad gateway", testGoogleKey, []string{"HTTP 502 Bad Gateway"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Options{Fetch: httpFetch, GoogleURL: g.URL + "/customsearch/v1", GoogleKey: tc.key, GoogleCX: testGoogleCX})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Search(context.Background(), protocol.SearchRequest{Query: tc.query, Engine: "google"})
			msg := wantCode(t, err, protocol.CodeSearchFailed)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, tc.key) {
				t.Errorf("message %q shows the key", msg)
			}
		})
	}
}

// TestGoogleNotConfigured: without a key and cx google is bad_request
// saying what to configure, and nothing is asked.
func TestGoogleNotConfigured(t *testing.T) {
	g := natsServer(t)
	for _, o := range []Options{
		{Fetch: httpFetch, GoogleURL: g.URL, GoogleCX: testGoogleCX},
		{Fetch: httpFetch, GoogleURL: g.URL, GoogleKey: testGoogleKey},
	} {
		s, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Search(context.Background(), protocol.SearchRequest{Query: "nats", Engine: "google"})
		msg := wantCode(t, err, protocol.CodeBadRequest)
		if !strings.HasPrefix(msg, "search.engine: ") || !strings.Contains(msg, "search.google.key") || !strings.Contains(msg, "search.google.cx") {
			t.Errorf("message %q does not name the field and the settings", msg)
		}
	}
	if n := len(g.got()); n != 0 {
		t.Errorf("%d requests reached the API, want 0", n)
	}
}

// TestSiteAndRegion: DuckDuckGo takes the site as the site: operator in q
// and the region as kl; Google as siteSearch (include) and gl.
func TestSiteAndRegion(t *testing.T) {
	ddg := ddgServer(t, nil)
	g := natsServer(t)
	s := newSearcher(t, ddg, g)
	req := protocol.SearchRequest{Query: "consumers", Site: "docs.nats.io", Region: "de-DE"}
	if _, err := s.Search(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if f := ddg.got()[0].form; f.Get("q") != "consumers site:docs.nats.io" || f.Get("kl") != "de-de" {
		t.Errorf("duckduckgo form %v, want q with site: and kl=de-de", f)
	}
	req.Engine, req.Region = "google", "DE"
	if _, err := s.Search(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if f := g.got()[0].form; f.Get("q") != "consumers" || f.Get("siteSearch") != "docs.nats.io" || f.Get("siteSearchFilter") != "i" || f.Get("gl") != "de" {
		t.Errorf("google query %v, want siteSearch=docs.nats.io siteSearchFilter=i gl=de", f)
	}
}
