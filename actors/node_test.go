package actors

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A node wires bus, browser and tab; a TCP client lists its tabs, runs a
// plan and sees its frames; Close leaves no Chromium and no profile.
func TestNodeLifecycle(t *testing.T) {
	t.Parallel() // its own node and browser
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	node, err := StartNode(ctx, NodeOptions{Launch: cdpdriver.LaunchOptions{Headless: true}, Prefix: "fbtest"})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	subj := node.Subjects()
	nc := bustest.Connect(t, node.Bus(), protocol.RoleAgent)
	defer nc.Close()
	msg, err := nc.Request(subj.Tabs(), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var list protocol.TabList
	if err := json.Unmarshal(msg.Data, &list); err != nil || !list.OK || len(list.Tabs) != 1 || list.Tabs[0].Sequence != 1 {
		t.Fatalf("tab list %s (%v)", msg.Data, err)
	}
	tab := list.Tabs[0].Tab
	frames, err := nc.SubscribeSync(subj.TabFrames(tab))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(one(protocol.Action{Type: "navigate", URL: site("/"), BasedOnSequence: protocol.Based(1)}))
	if msg, err = nc.Request(subj.TabPlan(tab), data, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if res, _ := protocol.DecodePlanResult(msg.Data); !res.OK || res.Sequence != 2 {
		t.Fatalf("plan on node: %s", msg.Data)
	}
	fm, err := frames.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := protocol.DecodeFrame(fm.Data); f.Sequence != 2 || f.URL != site("/") {
		t.Fatalf("frame over TCP: %s", fm.Data)
	}

	proc := node.Browser().Process()
	pid, profile := proc.Pid(), proc.UserDataDir()
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + itoa(pid)); !os.IsNotExist(err) {
		t.Fatalf("chromium %d still running after Close", pid)
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Fatalf("profile %s left behind", profile)
	}
	if err := node.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Tabs a page opens itself (window.open, target=_blank) get an actor and
// a frame stream of their own, are announced on the opener's
// event.opened, take plans, and are retired when they close.
func TestOpenedTabsGetActors(t *testing.T) {
	node := startTestNode(t, NodeOptions{Prefix: "fbopen"})
	subj := node.Subjects()
	nc, err := node.Bus().Connect("opened-test")
	if err != nil {
		t.Fatal(err)
	}
	opener := node.Tabs()[0].Tab
	events, err := nc.SubscribeSync(subj.TabEvents(opener, "opened"))
	if err != nil {
		t.Fatal(err)
	}
	plan := func(tab string, a protocol.Action) protocol.PlanResult {
		t.Helper()
		data, _ := json.Marshal(one(a))
		msg, err := nc.Request(subj.TabPlan(tab), data, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		res, _ := protocol.DecodePlanResult(msg.Data)
		return res
	}
	if r := plan(opener, protocol.Action{Type: "navigate", URL: site("/opener.html"), Wait: true}); !r.OK {
		t.Fatalf("navigate: %+v", r)
	}
	for _, tc := range []struct{ sel, url string }{{"#open", site("/search.html?q=popup")}, {"#blank", site("/product.html?id=7")}} {
		if r := plan(opener, protocol.Action{Type: "click", Selector: tc.sel}); !r.OK {
			t.Fatalf("click %s: %+v", tc.sel, r)
		}
		m, err := events.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("no event.opened after %s: %v", tc.sel, err)
		}
		var ev openedEvent
		if err := json.Unmarshal(m.Data, &ev); err != nil || ev.Tab != opener || ev.Opened.Tab == "" || ev.Opened.Tab == opener {
			t.Fatalf("event.opened %s", m.Data)
		}
		// The new tab takes plans; its URL arrives as it loads.
		waitUntil(t, func() bool {
			r := plan(ev.Opened.Tab, protocol.Action{Type: "url"})
			if !r.OK {
				t.Fatalf("plan on the opened tab: %+v", r)
			}
			var got string
			_ = json.Unmarshal(r.Results[0].Value, &got)
			return got == tc.url
		})
	}
	if n := len(node.Tabs()); n != 3 {
		t.Fatalf("node lists %d tabs, want 3", n)
	}
	// The page closes its window: the tab is retired.
	if r := plan(opener, protocol.Action{Type: "eval", Expression: "window.popup.close()"}); !r.OK {
		t.Fatalf("close the popup: %+v", r)
	}
	waitUntil(t, func() bool { return len(node.Tabs()) == 2 }) // the popup's tab retired
}
