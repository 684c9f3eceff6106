package actors

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/protocol"
)

// discover asks every instance of the framebus service for its info, as
// `nats micro info framebus` does, until want accepts what answered.
func discover(t *testing.T, nc *nats.Conn, want func([]micro.Info) bool) []micro.Info {
	t.Helper()
	subject, err := micro.ControlSubject(micro.InfoVerb, ServiceName, "")
	if err != nil {
		t.Fatal(err)
	}
	inbox := nc.NewInbox()
	replies := make(chan *nats.Msg, 256)
	sub, err := nc.ChanSubscribe(inbox, replies)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	deadline := time.After(20 * time.Second)
	ask := time.NewTicker(time.Second) // instances that start later answer the next ask
	defer ask.Stop()
	seen := map[string]micro.Info{}
	for {
		if err := nc.PublishRequest(subject, inbox, nil); err != nil {
			t.Fatal(err)
		}
		for asked := false; !asked; {
			select {
			case m := <-replies:
				var info micro.Info
				if err := json.Unmarshal(m.Data, &info); err != nil {
					t.Fatal(err)
				}
				seen[info.ID] = info
				infos := slices.Collect(maps.Values(seen))
				if want(infos) {
					return infos
				}
			case <-ask.C:
				asked = true
			case <-deadline:
				t.Fatalf("no such instances within 20s: %+v", seen)
			}
		}
	}
}

func instance(infos []micro.Info, key, value string) *micro.Info {
	for i := range infos {
		if infos[i].Metadata[key] == value {
			return &infos[i]
		}
	}
	return nil
}

func endpointOf(info *micro.Info, name string) *micro.EndpointInfo {
	for i := range info.Endpoints {
		if info.Endpoints[i].Name == name {
			return &info.Endpoints[i]
		}
	}
	return nil
}

// requests is how many requests an instance's endpoint has counted.
func requests(t *testing.T, nc *nats.Conn, id, name string) int {
	t.Helper()
	subject, _ := micro.ControlSubject(micro.StatsVerb, ServiceName, id)
	m, err := nc.Request(subject, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stats micro.Stats
	if err := json.Unmarshal(m.Data, &stats); err != nil {
		t.Fatal(err)
	}
	for _, e := range stats.Endpoints {
		if e.Name == name {
			return e.NumRequests
		}
	}
	t.Fatalf("instance %s has no endpoint %s: %+v", id, name, stats)
	return 0
}

// The node's request/reply subjects are micro endpoints: discovery lists
// the node, its profile and its tab as instances of framebus with their
// subjects (queue groups as the subjects need), their request counts
// grow, and a closed tab's instance is gone.
func TestMicroDiscovery(t *testing.T) {
	t.Parallel() // its own node; it counts requests on its own bus
	node := startTestNode(t, NodeOptions{})
	nc, err := node.Bus().Connect("micro-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subj := node.Subjects()
	tab := node.Tabs()[0].Tab
	infos := discover(t, nc, func(infos []micro.Info) bool {
		return instance(infos, "prefix", subj.Prefix) != nil && instance(infos, "tab", tab) != nil && instance(infos, "profile", protocol.DefaultProfile) != nil
	})
	nodeInfo, tabInfo, profileInfo := instance(infos, "prefix", subj.Prefix), instance(infos, "tab", tab), instance(infos, "profile", protocol.DefaultProfile)
	for _, c := range []struct {
		info          *micro.Info
		name, subject string
		queue         string
		queueDisabled bool
	}{
		{nodeInfo, "tabs", subj.Tabs(), "", true},
		{nodeInfo, "status", subj.BrowserStatus(), "", true},
		{nodeInfo, "sessions", subj.SessionList(), "", true},
		{nodeInfo, "session-start", subj.SessionStart(), "framebus-sessions", false},
		{profileInfo, protocol.OpLaunch, subj.Profile(protocol.DefaultProfile, protocol.OpLaunch), lifecycleQueue, false},
		{profileInfo, protocol.OpNewTab, subj.Profile(protocol.DefaultProfile, protocol.OpNewTab), lifecycleQueue, false},
		{profileInfo, protocol.OpPages, subj.Profile(protocol.DefaultProfile, protocol.OpPages), "", true},
		{profileInfo, "node-" + protocol.OpNewTab, subj.NodeProfile(node.Name(), protocol.DefaultProfile, protocol.OpNewTab), "", true},
		{profileInfo, "node-" + protocol.OpPages, subj.NodeProfile(node.Name(), protocol.DefaultProfile, protocol.OpPages), "", true},
		{tabInfo, "plan", subj.TabPlan(tab), "", true},
		{tabInfo, "cancel", subj.TabCancel(tab), "", true},
		{tabInfo, "content", subj.TabContent(tab), "", true},
		{tabInfo, "stage", subj.TabStage(tab), "", true},
	} {
		e := endpointOf(c.info, c.name)
		if c.info.Name != ServiceName || c.info.Version != ServiceVersion {
			t.Fatalf("instance %+v", c.info.ServiceIdentity)
		}
		if e == nil || e.Subject != c.subject || e.QueueGroup != c.queue && !c.queueDisabled {
			t.Fatalf("endpoint %s: %+v, want subject %s queue %q", c.name, e, c.subject, c.queue)
		}
	}

	before, tabsBefore := requests(t, nc, tabInfo.ID, "plan"), requests(t, nc, nodeInfo.ID, "tabs")
	if res, err := request(nc, tab, one(protocol.Action{Type: "eval", Expression: "1+1"})); err != nil || !res.OK {
		t.Fatalf("plan: %+v %v", res, err)
	}
	if _, err := nc.Request(subj.Tabs(), nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// micro counts a request once its handler has returned, after the
	// reply went out: wait for the count, then check it is one more.
	for _, c := range []struct {
		id, endpoint string
		before       int
	}{{tabInfo.ID, "plan", before}, {nodeInfo.ID, "tabs", tabsBefore}} {
		n := 0
		waitUntil(t, func() bool { n = requests(t, nc, c.id, c.endpoint); return n > c.before })
		if n != c.before+1 {
			t.Fatalf("%s requests %d -> %d", c.endpoint, c.before, n)
		}
	}

	if _, err := node.CloseTab(t.Context(), tab); err != nil {
		t.Fatal(err)
	}
	ping, _ := micro.ControlSubject(micro.PingVerb, ServiceName, tabInfo.ID)
	waitUntil(t, func() bool {
		_, err := nc.Request(ping, nil, 10*time.Second)
		return errors.Is(err, nats.ErrNoResponders)
	})
}
