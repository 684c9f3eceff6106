package actors

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// twoNodes starts alpha (with opts) and beta (sharing alpha's bus, with
// betaMax) and waits until each knows the other.
func twoNodes(t *testing.T, opts NodeOptions, betaMax int) (alpha, beta *Node) {
	t.Helper()
	opts.Name = "alpha"
	alpha = startTestNode(t, opts)
	bopts := secondNodeOptions(t, alpha, "beta")
	bopts.MaxTabs = betaMax
	beta = startTestNode(t, bopts)
	waitUntil(t, func() bool { return len(alpha.Peers()) == 2 && len(beta.Peers()) == 2 })
	return alpha, beta
}

// lifecycleRequest sends one lifecycle request and decodes its reply.
func lifecycleRequest(t *testing.T, nc *nats.Conn, subject string, req any) protocol.TabReply {
	t.Helper()
	data, _ := json.Marshal(req)
	msg, err := nc.Request(subject, data, time.Minute)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	var reply protocol.TabReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		t.Fatalf("%s: %s", subject, msg.Data)
	}
	return reply
}

// Tabs opened without naming a node go to the node with the fewest: with
// one each, two new tabs go one to each; when alpha has three more than
// beta, the next three are all beta's. (Without placement each went to a
// random member of the queue group.)
// A node that lacks a profile is never where a thing of it is placed.
func TestPlacementLeastTabs(t *testing.T) {
	t.Parallel() // its own bus and nodes
	alpha, beta := twoNodes(t, NodeOptions{Profiles: []ProfileOptions{{Name: "extra"}}}, 0)
	nc := testConnOf(t, alpha)
	subj := alpha.Subjects()
	// One tab each: two tabs opened right one after the other go one to
	// each, the second placement counting the first one's tab (its node
	// wrote its entry before it answered, not on its next beat).
	for range 2 {
		if r := lifecycleRequest(t, nc, subj.Profile(protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{}); !r.OK {
			t.Fatalf("placed newtab: %+v", r)
		}
	}
	if a, b := len(alpha.Tabs()), len(beta.Tabs()); a != 2 || b != 2 {
		t.Fatalf("alpha has %d tabs, beta %d; want 2 and 2", a, b)
	}
	for range 3 {
		if r := lifecycleRequest(t, nc, subj.NodeProfile("alpha", protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{}); !r.OK || r.Tab.Node != "alpha" {
			t.Fatalf("newtab pinned to alpha: %+v", r)
		}
	}
	for i := range 3 {
		r := lifecycleRequest(t, nc, subj.Profile(protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{URL: site("/")})
		if !r.OK || r.Tab.Node != "beta" || beta.Tab(r.Tab.Tab) == nil {
			t.Fatalf("placed newtab %d (alpha %d tabs, beta %d): %+v", i, len(alpha.Tabs()), len(beta.Tabs()), r)
		}
	}
	if a, b := len(alpha.Tabs()), len(beta.Tabs()); a != 5 || b != 5 {
		t.Fatalf("alpha has %d tabs, beta %d; want 5 and 5", a, b)
	}

	// Only alpha has profile extra: asked at beta (fewer tabs now),
	// placement still names alpha.
	lifecycleRequest(t, nc, subj.NodeProfile("beta", protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{})
	if got := beta.placeNew("extra"); got != "alpha" {
		t.Fatalf("beta places profile extra on %q, want alpha (the only node that has it)", got)
	}
	if got := beta.placeNew(protocol.DefaultProfile); got != "alpha" {
		t.Fatalf("beta places the default profile on %q, want alpha (fewer tabs)", got)
	}
	if got := alpha.placeNew("a-profile-no-node-has"); got != "alpha" {
		t.Fatalf("a profile no node has is placed by room: %q, want alpha", got)
	}
}

// A node at its MaxTabs gets no placed tab; when every node is full the
// answer is node_full naming each and its bound; a tab pinned to a full
// node is node_full, whatever the others have.
func TestPlacementMaxTabs(t *testing.T) {
	// Its own bus and nodes.
	t.Parallel()
	alpha, beta := twoNodes(t, NodeOptions{MaxTabs: 1}, 3) // alpha is full with its first tab
	nc := testConnOf(t, alpha)
	subj := alpha.Subjects()
	full := func(r protocol.TabReply, what string, names ...string) {
		t.Helper()
		if r.OK || r.Code != protocol.CodeNodeFull {
			t.Fatalf("%s: %+v, want node_full", what, r)
		}
		for _, name := range names {
			if !strings.Contains(r.Error, name) {
				t.Fatalf("%s: %q does not name %q", what, r.Error, name)
			}
		}
	}
	full(lifecycleRequest(t, nc, subj.NodeProfile("alpha", protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{}), "newtab pinned to full alpha", "alpha", "at most 1")
	for i := range 2 {
		r := lifecycleRequest(t, nc, subj.Profile(protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{})
		if !r.OK || r.Tab.Node != "beta" {
			t.Fatalf("placed newtab %d: %+v, want one on beta", i, r)
		}
	}
	full(lifecycleRequest(t, nc, subj.Profile(protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{}), "newtab with every node full", "alpha 1/1", "beta 3/3")
	full(lifecycleRequest(t, nc, subj.NodeProfile("beta", protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{}), "newtab pinned to full beta", "beta", "at most 3")
	if a, b := len(alpha.Tabs()), len(beta.Tabs()); a != 1 || b != 3 {
		t.Fatalf("alpha has %d tabs, beta %d; want 1 and 3", a, b)
	}
	// A closed tab frees its place at once.
	closed := lifecycleRequest(t, nc, subj.NodeProfile("beta", protocol.DefaultProfile, protocol.OpCloseTab), protocol.CloseTabRequest{Tab: beta.Tabs()[0].Tab})
	if !closed.OK {
		t.Fatalf("closetab: %+v", closed)
	}
	if r := lifecycleRequest(t, nc, subj.Profile(protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{}); !r.OK || r.Tab.Node != "beta" {
		t.Fatalf("newtab after a close: %+v", r)
	}
}

// closetab on the shared subject closes the tab on the node that has it,
// whichever node the queue group hands it to; close there reaches the
// node that runs the profile's browser, and is refused naming them when
// several do.
func TestCloseReachesTheNodeThatHasIt(t *testing.T) {
	t.Parallel() // its own bus and nodes
	alpha, beta := twoNodes(t, NodeOptions{}, 0)
	nc := testConnOf(t, alpha)
	subj := alpha.Subjects()
	var tabs []protocol.TabInfo
	for _, node := range []string{"beta", "beta", "beta", "alpha", "alpha"} {
		r := lifecycleRequest(t, nc, subj.NodeProfile(node, protocol.DefaultProfile, protocol.OpNewTab), protocol.NewTabRequest{})
		if !r.OK {
			t.Fatalf("newtab on %s: %+v", node, r)
		}
		tabs = append(tabs, r.Tab)
	}
	for _, tab := range tabs {
		r := lifecycleRequest(t, nc, subj.Profile(protocol.DefaultProfile, protocol.OpCloseTab), protocol.CloseTabRequest{Tab: tab.Tab})
		if !r.OK || r.Tab.Tab != tab.Tab || r.Tab.Node != tab.Node {
			t.Fatalf("closetab %s of %s: %+v", tab.Tab, tab.Node, r)
		}
	}
	if alpha.Tab(tabs[4].Tab) != nil || beta.Tab(tabs[0].Tab) != nil || len(alpha.Tabs()) != 1 || len(beta.Tabs()) != 1 {
		t.Fatalf("after closing: alpha %+v, beta %+v", alpha.Tabs(), beta.Tabs())
	}
	if r := lifecycleRequest(t, nc, subj.Profile(protocol.DefaultProfile, protocol.OpCloseTab), protocol.CloseTabRequest{Tab: tabs[0].Tab}); r.OK || r.Code != protocol.CodeTabNotFound {
		t.Fatalf("closetab of a closed tab: %+v", r)
	}

	// Both run the default profile: close names them and closes nothing.
	r := lifecycleRequest(t, nc, subj.Profile(protocol.DefaultProfile, protocol.OpClose), nil)
	if r.OK || r.Code != protocol.CodeBadRequest || !strings.Contains(r.Error, "alpha, beta") {
		t.Fatalf("close of a profile both run: %+v", r)
	}
	if alpha.Browser() == nil || beta.Browser() == nil {
		t.Fatal("an ambiguous close closed a browser")
	}
	// beta's closed: close on the shared subject reaches alpha.
	if err := beta.CloseBrowser(); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(nil)
	msg, err := nc.Request(subj.Profile(protocol.DefaultProfile, protocol.OpClose), data, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var st protocol.StatusReply
	if json.Unmarshal(msg.Data, &st) != nil || !st.OK || st.Node != "alpha" || alpha.Browser() != nil {
		t.Fatalf("close with only alpha running: %s", msg.Data)
	}
}

// A tab whose page never loads does not hold up the next tab new: the
// node opens tabs side by side (a subscription's handler otherwise takes
// one request at a time, and the first waits out its timeout).
func TestNewTabsDoNotWaitForEachOther(t *testing.T) {
	node := startTestNode(t, NodeOptions{Name: "solo", ActionTimeout: 5 * time.Second})
	nc := testConnOf(t, node)
	requested := make(chan struct{}, 1)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case requested <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	defer hang.Close()
	slow := make(chan error, 1)
	go func() {
		data, _ := json.Marshal(protocol.NewTabRequest{URL: hang.URL + "/"})
		_, err := nc.Request(node.Subjects().NodeProfile("solo", protocol.DefaultProfile, protocol.OpNewTab), data, time.Minute)
		slow <- err
	}()
	<-requested // the first tab waits for its page now
	data, _ := json.Marshal(protocol.NewTabRequest{})
	msg, err := nc.Request(node.Subjects().NodeProfile("solo", protocol.DefaultProfile, protocol.OpNewTab), data, 4*time.Second)
	if err != nil {
		t.Fatalf("a blank tab new while another waits for its page: %v", err)
	}
	var blank protocol.TabReply
	if err := json.Unmarshal(msg.Data, &blank); err != nil || !blank.OK {
		t.Fatalf("blank tab new: %s %v", msg.Data, err)
	}
	select {
	case err := <-slow:
		t.Fatalf("the slow tab new answered first (%v)", err)
	default:
	}
	hang.CloseClientConnections()
	hang.Close()
	<-slow
}
