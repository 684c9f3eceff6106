package actors

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// A node wires bus, browser and tab; a TCP client lists its tabs, runs a
// plan and sees its frames; Close leaves no Chromium and no profile.
func TestNodeLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node, err := StartNode(ctx, NodeOptions{Launch: cdpdriver.LaunchOptions{Headless: true}, Prefix: "fbtest"})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	subj := node.Subjects()
	nc, err := nats.Connect(node.Bus().ClientURL())
	if err != nil {
		t.Fatal(err)
	}
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
