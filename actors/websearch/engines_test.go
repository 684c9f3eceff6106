package websearch

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// The tests' engines are loopback servers serving the fixtures under
// testdata/search (pages in DuckDuckGo's and Google's real formats), and
// their fetch is a small real HTTP client over net/http.

// httpFetch makes one real HTTP request, as the http resource does, with
// its codes: timeout at the deadline, fetch_failed when no HTTP answer
// came.
func httpFetch(ctx context.Context, req protocol.FetchRequest) (protocol.FetchReply, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout.Std())
		defer cancel()
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	hreq, err := http.NewRequestWithContext(ctx, method, req.URL, strings.NewReader(req.Body))
	if err != nil {
		return protocol.FetchReply{}, protocol.Errorf(protocol.CodeBadRequest, "url: %v", err)
	}
	for k, v := range req.Headers {
		hreq.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return protocol.FetchReply{}, protocol.Errorf(protocol.CodeTimeout, "fetch %s: no answer in time: %w", req.URL, err)
		}
		return protocol.FetchReply{}, protocol.Errorf(protocol.CodeFetchFailed, "fetch %s: %w", req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return protocol.FetchReply{}, protocol.Errorf(protocol.CodeFetchFailed, "fetch %s: reading the body: %w", req.URL, err)
	}
	return protocol.FetchReply{
		OK: true, Status: resp.StatusCode, StatusText: http.StatusText(resp.StatusCode), Headers: resp.Header,
		URL: resp.Request.URL.String(), Body: string(body), Encoding: "text", Bytes: int64(len(body)),
	}, nil
}

// allowOnly is a whitelist in front of fetch: a request to any other host
// is permission_denied and is not sent.
func allowOnly(host string, fetch FetchFunc) FetchFunc {
	return func(ctx context.Context, req protocol.FetchRequest) (protocol.FetchReply, error) {
		u, err := url.Parse(req.URL)
		if err != nil || u.Hostname() != host {
			return protocol.FetchReply{}, protocol.Errorf(protocol.CodePermissionDenied, "domain %s is not on the whitelist", u.Hostname())
		}
		return fetch(ctx, req)
	}
}

// fixture is a file under testdata/search.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "search", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// answer is what an engine server answers to one request.
type answer struct {
	status      int
	contentType string
	body        []byte
}

func htmlAnswer(t testing.TB, status int, name string) answer {
	return answer{status: status, contentType: "text/html; charset=UTF-8", body: fixture(t, name)}
}

func jsonAnswer(t testing.TB, status int, name string) answer {
	return answer{status: status, contentType: "application/json; charset=UTF-8", body: fixture(t, name)}
}

// engineServer is a loopback search engine: route picks the answer for a
// request's form (DuckDuckGo's POST) or query (Google's GET); it records
// every request.
type engineServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
}

type recorded struct {
	method, path string
	form         url.Values
}

func newEngineServer(t *testing.T, route func(r recorded) answer) *engineServer {
	t.Helper()
	es := &engineServer{}
	es.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec := recorded{method: r.Method, path: r.URL.Path, form: r.Form}
		es.mu.Lock()
		es.requests = append(es.requests, rec)
		es.mu.Unlock()
		a := route(rec)
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(a.status)
		w.Write(a.body)
	}))
	t.Cleanup(es.Close)
	return es
}

func (es *engineServer) got() []recorded {
	es.mu.Lock()
	defer es.mu.Unlock()
	return append([]recorded(nil), es.requests...)
}

// byQuery answers a request by its q and, past the first page, its
// pageParam (q, or "q s=12"); else otherwise.
func byQuery(pages map[string]answer, pageParam string, otherwise answer) func(recorded) answer {
	return func(r recorded) answer {
		key := r.form.Get("q")
		if p := r.form.Get(pageParam); p != "" {
			key += " " + pageParam + "=" + p
		}
		if a, ok := pages[key]; ok {
			return a
		}
		return otherwise
	}
}

// ddgServer serves DuckDuckGo's pages: first by the query q, later pages
// (a posted Next form) by q and its s; anything else is the no-results
// page, as DuckDuckGo answers past the last page.
func ddgServer(t *testing.T, pages map[string]answer) *engineServer {
	return newEngineServer(t, byQuery(pages, "s", htmlAnswer(t, 200, "ddg-no-results.html")))
}

const (
	testGoogleKey = "AIzaSyTEST-key-0123456789abcdefghijklm"
	testGoogleCX  = "017576662512468239146:omuauf_lfve"
)

// googleServer serves the Custom Search JSON API: by q and start, after
// checking the key and cx like the API (a wrong key is keyInvalid).
func googleServer(t *testing.T, pages map[string]answer) *engineServer {
	route := byQuery(pages, "start", jsonAnswer(t, 200, "google-no-results.json"))
	return newEngineServer(t, func(r recorded) answer {
		if r.form.Get("key") != testGoogleKey || r.form.Get("cx") != testGoogleCX {
			return jsonAnswer(t, 400, "google-key-invalid.json")
		}
		return route(r)
	})
}

// newSearcher is a Searcher whose engines are the given servers (nil: the
// default URL, which no test reaches).
func newSearcher(t *testing.T, ddg, google *engineServer) *Searcher {
	t.Helper()
	o := Options{Fetch: httpFetch, GoogleKey: testGoogleKey, GoogleCX: testGoogleCX}
	if ddg != nil {
		o.DuckDuckGoURL = ddg.URL + "/html/"
	}
	if google != nil {
		o.GoogleURL = google.URL + "/customsearch/v1"
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantCode fails t unless err is a *protocol.Error with code, and returns
// its message.
func wantCode(t *testing.T, err error, code protocol.Code) string {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	if got := protocol.CodeOf(err); got != code {
		t.Fatalf("code %s (%v), want %s", got, err, code)
	}
	return err.Error()
}

// checkResults fails t, result by result, unless got is want.
func checkResults(t *testing.T, got, want []protocol.SearchResult) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w protocol.SearchResult
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func urls(results []protocol.SearchResult) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.URL)
	}
	return out
}
