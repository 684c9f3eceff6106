package actors

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/protocol"
)

// testDomains makes every *.example.test and evil.test name 127.0.0.1 in
// Chromium, so loopback servers get distinct origins.
var testDomains = cdpdriver.LaunchOptions{Args: []string{
	"--host-resolver-rules=MAP *.example.test 127.0.0.1, MAP example.test 127.0.0.1, MAP evil.test 127.0.0.1",
}}

// loopbackResolver is the egress proxy's resolver for the test domains:
// every name is 127.0.0.1, as testDomains makes them for Chromium (the
// whitelists that use it list 127.0.0.1, which the address policy denies
// otherwise).
var loopbackResolver = fixedResolver(netip.MustParseAddr("127.0.0.1"))

// fixedResolver answers every name with one address.
type fixedResolver netip.Addr

func (r fixedResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return []netip.Addr{netip.Addr(r)}, nil
}

// busClient is a test's connection to a node with request helpers.
type busClient struct {
	t  *testing.T
	nc *nats.Conn
}

func newBusClient(t *testing.T, node *Node) *busClient {
	t.Helper()
	nc := bustest.Connect(t, node.Bus(), protocol.RoleAgent)
	t.Cleanup(nc.Close)
	return &busClient{t: t, nc: nc}
}

// ask sends req (JSON) to subject and decodes the reply into out; it
// returns the raw reply.
func (c *busClient) ask(subject string, req, out any) []byte {
	c.t.Helper()
	data, _ := json.Marshal(req)
	msg, err := c.nc.Request(subject, data, time.Minute)
	if err != nil {
		c.t.Fatalf("%s: %v", subject, err)
	}
	if err := json.Unmarshal(msg.Data, out); err != nil {
		c.t.Fatalf("%s: %s: %v", subject, msg.Data, err)
	}
	return msg.Data
}

// plan runs plan on tab and returns its result.
func (c *busClient) plan(subj protocol.Subjects, tab string, plan protocol.Plan) protocol.PlanResult {
	c.t.Helper()
	var res protocol.PlanResult
	c.ask(subj.TabPlan(tab), plan, &res)
	return res
}

