package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// Two serve processes, each a leaf node of one hub (a plain nats-server,
// JetStream domain "hub"), logged in with a 0600 file: a client of the
// hub's account the leaves are bound to lists both nodes' tabs with
// their names, runs a plan on node one's tab, watches its frames (the
// first from the history, kept by the hub's JetStream) and reads the
// history. A third serve under node one's name is refused by the
// registry (the hub's too), and node one's leaf connection stays as it
// was. The leaf password is on no command line and in no log.
func TestNodesAsLeavesOfAHub(t *testing.T) {
	t.Parallel() // its own hub and nodes
	hub := bustest.StartHub(t)
	conf := leafServeConfig(t, hub)
	var nodes []*node
	for _, name := range []string{"one", "two"} {
		nodes = append(nodes, launchNode(t, binary, envNode+"="+name, envConfig+"="+conf, "FRAMEBUS_LOG_LEVEL=debug"))
	}
	for _, n := range nodes {
		n.ready(t)
	}
	one, two := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	hubCreds := protocol.Credentials{URL: hub.ClientURL, User: bustest.HubUser, Password: bustest.HubPassword}
	bc, err := busclient.Connect(ctx, busclient.Options{Credentials: &hubCreds})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()

	waitForTwoNodesTabs(t, ctx, bc, one, two, 30*time.Second)

	w, err := bc.Watch(ctx, one.tab(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	first := nextFrame(t, w)
	if first.Sequence != 1 || first.Node != "one" {
		t.Fatalf("the first frame, from the history at the hub: %+v", first.Frame)
	}
	res, err := bc.Plan(ctx, one.tab(), protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}})
	if err != nil || !res.OK {
		t.Fatalf("a plan on node one's tab from the hub: %+v %v", res, err)
	}
	if f := nextFrame(t, w); f.Sequence != 2 || f.Source != protocol.SourceAgent {
		t.Fatalf("the plan's frame: %+v", f.Frame)
	}
	// A live subscriber can have a frame a moment before the stream has
	// stored it (the stream takes its copy beside the subscribers), so the
	// history is read until it has frame 2, within a deadline.
	var stored []int64
	for deadline := time.Now().Add(testscale.D(10 * time.Second)); ; {
		stored = nil
		err := bc.Frames(ctx, one.tab(), 1, 0, func(f busclient.Frame) error {
			stored = append(stored, f.Sequence)
			return nil
		})
		if err == nil && len(stored) == 2 && stored[0] == 1 && stored[1] == 2 {
			break
		}
		if err != nil || len(stored) > 2 || time.Now().After(deadline) {
			t.Fatalf("the history at the hub: %v %v", stored, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Node one's name again: refused, and node one is not cut off.
	leafIDs := func() map[uint64]bool {
		lz, err := hub.Server.Leafz(nil)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[uint64]bool{}
		for _, l := range lz.Leafs {
			ids[l.ID] = true
		}
		return ids
	}
	before := leafIDs()
	dup := framebus(t, testEnv(envState+"="+t.TempDir()+"/node.json", envNode+"=one", envConfig+"="+conf), "", "serve")
	if dup.status == 0 || !strings.Contains(dup.stdout+dup.stderr, string(protocol.CodeNodeNameTaken)) {
		t.Fatalf("a second node named one: %d %s %s", dup.status, dup.stdout, dup.stderr)
	}
	after := leafIDs()
	for id := range before {
		if !after[id] {
			t.Errorf("leaf connection %d was dropped while a node of a taken name tried to join: before %v, after %v", id, before, after)
		}
	}
	if res, err := bc.Plan(ctx, one.tab(), protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "2+2"}}); err != nil || !res.OK {
		t.Fatalf("node one after the refused node: %+v %v", res, err)
	}

	for _, n := range []*node{one, two} {
		n.stop(syscall.SIGTERM, 30*time.Second)
		if strings.Contains(n.stdout.String()+n.stderr.String(), bustest.HubLeafPassword) {
			t.Errorf("node %s printed or logged the leaf password", n.state.Node)
		}
	}
	if strings.Contains(dup.stdout+dup.stderr, bustest.HubLeafPassword) {
		t.Errorf("the refused node printed or logged the leaf password")
	}
}

// A leaf login that does not work stops serve at start with a clear
// error (unavailable, naming the hub and why), within its deadline; a
// login file others may read is refused before anything starts.
func TestLeafStartErrors(t *testing.T) {
	t.Parallel() // its own hub
	hub := bustest.StartHub(t)
	wrong := filepath.Join(t.TempDir(), "leaf-login")
	if err := os.WriteFile(wrong, []byte(bustest.HubLeafUser+":wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := framebus(t, testEnv(envState+"="+t.TempDir()+"/node.json"), "", "serve",
		"--leaf", hub.LeafURL, "--leaf-credentials", wrong, "--leaf-js-domain", bustest.HubDomain)
	if out.status == 0 || !strings.Contains(out.stdout+out.stderr, string(protocol.CodeUnavailable)) ||
		!strings.Contains(out.stdout+out.stderr, "Authorization Violation") || !strings.Contains(out.stdout+out.stderr, hub.LeafURL) {
		t.Fatalf("serve with a wrong leaf password: %d %s %s", out.status, out.stdout, out.stderr)
	}
	if err := os.Chmod(wrong, 0o644); err != nil {
		t.Fatal(err)
	}
	out = framebus(t, testEnv(envState+"="+t.TempDir()+"/node.json"), "", "serve", "--leaf", hub.LeafURL, "--leaf-credentials", wrong)
	if out.status == 0 || !strings.Contains(out.stdout+out.stderr, "chmod 600") {
		t.Fatalf("serve with a leaf login others may read: %d %s %s", out.status, out.stdout, out.stderr)
	}
}

// leafServeConfig writes a login file (0600) and a configuration that makes
// serve a leaf node of hub.
func leafServeConfig(t *testing.T, hub *bustest.Hub) string {
	t.Helper()
	dir := t.TempDir()
	login := filepath.Join(dir, "leaf-login")
	if err := os.WriteFile(login, []byte(bustest.HubLeafUser+":"+bustest.HubLeafPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	yaml := "bus:\n  leaf:\n    urls: [" + hub.LeafURL + "]\n    credentials: " + login + "\n    jsDomain: " + bustest.HubDomain + "\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// nextFrame is the watch's next frame, within 30 s.
func nextFrame(t *testing.T, w *busclient.Watcher) busclient.Frame {
	t.Helper()
	select {
	case f, ok := <-w.Frames():
		if !ok {
			t.Fatalf("the watch ended: %v", w.Err())
		}
		return f
	case <-time.After(30 * time.Second):
		t.Fatal("no frame within 30s")
	}
	panic("unreachable")
}
