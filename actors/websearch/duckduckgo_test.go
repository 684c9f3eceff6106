package websearch

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// The twelve results of ddg-results.html, every one behind a
// //duckduckgo.com/l/?uddg= wrapper (the seventh a relative /l/?uddg=).
var golangResults = []protocol.SearchResult{
	{Title: "http package - net/http - Go Packages", URL: "https://pkg.go.dev/net/http",
		Snippet: `Package http provides HTTP client and server implementations. Get, Head, Post, and PostForm make HTTP (or HTTPS) requests: resp, err := http.Get("http://example.com/")`},
	{Title: "Tutorial: Developing a RESTful API with Go and Gin", URL: "https://go.dev/doc/tutorial/web-service-gin",
		Snippet: "This tutorial introduces the basics of writing a RESTful web service API with Go and the Gin Web Framework & its router."},
	{Title: "The complete guide to Go net/http timeouts 'client side'", URL: "https://blog.example.org/posts/2024/go-http-client-timeouts?ref=ddg&utm=x",
		Snippet: "When writing an HTTP server or client in Go, timeouts are amongst the easiest and most subtle things to get wrong."},
	{Title: "How to set timeout for http.Get() requests in Golang? - Stack Overflow", URL: "https://stackoverflow.com/questions/16895294/how-to-set-timeout-for-http-get-requests-in-golang",
		Snippet: "I'm making a URL fetcher in Go and have a list of URLs to fetch. I send http.Get() requests to each URL and obtain their response."},
	{Title: "GitHub - go-resty/resty: Simple HTTP and REST client library for Go", URL: "https://github.com/go-resty/resty",
		Snippet: "Simple HTTP and REST client library for Go. Contribute to go-resty/resty development by creating an account on GitHub."},
	{Title: "Go HTTP-Client: Anfragen senden und Antworten lesen", URL: "https://www.example.de/golang/http-client-tutorial",
		Snippet: "Ausschüttungen, Umlaute & Sonderzeichen: der HTTP-Client von Go liest Antworten als Stream."},
	{Title: "Go by Example: HTTP Client", URL: "https://gobyexample.com/http-client",
		Snippet: "The Go standard library comes with excellent support for HTTP clients and servers in the net/http package."},
	{Title: "How To Make HTTP Requests in Go | DigitalOcean", URL: "https://www.digitalocean.com/community/tutorials/how-to-make-http-requests-in-go",
		Snippet: "In this tutorial, you will create a program that makes several types of HTTP requests to an HTTP server."},
	{Title: "Go (programming language) - Wikipedia", URL: "https://en.wikipedia.org/wiki/Go_(programming_language)",
		Snippet: "Go is a high-level general purpose programming language that is statically typed and compiled."},
	{Title: "Go HTTP client: connection pooling explained", URL: "https://medium.example.com/@someone/go-http-client-connection-pooling-3f2a",
		Snippet: "Reusing connections with http.Transport: MaxIdleConnsPerHost, IdleConnTimeout and friends."},
	{Title: "httptest package - net/http/httptest - Go Packages", URL: "https://pkg.go.dev/net/http/httptest",
		Snippet: "Package httptest provides utilities for HTTP testing."},
	{Title: "Go | How do I send an HTTP GET request? - ReqBin", URL: "https://reqbin.example.net/code/go/ydvdjyow/go-http-get-example",
		Snippet: "To send an HTTP GET request using Go, call the http.Get() method and pass the target URL."},
}

func golangServer(t *testing.T) *engineServer {
	return ddgServer(t, map[string]answer{
		"golang http client":      htmlAnswer(t, 200, "ddg-results.html"),
		"golang http client s=12": htmlAnswer(t, 200, "ddg-results-2.html"),
	})
}