// Sessions: a domain's session creates <profileDir>/<domain>/ on first
// use and reuses it after, with its cookies and localStorage; another
// domain's profile does not see them; the whitelist and bad domains are
// refused; a second node on the same profile directory gets profile_in_use.
func TestSessionsKeepAProfilePerDomain(t *testing.T) {
	t.Parallel() // its own node, site and profile directory
	site := httptest.NewServer(siteHandler())
	defer site.Close()
	_, port, _ := net.SplitHostPort(site.Listener.Addr().String())
	mail := "http://mail.example.test:" + port + "/"

	dir := testdir.Enterable(t)
	wl, err := whitelist.New([]string{"*.example.test", "127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := startTestNode(t, NodeOptions{Prefix: "fbsession", ProfileDir: dir, Launch: testDomains, Whitelist: wl, EgressResolver: loopbackResolver})
	subj := node.Subjects()
	c := newBusClient(t, node)

	start := func(domain, url string) protocol.SessionReply {
		t.Helper()
		var r protocol.SessionReply
		if raw := c.ask(subj.SessionStart(), protocol.SessionStartRequest{Domain: domain, URL: url}, &r); !r.OK {
			t.Fatalf("session start %s: %s", domain, raw)
		}
		if r.Session == "" || len(r.Tabs) != 1 || !r.Profile.Running {
			t.Fatalf("session start %s: %+v", domain, r)
		}
		return r
	}
	// readBack loads the mail page in tab and returns its cookie and note.
	readBack := func(tab string) string {
		t.Helper()
		res := c.plan(subj, tab, protocol.Plan{Actions: []protocol.Action{
			{Type: "navigate", URL: mail, Wait: true},
			{Type: "eval", Expression: "[document.cookie, localStorage.getItem('note')].join('|')"},
		}})
		if !res.OK {
			t.Fatalf("read back: %+v", res)
		}
		return string(res.Results[1].Value)
	}

	first := start("Mail.Example.Test.", mail) // canonical: lowercase, no trailing dot
	if first.Domain != "mail.example.test" || !first.Created || first.Profile.Dir != filepath.Join(dir, "mail.example.test") ||
		first.Tabs[0].URL != mail { // the start answers once its tab is at its page
		t.Fatalf("first session: %+v", first)
	}
	if fi, err := os.Stat(first.Profile.Dir); err != nil || !fi.IsDir() {
		t.Fatalf("profile directory: %v", err)
	}
	set := c.plan(subj, first.Tabs[0].Tab, protocol.Plan{Actions: []protocol.Action{
		{Type: "navigate", URL: mail, Wait: true},
		{Type: "eval", Expression: "document.cookie = 'kept=yes; max-age=3600; path=/', localStorage.setItem('note', 'remembered'), 1"},
	}})
	if !set.OK {
		t.Fatalf("set state: %+v", set)
	}
	var again protocol.SessionReply
	c.ask(subj.SessionStart(), protocol.SessionStartRequest{Domain: "mail.example.test"}, &again)
	if again.Session != first.Session || again.Created {
		t.Fatalf("starting a running session again: %+v, want session %s", again, first.Session)
	}

	var stopped protocol.SessionReply
	if raw := c.ask(subj.SessionStop(first.Session), nil, &stopped); !stopped.OK || stopped.Profile.Running {
		t.Fatalf("session stop: %s", raw)
	}
	if res := c.plan(subj, first.Tabs[0].Tab, one(protocol.Action{Type: "eval", Expression: "1"})); res.Code != protocol.CodeBrowserNotRunning {
		t.Fatalf("plan to a stopped session's tab: %+v", res)
	}

	second := start("mail.example.test", "")
	if second.Created || second.Session == first.Session || second.Profile.Dir != first.Profile.Dir {
		t.Fatalf("second session: %+v (first %s)", second, first.Session)
	}
	if got := readBack(second.Tabs[0].Tab); got != `"kept=yes|remembered"` {
		t.Fatalf("the session did not restore its cookie and localStorage: %s", got)
	}

	// Isolation: the same mail page in the docs profile sees none of it.
	docs := start("docs.example.test", "")
	if !docs.Created || docs.Profile.Dir != filepath.Join(dir, "docs.example.test") {
		t.Fatalf("docs session: %+v", docs)
	}
	if got := readBack(docs.Tabs[0].Tab); got != `"|"` {
		t.Fatalf("the docs profile sees the mail profile's state: %s", got)
	}
	var list protocol.SessionList
	c.ask(subj.SessionList(), nil, &list)
	if len(list.Sessions) != 2 {
		t.Fatalf("session list: %+v", list)
	}

	for _, bad := range []struct {
		domain string
		code   protocol.Code
		says   string
	}{
		{"evil.test", protocol.CodePermissionDenied, "evil.test"},
		{"", protocol.CodeBadRequest, "domain is missing"},
		{"mail.example.test:8080", protocol.CodeBadRequest, "not a domain"},
		{"user@mail.example.test/x", protocol.CodeBadRequest, "not a domain"},
		{"default", protocol.CodePermissionDenied, "default"}, // not whitelisted either way
	} {
		var r protocol.PlanResult
		raw := c.ask(subj.SessionStart(), protocol.SessionStartRequest{Domain: bad.domain}, &r)
		if r.OK || r.Code != bad.code || !strings.Contains(r.Error, bad.says) {
			t.Errorf("session start %q: %s, want %s naming %q", bad.domain, raw, bad.code, bad.says)
		}
	}

	// A second node on the same profile directory.
	other := startTestNode(t, NodeOptions{Prefix: "fbsession2", ProfileDir: dir, Launch: testDomains, Whitelist: wl, EgressResolver: loopbackResolver})
	oc := newBusClient(t, other)
	var busy protocol.PlanResult
	raw := oc.ask(other.Subjects().SessionStart(), protocol.SessionStartRequest{Domain: "docs.example.test"}, &busy)
	if busy.Code != protocol.CodeProfileInUse || !strings.Contains(busy.Error, "docs.example.test") {
		t.Fatalf("a second node on a profile in use: %s", raw)
	}
}

// Without a profile directory sessions are refused, with what to set.
func TestSessionsNeedAProfileDir(t *testing.T) {
	node := startTestNode(t, NodeOptions{Prefix: "fbnosession"})
	c := newBusClient(t, node)
	var r protocol.PlanResult
	raw := c.ask(node.Subjects().SessionStart(), protocol.SessionStartRequest{Domain: "example.test"}, &r)
	if r.Code != protocol.CodeBadRequest || !strings.Contains(r.Error, "profileDir") {
		t.Fatalf("session without a profile dir: %s", raw)
	}
}
