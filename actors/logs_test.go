package actors

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// readConsole runs console and decodes its value.
func readConsole(t *testing.T, tab *Tab, a protocol.Action) consoleValue {
	t.Helper()
	a.Type = "console"
	var v consoleValue
	if err := json.Unmarshal(cmdRead(t, tab, a).Value, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// consoleUntil reads the console until it holds a message whose text
// contains want, failing after 10s.
func consoleUntil(t *testing.T, tab *Tab, a protocol.Action, want string) consoleValue {
	t.Helper()
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for {
		v := readConsole(t, tab, a)
		for _, m := range v.Messages {
			if strings.Contains(m.Text, want) {
				return v
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no console message with %q within 10s: %+v", want, v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func texts(msgs []cdpdriver.ConsoleMessage) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Level+" "+m.Text)
	}
	return out
}

// console answers the page's console messages and uncaught errors since
// its document loaded, rendered as DevTools does, with where they were
// logged; level keeps the more severe; clear forgets them; a new
// document starts afresh; and none of it makes a frame.
func TestConsoleMessages(t *testing.T) {
	tab, _, _ := tabAt(t, "/console.html")
	v := consoleUntil(t, tab, protocol.Action{}, "boom")
	want := []string{
		"debug debug message",
		"log hello 42 true null undefined Object Array(3)",
		"info info message",
		"warning warn message",
		"error error message",
		"log Ann is 7 years",
	}
	var console []cdpdriver.ConsoleMessage
	var exception *cdpdriver.ConsoleMessage
	for i, m := range v.Messages {
		switch m.Source {
		case "console":
			console = append(console, m)
		case "exception":
			exception = &v.Messages[i]
		}
	}
	if got := texts(console); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("console messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	first := console[0]
	if !strings.HasSuffix(first.URL, "/console.html") || first.Line != 8 || first.Column != 9 || first.Time.IsZero() {
		t.Errorf("where the first message was logged: %+v, want console.html line 8 column 9 and a time", first)
	}
	if exception == nil || exception.Level != "error" || !strings.HasPrefix(exception.Text, "Uncaught Error: boom") || exception.Line != 14 {
		t.Fatalf("the uncaught error: %+v", exception)
	}

	severe := readConsole(t, tab, protocol.Action{Level: "warning"})
	for _, m := range severe.Messages {
		if m.Level != "warning" && m.Level != "error" {
			t.Fatalf("level warning answered a %s message: %+v", m.Level, m)
		}
	}
	if got := texts(severe.Messages); !contains(got, "warning warn message") || !contains(got, "error error message") || contains(got, "info info message") {
		t.Fatalf("level warning: %v", got)
	}
	if got := readConsole(t, tab, protocol.Action{Level: "info"}); contains(texts(got.Messages), "debug debug message") || !contains(texts(got.Messages), "log Ann is 7 years") {
		t.Fatalf("level info: %v", texts(got.Messages))
	}

	readConsole(t, tab, protocol.Action{Clear: true})
	if v := readConsole(t, tab, protocol.Action{}); len(v.Messages) != 0 {
		t.Fatalf("after clear: %v", texts(v.Messages))
	}
	// The page works on after the console was read (Runtime is off again,
	// its objects released): a click logs.
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#more"})
	if v := readConsole(t, tab, protocol.Action{}); strings.Join(texts(v.Messages), "|") != "error clicked 1" {
		t.Fatalf("after a click: %v", texts(v.Messages))
	}
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html")})
	if v := readConsole(t, tab, protocol.Action{Level: "warning"}); len(v.Messages) != 0 {
		t.Fatalf("a new document's console holds the old one's: %v", texts(v.Messages))
	}
}

// A page logging in a loop: the browser keeps the last 1000 messages and
// the answer says it was full; limit answers the latest and counts the
// rest; a long message is cut at 10 KB and marked.
func TestConsoleBound(t *testing.T) {
	tab, _, _ := tabAt(t, "/console.html")
	cmdEval(t, tab, "document.getElementById('more').dataset.n = 5000, 1")
	cmdMutate(t, tab, protocol.Action{Type: "click", Selector: "#more"})
	v := readConsole(t, tab, protocol.Action{})
	last := v.Messages[len(v.Messages)-1]
	if !v.Full || len(v.Messages) > protocol.ConsoleKept+10 || last.Text != "loop 4999" {
		t.Fatalf("after 5000 logs: full %v, %d messages, the last %q", v.Full, len(v.Messages), last.Text)
	}
	v = readConsole(t, tab, protocol.Action{Limit: 3})
	if got := texts(v.Messages); strings.Join(got, "|") != "log loop 4997|log loop 4998|log loop 4999" || v.Omitted < 900 {
		t.Fatalf("limit 3: %v, omitted %d", got, v.Omitted)
	}
	cmdEval(t, tab, "console.warn('x'.repeat(20000) + 'é'), 1")
	v = readConsole(t, tab, protocol.Action{Level: "warning", Limit: 1})
	if m := v.Messages[0]; !m.Truncated || len(m.Text) != cdpdriver.ConsoleTextLimit || !strings.HasPrefix(m.Text, "xxx") {
		t.Fatalf("a 20 KB message: %d bytes, truncated %v", len(m.Text), m.Truncated)
	}
}

// readNetwork runs network and decodes its value.
func readNetwork(t *testing.T, tab *Tab, a protocol.Action) networkValue {
	t.Helper()
	a.Type = "network"
	var v networkValue
	if err := json.Unmarshal(cmdRead(t, tab, a).Value, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// findRequest is the last request whose URL ends in suffix.
func findRequest(reqs []cdpdriver.Request, suffix string) *cdpdriver.Request {
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.HasSuffix(reqs[i].URL, suffix) {
			return &reqs[i]
		}
	}
	return nil
}

// network answers the requests of the current document: the document,
// a script, a fetch, a stylesheet that is not there; images, fonts,
// stylesheets and media that loaded only with static; filter by URL; a
// new document starts afresh; no frame.
func TestNetworkRequests(t *testing.T) {
	tab, _, _ := tabAt(t, "/network.html")
	cmdPoll(t, tab, "window.fetched === true", 10*time.Second)
	v := readNetwork(t, tab, protocol.Action{})
	doc := findRequest(v.Requests, "/network.html")
	if doc == nil || doc.Method != "GET" || doc.ResourceType != "Document" || doc.Status != 200 || doc.MimeType != "text/html" || doc.Pending {
		t.Fatalf("the document's request: %+v in %+v", doc, v)
	}
	if r := findRequest(v.Requests, "/api/data"); r == nil || r.ResourceType != "Fetch" || r.Status != 200 || r.MimeType != "application/json" {
		t.Fatalf("the fetch: %+v", r)
	}
	if r := findRequest(v.Requests, "/api/cached.js"); r == nil || r.ResourceType != "Script" || r.Status != 200 {
		t.Fatalf("the script: %+v", r)
	}
	// A stylesheet that failed (a 404 of type text/plain, which Chromium
	// refuses as a stylesheet) is listed without static.
	if r := findRequest(v.Requests, "/missing.css"); r == nil || r.ResourceType != "Stylesheet" || !r.Failed || r.Error == "" {
		t.Fatalf("the missing stylesheet: %+v", r)
	}
	if r := findRequest(v.Requests, "/slow-image?delay=0s"); r != nil || v.Static < 1 {
		t.Fatalf("without static, a loaded image is listed (%+v), or not counted (%d)", r, v.Static)
	}
	all := readNetwork(t, tab, protocol.Action{Static: true})
	if r := findRequest(all.Requests, "/slow-image?delay=0s"); r == nil || r.ResourceType != "Image" || r.Status != 200 || r.MimeType != "image/svg+xml" || all.Static != 0 {
		t.Fatalf("with static, the image: %+v", r)
	}
	only := readNetwork(t, tab, protocol.Action{Filter: "api/data"})
	if len(only.Requests) != 1 || !strings.HasSuffix(only.Requests[0].URL, "/api/data") {
		t.Fatalf("filter api/data: %+v", only.Requests)
	}
	cmdMutate(t, tab, protocol.Action{Type: "navigate", URL: site("/read.html"), Wait: true})
	after := readNetwork(t, tab, protocol.Action{Static: true})
	if findRequest(after.Requests, "/api/data") != nil || findRequest(after.Requests, "/read.html") == nil {
		t.Fatalf("after a navigation: %+v", after.Requests)
	}
}

// A page that fetches more than the tab keeps: the last 1000 are kept,
// the rest counted as dropped; limit answers the latest.
func TestNetworkBound(t *testing.T) {
	tab, _, _ := tabAt(t, "/network.html?many=1100")
	cmdPoll(t, tab, "window.fetched === true", 30*time.Second)
	v := readNetwork(t, tab, protocol.Action{Static: true})
	if len(v.Requests) != cdpdriver.RequestLogSize || v.Dropped < 100 || findRequest(v.Requests, "/api/data?n=1099") == nil {
		t.Fatalf("after 1100 fetches: %d requests kept, %d dropped", len(v.Requests), v.Dropped)
	}
	v = readNetwork(t, tab, protocol.Action{Limit: 2, Filter: "api/data?n="})
	if len(v.Requests) != 2 || v.Omitted < 900 {
		t.Fatalf("limit 2: %d requests, omitted %d", len(v.Requests), v.Omitted)
	}
}

// A request the whitelist refuses shows as blocked, saying why, and the
// denied server never sees it.
func TestNetworkShowsBlocked(t *testing.T) {
	t.Parallel() // its own node and server
	var hits atomic.Int64
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer denied.Close()
	wl, err := whitelist.New([]string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbnetblocked", Whitelist: wl, ProfileDir: testdir.Enterable(t)})
	c := newBusClient(t, node)
	subj, tab := node.Subjects(), node.Tabs()[0].Tab
	deniedURL := strings.Replace(denied.URL, "127.0.0.1", "denied.test", 1) + "/pixel.png"
	if res := c.plan(subj, tab, one(protocol.Action{Type: "navigate", URL: site("/network.html?denied=" + url.QueryEscape(deniedURL)), Wait: true})); !res.OK {
		t.Fatalf("navigate: %+v", res)
	}
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for {
		res := c.plan(subj, tab, one(protocol.Action{Type: "network", Filter: "://denied.test"}))
		var v networkValue
		if res.OK {
			_ = json.Unmarshal(res.Results[0].Value, &v)
		}
		if len(v.Requests) == 1 {
			r := v.Requests[0]
			if !r.Blocked || !strings.Contains(r.BlockedBy, "denied.test") || r.ResourceType != "Image" || r.URL != deniedURL || r.Status != 0 || !r.Failed {
				t.Fatalf("the denied image: %+v", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no blocked request within 10s: %+v", res)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the denied server saw %d requests", n)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// network answers while a dialog blocks the page: the tab knows the
// requests without asking the renderer.
func TestNetworkDuringDialog(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	cmdMutate(t, tab, protocol.Action{Type: "eval", Expression: "setTimeout(() => alert('hi'), 0), 1"})
	deadline := time.Now().Add(testscale.D(5 * time.Second))
	for {
		res := send(t, tab.ID(), one(protocol.Action{Type: "title"}))
		if res.Code == protocol.CodeDialogOpen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dialog within 5s: %+v", res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v := readNetwork(t, tab, protocol.Action{}); findRequest(v.Requests, "/read.html") == nil {
		t.Fatalf("network during a dialog: %+v", v)
	}
}
