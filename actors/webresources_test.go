package actors

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framebus/framebus/actors/whitelist"
	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
)

// The http and search resources of a node with a whitelist, on the bus
// and in a plan: an agent fetches a page and searches (the engine a
// loopback server answering in DuckDuckGo's format); a plan searches,
// then navigates to the first result and reads it; a fetch of a host the
// whitelist denies is permission_denied and reaches nothing; an observer
// may use neither resource; bad input is bad_request naming the field.
func TestResourcesOnTheBusAndInPlans(t *testing.T) {
	t.Parallel() // its own node and servers
	page := site("/read.html")
	results, err := os.ReadFile("../testdata/search/ddg-results.html")
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's first result, pointed at the test site.
	results = []byte(strings.ReplaceAll(string(results), url.QueryEscape("https://pkg.go.dev/net/http"), url.QueryEscape(page)))
	var searches atomic.Int64
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		searches.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(results)
	}))
	defer engine.Close()
	var denied atomic.Int64
	elsewhere := serveOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { denied.Add(1) }))

	wl, err := whitelist.New([]string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbweb", Whitelist: wl, Search: SearchOptions{DuckDuckGoURL: engine.URL + "/html/"}})
	agent := newBusClient(t, node)
	subj := node.Subjects()

	var fetched protocol.FetchReply
	agent.ask(subj.HTTPFetch(), protocol.FetchRequest{URL: page}, &fetched)
	if !fetched.OK || fetched.Status != 200 || !strings.Contains(fetched.Body, "<h1") || fetched.Encoding != "text" {
		t.Fatalf("fetch %s on the bus: %+v", page, fetched)
	}
	var found protocol.SearchReply
	agent.ask(subj.SearchQuery(), protocol.SearchRequest{Query: "go http client", Limit: 3}, &found)
	if !found.OK || len(found.Results) != 3 || found.Results[0].URL != page {
		t.Fatalf("search on the bus: %+v", found)
	}

	tab := node.Tabs()[0].Tab
	res := agent.plan(subj, tab, protocol.Plan{Actions: []protocol.Action{
		{Type: "search", Query: "go http client", Limit: 1},
		{Type: "navigate", Use: map[string]string{"url": "0.results.0.url"}, Wait: true},
		{Type: "url"},
	}})
	if !res.OK || res.Results[1].URL != page || res.Results[1].Sequence != 2 || res.Results[0].Sequence != 0 {
		t.Fatalf("a plan that searches, then opens the first result: %+v", res)
	}
	var there string
	if json.Unmarshal(res.Results[2].Value, &there) != nil || there != page {
		t.Fatalf("the tab after the plan is at %s", res.Results[2].Value)
	}

	var reply protocol.ErrorReply
	agent.ask(subj.HTTPFetch(), protocol.FetchRequest{URL: "http://" + elsewhere.Listener.Addr().String() + "/"}, &reply)
	if reply.OK || reply.Code != protocol.CodePermissionDenied || !strings.Contains(reply.Error, "127.0.0.2") || denied.Load() != 0 {
		t.Fatalf("a fetch of a host the whitelist denies: %+v, %d requests reached it", reply, denied.Load())
	}
	agent.ask(subj.HTTPFetch(), map[string]any{"url": page, "method": "BREW"}, &reply)
	if reply.OK || reply.Code != protocol.CodeBadRequest || !strings.Contains(reply.Error, "fetch.method") {
		t.Fatalf("a fetch with a bad method: %+v", reply)
	}
	agent.ask(subj.SearchQuery(), map[string]any{"query": "q", "limit": 0.5}, &reply)
	if reply.OK || reply.Code != protocol.CodeBadRequest || !strings.Contains(reply.Error, "search.limit") {
		t.Fatalf("a search with a bad limit: %+v", reply)
	}

	before := searches.Load()
	connect := func(role string) *busclient.Client {
		creds := bustest.AddUser(t, node.Bus(), role)
		c, err := busclient.Connect(t.Context(), busclient.Options{Credentials: &creds, Prefix: subj.Prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	// The Go client's fetch takes the body outside the JSON (the control:
	// an agent's goes through).
	goClient := connect(protocol.RoleAgent)
	if got, err := goClient.Fetch(t.Context(), protocol.FetchRequest{URL: page}); err != nil || got.Body != fetched.Body || got.Status != 200 || got.Encoding != "text" {
		t.Fatalf("the Go client's fetch: %+v %v", got, err)
	}
	// A binary body comes as its bytes and is given as base64, as the
	// JSON reply gives it.
	blob := make([]byte, 70_000)
	for i := range blob {
		blob[i] = byte(i * 131)
	}
	binary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(blob)
	}))
	defer binary.Close()
	var binaryJSON protocol.FetchReply
	agent.ask(subj.HTTPFetch(), protocol.FetchRequest{URL: binary.URL}, &binaryJSON)
	got, err := goClient.Fetch(t.Context(), protocol.FetchRequest{URL: binary.URL})
	if err != nil || got.Encoding != "base64" || got.Body != binaryJSON.Body || got.Body != base64.StdEncoding.EncodeToString(blob) {
		t.Fatalf("the Go client's fetch of a binary body: %v, encoding %s, %d characters of body, the same as the JSON reply's: %v",
			err, got.Encoding, len(got.Body), got.Body == binaryJSON.Body)
	}
	// Fetches at once, each of its own body (read into buffers the node
	// reuses), each get theirs: with and without a length, text and
	// binary, of other sizes.
	bodies := map[string]string{
		"/chunked": strings.Repeat("<p>chunked, no length</p>\n", 4000),
		"/length":  strings.Repeat("<p>with a length</p>\n", 2500),
		"/binary":  string(blob[:50_000]),
	}
	several := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/binary" {
			w.Header().Set("Content-Type", "application/octet-stream")
		} else {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}
		if r.URL.Path == "/length" {
			w.Header().Set("Content-Length", strconv.Itoa(len(bodies[r.URL.Path])))
		}
		io.WriteString(w, bodies[r.URL.Path])
	}))
	defer several.Close()
	var wrong atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 { // each fetch after its first may take a buffer another's body was in
		wg.Go(func() {
			for i := range 8 {
				path := []string{"/chunked", "/length", "/binary"}[(w+i)%3]
				got, err := goClient.Fetch(t.Context(), protocol.FetchRequest{URL: several.URL + path})
				want := bodies[path]
				if got.Encoding == "base64" {
					want = base64.StdEncoding.EncodeToString([]byte(want))
				}
				if err != nil || got.Body != want {
					wrong.Add(1)
					t.Errorf("%s: %v, %d characters of body, want %d, equal %v", path, err, len(got.Body), len(want), got.Body == want)
				}
			}
		})
	}
	wg.Wait()
	if wrong.Load() > 0 {
		t.Fatalf("%d of 64 fetches, 8 at once, got a body not theirs", wrong.Load())
	}
	observer := connect(protocol.RoleObserver)
	if _, err := observer.Fetch(t.Context(), protocol.FetchRequest{URL: page}); protocol.CodeOf(err) != protocol.CodePermissionDenied {
		t.Errorf("an observer's fetch: %v; want permission_denied", err)
	}
	if _, err := observer.Search(t.Context(), protocol.SearchRequest{Query: "q"}); protocol.CodeOf(err) != protocol.CodePermissionDenied {
		t.Errorf("an observer's search: %v; want permission_denied", err)
	}
	if searches.Load() != before {
		t.Errorf("an observer's search reached the engine")
	}
}

