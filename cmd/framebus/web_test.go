package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// framebus fetch and search at the command line and in the REPL, and a
// plan that searches and then opens the first result, against a node
// whose search engine is a loopback server answering in DuckDuckGo's
// format: the request's method, headers and body reach the server, the
// results come back, and bad input is a usage error naming what is
// wrong, before anything is sent.
func TestFetchAndSearchCommands(t *testing.T) {
	var echoed int
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echoed++
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"method": r.Method, "one": r.Header.Get("X-One"), "body": string(body)})
	}))
	defer echo.Close()
	results, err := os.ReadFile("../../testdata/search/ddg-results.html")
	if err != nil {
		t.Fatal(err)
	}
	page := site("/search.html?q=found")
	results = []byte(strings.ReplaceAll(string(results), url.QueryEscape("https://pkg.go.dev/net/http"), url.QueryEscape(page)))
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(results)
	}))
	defer engine.Close()
	conf := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(conf, []byte("search:\n  duckduckgo:\n    url: "+engine.URL+"/html/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, envConfig+"="+conf)

	got := mustOK(t, n.env, "fetch", echo.URL+"/x", "-X", "POST", "-H", "X-One: 1", "-d", "hello")
	if got["status"] != 200.0 || got["encoding"] != "text" || got["body"] != `{"body":"hello","method":"POST","one":"1"}`+"\n" {
		t.Fatalf("fetch -X POST -H -d: %v", got)
	}
	found := mustOK(t, n.env, "search", "go", "http", "client", "--limit", "2")
	if list, _ := found["results"].([]any); len(list) != 2 || list[0].(map[string]any)["url"] != page || found["query"] != "go http client" {
		t.Fatalf("search --limit 2: %v", found)
	}

	before := echoed
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fetch"}, "fetch: missing <url>"},
		{[]string{"fetch", echo.URL, "-H", "no colon"}, `"no colon" is not 'Name: value'`},
		{[]string{"fetch", echo.URL, "-H", "Bad Name: v"}, `"Bad Name" is not a header name`},
		{[]string{"fetch", echo.URL, "-X", "BREW"}, `--method: "BREW" is not one of GET`},
		{[]string{"fetch", echo.URL, "--tab", n.tab()}, "unknown flag: --tab"},
		{[]string{"search", "q", "--limit", "51"}, "--limit: 51 is more than 50"},
		{[]string{"search", "q", "--based-on", "1"}, "unknown flag: --based-on"},
	} {
		r := framebus(t, n.env, "", tc.args...)
		if r.status != exitUsage || !strings.Contains(fmt.Sprint(r.reply(t)["error"]), tc.want) {
			t.Errorf("%q: exit %d, %s %s; want a usage error with %q", tc.args, r.status, r.stdout, r.stderr, tc.want)
		}
	}
	if echoed != before {
		t.Errorf("bad fetch commands reached the server %d times", echoed-before)
	}

	r := framebus(t, n.env, "search go --limit 1\nfetch "+echo.URL+"/y\n", "repl")
	lines := readLines(r.stdout)
	if r.status != 0 || len(lines) != 2 || !strings.Contains(lines[0], `"results":[{`) || !strings.Contains(lines[1], `"method\":\"GET\"`) {
		t.Fatalf("fetch and search in the REPL: exit %d\n%s", r.status, r.stdout)
	}

	plan := `{"actions":[{"type":"search","query":"go http client","limit":1},{"type":"navigate","use":{"url":"0.results.0.url"},"wait":true},{"type":"text","selector":"h1"}]}`
	r = framebus(t, n.env, plan, "plan")
	var res struct {
		OK      bool `json:"ok"`
		Results []struct {
			URL   string          `json:"url"`
			Value json.RawMessage `json:"value"`
		} `json:"results"`
	}
	if r.status != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || !res.OK || res.Results[1].URL != page {
		t.Fatalf("a plan that searches, then opens the first result: exit %d, %s", r.status, r.stdout)
	}
}
