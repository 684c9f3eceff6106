package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

// Plans with fetch and search: decoded with the actions' rules, values
// taken from earlier actions with use, and every bad input a bad_request
// that names the field.
func TestWebActionsInPlans(t *testing.T) {
	p, err := DecodePlan([]byte(`{"actions":[
		{"type":"search","query":"framebus nats","limit":3,"engine":"duckduckgo"},
		{"type":"navigate","use":{"url":"0.results.0.url"}},
		{"type":"fetch","url":"http://127.0.0.1/x","method":"POST","headers":{"X-One":"1"},"body":"hi","readable":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	search, nav, fetch := p.Actions[0], p.Actions[1], p.Actions[2]
	if got := search.SearchRequest(); got.Query != "framebus nats" || got.Limit != 3 || got.Engine != EngineDuckDuckGo {
		t.Errorf("search request: %+v", got)
	}
	if got := fetch.FetchRequest(); got.Method != "POST" || got.Headers["X-One"] != "1" || got.Body != "hi" || !got.Readable {
		t.Errorf("fetch request: %+v", got)
	}
	value, _ := json.Marshal(SearchReply{OK: true, Results: []SearchResult{{Title: "one", URL: "http://127.0.0.1/one"}}})
	results := []ActionResult{{Index: 0, Type: "search", OK: true, Value: value}}
	if err := ResolveUse(&nav, results); err != nil || nav.URL != "http://127.0.0.1/one" || nav.Use != nil {
		t.Fatalf("navigate to the first result: %+v %v", nav, err)
	}

	empty, _ := json.Marshal(SearchReply{OK: true, Results: []SearchResult{}})
	nav = p.Actions[1]
	err = ResolveUse(&nav, []ActionResult{{Value: empty}})
	if CodeOf(err) != CodeBadRequest || !strings.Contains(err.Error(), "navigate.use.url") || !strings.Contains(err.Error(), "results has 0 items") {
		t.Errorf("a search with no results, then its first result: %v", err)
	}

	for _, tc := range []struct{ plan, want string }{
		{`{"action":{"type":"fetch"}}`, "action.url: missing"},
		{`{"action":{"type":"fetch","url":"http://x","method":"BREW"}}`, `action.method: "BREW" is not one of GET`},
		{`{"action":{"type":"fetch","url":"http://x","headers":{"Bad Name":"v"}}}`, `"Bad Name" is not a header name`},
		{`{"action":{"type":"fetch","url":"http://x","headers":{"X":"a\r\nb"}}}`, "fetch.headers.X: the value has a line break"},
		{`{"action":{"type":"fetch","url":"http://x","headers":["X: 1"]}}`, "action.headers: must be an object"},
		{`{"action":{"type":"fetch","url":"http://x","noRedirects":true,"maxRedirects":2}}`, "cannot be combined"},
		{`{"action":{"type":"search"}}`, "action.query: missing"},
		{`{"action":{"type":"search","query":"q","timeout":"1h"}}`, "search.timeout: 1h0m0s is more than 5m0s"},
		{`{"action":{"type":"fetch","url":"http://x","timeout":"6m"}}`, "fetch.timeout: 6m0s is more than 5m0s"},
		{`{"action":{"type":"search","query":"q","limit":51}}`, "search.limit: 51 is more than 50"},
		{`{"action":{"type":"search","query":"q","limit":-1}}`, "action.limit: -1 is out of range"},
		{`{"action":{"type":"search","query":"q","limit":0}}`, "action.limit: 0 is out of range (1 to"},
		{`{"action":{"type":"search","query":"q","engine":"bing"}}`, `action.engine: "bing" is not one of duckduckgo, google`},
		{`{"action":{"type":"navigate","use":{"url":"0.results.0.url"}}}`, "the first action of a plan has none before it"},
		{`{"actions":[{"type":"search","query":"q"},{"type":"navigate","use":{"url":"1.x"}}]}`, `actions[1].use.url: "1.x" names action 1`},
		{`{"actions":[{"type":"search","query":"q"},{"type":"navigate","use":{"url":"first"}}]}`, `actions[1].use.url: "first" is not`},
		{`{"actions":[{"type":"search","query":"q"},{"type":"navigate","url":"http://x","use":{"url":"0.results.0.url"}}]}`, "url is given, and taken from an earlier action too"},
		{`{"actions":[{"type":"search","query":"q"},{"type":"click","use":{"double":"0.x"}}]}`, "only text and integer parameters"},
		{`{"actions":[{"type":"search","query":"q"},{"type":"click","use":{"nope":"0.x"}}]}`, `click does not take "nope"`},
		{`{"actions":[{"type":"search","query":"q"},{"type":"navigate","use":"0.results"}]}`, "use: must be an object"},
	} {
		_, err := DecodePlan([]byte(tc.plan))
		if CodeOf(err) != CodeBadRequest || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want bad_request with %q", tc.plan, err, tc.want)
		}
	}
}

// A request to the http or search resource is the action's parameters:
// the same rules, and plan-only fields refused.
func TestDecodeResourceRequests(t *testing.T) {
	req, err := DecodeFetchRequest([]byte(`{"url":"https://example.com/","method":"post","headers":{"Accept":"text/html"},"timeout":"2s"}`))
	if err != nil || req.URL != "https://example.com/" || req.Method != "POST" || req.Headers["Accept"] != "text/html" || req.Timeout.Std().Seconds() != 2 {
		t.Fatalf("fetch request: %+v %v", req, err)
	}
	sreq, err := DecodeSearchRequest([]byte(`{"query":"nats","limit":5,"site":"nats.io"}`))
	if err != nil || sreq.Query != "nats" || sreq.Limit != 5 || sreq.Site != "nats.io" {
		t.Fatalf("search request: %+v %v", sreq, err)
	}
	for _, tc := range []struct {
		decode func([]byte) error
		data   string
		want   string
	}{
		{fetchErr, `{}`, "fetch.url: missing"},
		{fetchErr, `{"url":"http://x","type":"fetch"}`, "fetch.type: not a field of a request to the http resource"},
		{fetchErr, `{"url":"http://x","basedOnSequence":1}`, "fetch.basedOnSequence: not a field"},
		{fetchErr, `{"url":"http://x","color":"red"}`, `fetch does not take "color"`},
		{fetchErr, `not json`, "fetch: expected a JSON object"},
		{searchErr, `{"query":""}`, "search.query: missing"},
		{searchErr, `{"query":"q","limit":0.5}`, "search.limit: must be an integer"},
	} {
		if err := tc.decode([]byte(tc.data)); CodeOf(err) != CodeBadRequest || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want bad_request with %q", tc.data, err, tc.want)
		}
	}
}

func fetchErr(data []byte) error  { _, err := DecodeFetchRequest(data); return err }
func searchErr(data []byte) error { _, err := DecodeSearchRequest(data); return err }