// TestDuckDuckGoResults reads every result of a results page: wrappers
// unwrapped (absolute and relative, an escaped query string kept whole),
// entities decoded, tags dropped, white space normalised; the request is
// the search form's POST of q.
func TestDuckDuckGoResults(t *testing.T) {
	ddg := golangServer(t)
	s := newSearcher(t, ddg, nil)
	reply, err := s.Search(context.Background(), protocol.SearchRequest{Query: "  golang http client ", Limit: 12})
	if err != nil {
		t.Fatal(err)
	}
	if !reply.OK || reply.Engine != protocol.EngineDuckDuckGo || reply.Query != "golang http client" {
		t.Errorf("reply ok %v engine %q query %q", reply.OK, reply.Engine, reply.Query)
	}
	checkResults(t, reply.Results, golangResults)
	reqs := ddg.got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1 (12 results are on the first page)", len(reqs))
	}
	if r := reqs[0]; r.method != "POST" || r.path != "/html/" || r.form.Get("q") != "golang http client" || r.form.Has("kl") {
		t.Errorf("request %s %s %v, want POST /html/ q=golang http client, no kl", r.method, r.path, r.form)
	}
}

// TestDuckDuckGoLimit: a limit below a page's results answers the first
// ones and reads no further page; a limit above posts the page's Next
// form (its hidden fields) and stops at the last page, each URL once.
func TestDuckDuckGoLimit(t *testing.T) {
	t.Run("below a page", func(t *testing.T) {
		ddg := golangServer(t)
		reply, err := newSearcher(t, ddg, nil).Search(context.Background(), protocol.SearchRequest{Query: "golang http client", Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if want := urls(golangResults[:3]); !slices.Equal(urls(reply.Results), want) {
			t.Errorf("results %v, want %v", urls(reply.Results), want)
		}
		if n := len(ddg.got()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("past the first page", func(t *testing.T) {
		ddg := golangServer(t)
		reply, err := newSearcher(t, ddg, nil).Search(context.Background(), protocol.SearchRequest{Query: "golang http client", Limit: 15})
		if err != nil {
			t.Fatal(err)
		}
		want := append(urls(golangResults), // page 2 repeats pkg.go.dev/net/http: once is enough
			"https://www.alexedwards.example/posts/how-to-use-http-client",
			"https://go.dev/src/net/http/client.go",
			"https://github.com/hashicorp/go-retryablehttp")
		if !slices.Equal(urls(reply.Results), want) {
			t.Errorf("results\n %v\nwant\n %v", urls(reply.Results), want)
		}
		reqs := ddg.got()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		next := reqs[1].form
		if next.Get("s") != "12" || next.Get("dc") != "13" || next.Get("vqd") != "4-215307425378713526097816245640153329311" || next.Get("kl") != "wt-wt" {
			t.Errorf("second request %v, want the first page's Next form", next)
		}
	})
	t.Run("a later page fails", func(t *testing.T) {
		ddg := ddgServer(t, map[string]answer{
			"golang http client":      htmlAnswer(t, 200, "ddg-results.html"),
			"golang http client s=12": htmlAnswer(t, 202, "ddg-challenge.html"),
		})
		reply, err := newSearcher(t, ddg, nil).Search(context.Background(), protocol.SearchRequest{Query: "golang http client", Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(urls(reply.Results), urls(golangResults)) || len(ddg.got()) != 2 {
			t.Errorf("results %v after %d requests, want the first page's 12 after 2", urls(reply.Results), len(ddg.got()))
		}
	})
	t.Run("the last page", func(t *testing.T) {
		ddg := golangServer(t)
		reply, err := newSearcher(t, ddg, nil).Search(context.Background(), protocol.SearchRequest{Query: "golang http client", Limit: protocol.MaxSearchLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(reply.Results) != 17 {
			t.Errorf("%d results, want the 17 distinct ones of both pages", len(reply.Results))
		}
		if n := len(ddg.got()); n != 2 {
			t.Errorf("%d requests, want 2 (page 2 has no Next, only Previous)", n)
		}
	})
}

// TestDuckDuckGoNoResults: DuckDuckGo's "No results." page is an empty
// answer, not an error; so is the lite layout's notice (that one written
// from memory of the lite page, not from a saved one: its results table
// holding the notice alone).
func TestDuckDuckGoNoResults(t *testing.T) {
	lite := string(fixture(t, "ddg-lite.html"))
	start, end := strings.Index(lite, "<table border=\"0\">"), strings.LastIndex(lite, "</table>")
	if start < 0 || end < 0 {
		t.Fatal("the lite fixture changed: its results table is not where it was")
	}
	liteNone := lite[:start] + "<table border=\"0\">\n<tr><td>&nbsp;&nbsp;&nbsp;</td><td>No results.</td></tr>\n" + lite[end:]
	for _, tc := range []struct {
		name   string
		answer answer
	}{
		{"html", htmlAnswer(t, 200, "ddg-no-results.html")},
		{"lite", answer{200, "text/html", []byte(liteNone)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ddg := ddgServer(t, map[string]answer{"zqxjv flurbomatic 7781 qq": tc.answer})
			reply, err := newSearcher(t, ddg, nil).Search(context.Background(), protocol.SearchRequest{Query: "zqxjv flurbomatic 7781 qq"})
			if err != nil {
				t.Fatal(err)
			}
			if !reply.OK || reply.Results == nil || len(reply.Results) != 0 {
				t.Errorf("reply %+v, want ok with results []", reply)
			}
		})
	}
}

// TestDuckDuckGoResultQuotingTheChallenge: a result whose snippet quotes
// the challenge's words is a result, not a challenge.
func TestDuckDuckGoResultQuotingTheChallenge(t *testing.T) {
	page := string(fixture(t, "ddg-results.html"))
	quoting := strings.Replace(page, "Package httptest provides utilities for <b>HTTP</b> testing.",
		"&quot;Unfortunately, bots use DuckDuckGo too.&quot; Why the <b>HTTP</b> client got a captcha.", 1)
	if quoting == page {
		t.Fatal("the fixture changed: the httptest snippet is not there")
	}
	ddg := ddgServer(t, map[string]answer{"golang http client": {200, "text/html", []byte(quoting)}})
	reply, err := newSearcher(t, ddg, nil).Search(context.Background(), protocol.SearchRequest{Query: "golang http client", Limit: 12})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Results) != 12 || !strings.HasPrefix(reply.Results[10].Snippet, `"Unfortunately, bots use DuckDuckGo too."`) {
		t.Errorf("%d results, the 11th %+v; want 12, the 11th quoting the challenge", len(reply.Results), reply.Results[10:])
	}
}

// TestQuote: a long title is cut at a character's start.
func TestQuote(t *testing.T) {
	long := strings.Repeat("a", 119) + "ü" + strings.Repeat("b", 10) // ü is bytes 119 and 120
	if got, want := quote(long), `"`+strings.Repeat("a", 119)+`…"`; got != want {
		t.Errorf("quote = %q, want %q", got, want)
	}
	if got := quote("short"); got != `"short"` {
		t.Errorf("quote = %q", got)
	}
}

// TestDuckDuckGoAds: ads (result--ad blocks, y.js links) and the engine's
// own links (its shopping page, a related search) are not results.
func TestDuckDuckGoAds(t *testing.T) {
	ddg := ddgServer(t, map[string]answer{"running shoes": htmlAnswer(t, 200, "ddg-ads.html")})
	reply, err := newSearcher(t, ddg, nil).Search(context.Background(), protocol.SearchRequest{Query: "running shoes"})
	if err != nil {
		t.Fatal(err)
	}
	want := []protocol.SearchResult{
		{Title: "The 12 Best Running Shoes of 2026, Tested by Editors", URL: "https://www.runnersworld.example/gear/a19663621/best-running-shoes/",
			Snippet: "Our testers logged thousands of miles to find the best running shoes for every kind of runner."},
		{Title: "Running shoe - Wikipedia", URL: "https://en.wikipedia.org/wiki/Running_shoe",
			Snippet: "A running shoe is a shoe designed primarily for running. Modern designs date from the 1970s."},
		{Title: "Which daily trainer should I buy? : r/running", URL: "https://www.reddit.example/r/running/comments/1b2c3d/which_daily_trainer/",
			Snippet: "I'm looking for a daily trainer for ~40 km a week. Budget ~120 €."},
	}
	checkResults(t, reply.Results, want)
}

// TestDuckDuckGoAdsByMarkup: an ad is left out by its block's markup
// (result--ad, the lite layout's result-sponsored rows) even when its link
// is not DuckDuckGo's y.js but the advertiser's own.
func TestDuckDuckGoAdsByMarkup(t *testing.T) {
	yjs := regexp.MustCompile(`https://duckduckgo\.com/y\.js\?[^"]*`)
	for _, tc := range []struct {
		fixture, query, ddgPath string
		organic                 int
	}{
		{"ddg-ads.html", "running shoes", "/html/", 3},
		{"ddg-lite.html", "lisbon", "/lite/", 4},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			page := fixture(t, tc.fixture)
			direct := yjs.ReplaceAll(page, []byte("https://advertiser.example/landing"))
			if bytes.Equal(direct, page) {
				t.Fatal("the fixture has no y.js ad links")
			}
			ddg := ddgServer(t, map[string]answer{tc.query: {200, "text/html", direct}})
			s, err := New(Options{Fetch: httpFetch, DuckDuckGoURL: ddg.URL + tc.ddgPath})
			if err != nil {
				t.Fatal(err)
			}
			reply, err := s.Search(context.Background(), protocol.SearchRequest{Query: tc.query})
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(urls(reply.Results), "https://advertiser.example/landing") || len(reply.Results) != tc.organic {
				t.Errorf("results %v, want the %d organic ones and no ad", urls(reply.Results), tc.organic)
			}
		})
	}
}

// TestDuckDuckGoLiteLayout reads the lite endpoint's table: single-quoted
// classes, sponsored rows left out, wrappers unwrapped, each title with
// its snippet row; the region goes as kl.
func TestDuckDuckGoLiteLayout(t *testing.T) {
	ddg := ddgServer(t, map[string]answer{"lisbon": htmlAnswer(t, 200, "ddg-lite.html")})
	s, err := New(Options{Fetch: httpFetch, DuckDuckGoURL: ddg.URL + "/lite/"})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := s.Search(context.Background(), protocol.SearchRequest{Query: "lisbon", Region: "PT-pt"})
	if err != nil {
		t.Fatal(err)
	}
	want := []protocol.SearchResult{
		{Title: "Lisbon - Wikipedia", URL: "https://en.wikipedia.org/wiki/Lisbon",
			Snippet: "Lisbon is the capital and largest city of Portugal, with an estimated population of 567,131 as of 2023."},
		{Title: "Visit Lisboa | Official Tourism Website", URL: "https://www.visitlisboa.example/en/",
			Snippet: "Plan your trip to Lisbon: things to do, where to eat & sleep, and the Lisboa Card."},
		{Title: "Must-see attractions in Lisbon, Portugal - Lonely Planet", URL: "https://www.lonelyplanet.example/portugal/lisbon/attractions?sort=top&page=1",
			Snippet: "Discover the best attractions in Lisbon including Mosteiro dos Jerónimos, Torre de Belém and Castelo de São Jorge."},
		{Title: "Lisbon in 3 Days: The Perfect Itinerary", URL: "https://travel.example.com/lisbon-in-3-days",
			Snippet: "Three days is just enough for the highlights: Alfama, Belém and a day trip to Sintra."},
	}
	checkResults(t, reply.Results, want)
	reqs := ddg.got()
	if reqs[0].path != "/lite/" || reqs[0].form.Get("kl") != "pt-pt" {
		t.Errorf("first request %s %v, want /lite/ with kl=pt-pt", reqs[0].path, reqs[0].form)
	}
	if len(reqs) != 2 || reqs[1].form.Get("s") != "9" || reqs[1].form.Get("vqd") == "" {
		t.Errorf("requests %v, want a second one posting the lite page's Next form", reqs)
	}
}

// TestDuckDuckGoNotResults: what is not a results page is search_failed
// saying which: the bot challenge (as DuckDuckGo serves it, 202, and
// also with 200), an HTTP error, a page that is none of DuckDuckGo's, and
// a DuckDuckGo page whose results are in a layout this parser does not
// know.
func TestDuckDuckGoNotResults(t *testing.T) {
	noResults := string(fixture(t, "ddg-no-results.html"))
	unknownLayout := strings.NewReplacer(
		`<div class="result results_links_deep result--no-result">`, `<section data-testid="mainline">`,
		`<div class="no-results">No  results.</div>`, `<article data-testid="result"><h2><a href="https://example.com/">Example</a></h2></article>`,
	).Replace(noResults)
	if strings.Contains(unknownLayout, "no-result") {
		t.Fatal("the no-results fixture changed: its notice is not there")
	}
	challenge := string(fixture(t, "ddg-challenge.html"))
	renamed := strings.NewReplacer("anomaly-modal", "puzzle", "challenge-form", "verify-form").Replace(challenge)
	if !strings.Contains(renamed, "bots use DuckDuckGo too") || strings.Contains(renamed, "anomaly-modal") {
		t.Fatal("the challenge fixture changed")
	}
	for _, tc := range []struct {
		name   string
		answer answer
		want   []string
	}{
		{"challenge with its markup renamed", answer{202, "text/html", []byte(renamed)}, []string{"bot challenge", "HTTP 202"}},
		{"challenge 202", htmlAnswer(t, 202, "ddg-challenge.html"), []string{"bot challenge", "HTTP 202"}},
		{"challenge 200", htmlAnswer(t, 200, "ddg-challenge.html"), []string{"bot challenge", "HTTP 200"}},
		{"HTTP 503", answer{503, "text/html", []byte("<html><head><title>503 Service Temporarily Unavailable</title></head><body>nginx</body></html>")},
			[]string{"HTTP 503", `"503 Service Temporarily Unavailable"`}},
		{"HTTP 403", answer{403, "text/plain", []byte("Forbidden")}, []string{"HTTP 403"}},
		{"not DuckDuckGo's", htmlAnswer(t, 200, "not-results.html"), []string{"not DuckDuckGo's results page", `"Network Login - Hotel Guest Wi-Fi"`}},
		{"unknown layout", answer{200, "text/html", []byte(unknownLayout)}, []string{"layout may have changed"}},
		{"empty body", answer{200, "text/html", nil}, []string{"not DuckDuckGo's results page"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ddg := ddgServer(t, map[string]answer{"weather berlin tomorrow": tc.answer})
			_, err := newSearcher(t, ddg, nil).Search(context.Background(), protocol.SearchRequest{Query: "weather berlin tomorrow"})
			msg := wantCode(t, err, protocol.CodeSearchFailed)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
		})
	}
}

// TestResultURL: the wrapper forms, ads and the engine's own links.
func TestResultURL(t *testing.T) {
	for _, tc := range []struct {
		href, want string
	}{
		{"//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2Fa%3Fb%3D1%26c%3D2&rut=abc", "https://example.com/a?b=1&c=2"},
		{"/l/?uddg=https%3A%2F%2Fexample.com%2F&rut=abc", "https://example.com/"},
		{"https://duckduckgo.com/l/?kh=-1&uddg=http%3A%2F%2Fexample.org%2Fx", "http://example.org/x"},
		{"https://example.com/page", "https://example.com/page"},
		{"  https://example.com/spaced  ", "https://example.com/spaced"},
		{"https://duckduckgo.com/y.js?ad_domain=ads.example&ad_provider=bingv7aa&u3=https%3A%2F%2Fwww.bing.com%2Faclick", ""},
		{"https://duckduckgo.com/?q=shoes&ia=shopping", ""},
		{"/html/?q=related", ""},
		{"//duckduckgo.com/feedback.html", ""},
		{"https://help.duckduckgo.com/privacy", ""},
		{"//duckduckgo.com/l/?uddg=https%3A%2F%2Fduckduckgo.com%2F%3Fq%3Dx", ""}, // a wrapper around the engine itself
		{"//duckduckgo.com/l/?uddg=javascript%3Aalert(1)", ""},
		{"javascript:alert(1)", ""},
		{"mailto:someone@example.com", ""},
		{"", ""},
	} {
		got, ok := resultURL(tc.href)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("resultURL(%q) = %q, %v; want %q", tc.href, got, ok, tc.want)
		}
	}
}