// One caller cannot leave another's fetch unanswered: with every one of
// the node's fetch slots held by fetches to a server that never answers,
// another fetch waits for its turn until its own timeout and is then
// answered timeout, saying why, instead of nothing; once the slots free,
// fetches run again.
func TestFetchSlotsHeldByAServerThatNeverAnswers(t *testing.T) {
	t.Parallel() // its own node and server
	hold := make(chan struct{})
	var held atomic.Int64
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held.Add(1)
		<-hold
	}))
	defer stuck.Close()
	released := sync.OnceFunc(func() { close(hold) })
	defer released()
	node := startTestNode(t, NodeOptions{Prefix: "fbslots"})
	creds := bustest.AddUser(t, node.Bus(), protocol.RoleAgent)
	agent, err := busclient.Connect(t.Context(), busclient.Options{Credentials: &creds, Prefix: node.Subjects().Prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	var hogs sync.WaitGroup
	for range resourcesAtOnce {
		hogs.Go(func() {
			agent.Fetch(context.Background(), protocol.FetchRequest{URL: stuck.URL, Timeout: protocol.Duration(time.Minute)})
		})
	}
	waitUntil(t, func() bool { return held.Load() == resourcesAtOnce })
	_, err = agent.Fetch(t.Context(), protocol.FetchRequest{URL: site("/read.html"), Timeout: protocol.Duration(time.Second)})
	if protocol.CodeOf(err) != protocol.CodeTimeout || !strings.Contains(err.Error(), "waited for one of the node's 64 fetch slots") {
		t.Fatalf("a fetch while every slot is held: %v; want timeout, saying it waited for a slot", err)
	}
	released()
	hogs.Wait()
	if got, err := agent.Fetch(t.Context(), protocol.FetchRequest{URL: site("/read.html")}); err != nil || got.Status != 200 {
		t.Fatalf("a fetch once the slots are free: %+v %v", got, err)
	}
}
