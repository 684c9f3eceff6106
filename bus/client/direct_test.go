package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/cutproxy"
	"github.com/framebus/framebus/protocol"
)

// historyStreams are the streams a reader reads: the frames and the
// content bucket's.
var historyStreams = []string{subj.FrameStream(), "OBJ_" + subj.ContentBucket()}

// directReader may read frames and the history by direct gets and
// stream info only: no consumer API at all, as agents and observers
// have it in accounts of their own.
func directReader(name string) *server.User {
	allow := []string{"$JS.API.INFO"}
	for _, s := range historyStreams {
		allow = append(allow, "$JS.API.STREAM.INFO."+s, "$JS.API.STREAM.MSG.GET."+s, "$JS.API.DIRECT.GET."+s, "$JS.API.DIRECT.GET."+s+".>")
	}
	return &server.User{Username: name, Password: name + "-secret", Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: allow},
		Subscribe: &server.SubjectPermission{Allow: []string{protocol.InboxPrefix(name) + ".>", subj.AllFrames()}},
	}}
}

// readEverything watches tab from 1 up to frame last, and every tab
// from each one's current frame; reads tab's stored frames and current
// frame: what a reader does with the history. The large content of
// frame large is inlined.
func readEverything(t *testing.T, c *client.Client, tab string, last, large int64, content string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	w, err := c.Watch(ctx, tab, 1)
	if err != nil {
		t.Fatalf("watch from 1: %v", err)
	}
	defer w.Stop()
	for seq := int64(1); seq <= last; seq++ {
		f := next(t, w)
		if f.Sequence != seq {
			t.Fatalf("watch: frame %d, want %d", f.Sequence, seq)
		}
		if seq == large && (f.FullPage == nil || *f.FullPage != content || f.ContentErr != nil) {
			t.Fatalf("frame %d's content was not inlined: %v", seq, f.ContentErr)
		}
	}
	all, err := c.WatchAll(ctx, true)
	if err != nil {
		t.Fatalf("watch every tab from the last: %v", err)
	}
	defer all.Stop()
	for f := next(t, all); f.Tab != tab || f.Sequence != last; f = next(t, all) {
		if f.Tab == tab { // every other tab's last frame may come first, in stream order
			t.Fatalf("watch every tab from the last: frame %s/%d, want %s/%d", f.Tab, f.Sequence, tab, last)
		}
	}
	var stored []int64
	if err := c.Frames(ctx, tab, 0, 0, func(f client.Frame) error {
		stored = append(stored, f.Sequence)
		return nil
	}); err != nil || len(stored) != int(last) || stored[last-1] != last {
		t.Fatalf("frames: %v, %v; want 1..%d", stored, err, last)
	}
	if f, err := c.Current(ctx, tab); err != nil || f.Sequence != last {
		t.Fatalf("current: frame %d, %v; want %d", f.Sequence, err, last)
	}
}

// A reader that may make no consumer (the server refuses every
// $JS.API.CONSUMER call of its user) watches from 1, every tab from the
// last, reads stored frames, the current one and content over one
// message: all of it works, and no consumer exists on either stream
// after it. Fails when the client makes a consumer (an ordered consumer
// for a watch, the object store's Get): permission_denied.
func TestHistoryWithoutConsumers(t *testing.T) {
	s := testServer(t, nodeUser(), directReader("reader"))
	node := nodeConn(t, s)
	js := frameHistory(t, node, 1000)
	large := strings.Repeat("large content ", 100_000)
	for seq := int64(1); seq <= 20; seq++ {
		if seq == 7 {
			publishLarge(t, node, js, frame("t1", seq), large)
		} else {
			publish(t, node, frame("t1", seq))
		}
	}
	awaitStored(t, js, 20)
	c := connect(t, s.ClientURL(), &protocol.Credentials{User: "reader", Password: "reader-secret", Role: protocol.RoleObserver}, nil)
	readEverything(t, c, "t1", 20, 7, large)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, name := range historyStreams {
		stream, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if n := stream.CachedInfo().State.Consumers; n != 0 {
			t.Errorf("stream %s has %d consumers, want 0", name, n)
		}
	}
}

// accountsServer starts a server as the node will run it: the node and
// its streams in an account of their own (FRAMEBUS, JetStream), the
// reader "obs" in another, which imports the frames as a stream and the
// read-only part of the node's JetStream API under the API prefix
// (protocol.Subjects.JSAPIPrefix): stream info and direct gets, no
// consumer API. See bus/accounts_spike_test.go.
func accountsServer(t *testing.T, port int) *server.Server {
	t.Helper()
	opts := &server.Options{}
	if err := opts.ProcessConfigString(`accounts { FRAMEBUS { jetstream: enabled }, OBS {} }`); err != nil {
		t.Fatal(err)
	}
	var nodeAcc, obsAcc *server.Account
	for _, a := range opts.Accounts {
		switch a.Name {
		case "FRAMEBUS":
			nodeAcc = a
		case "OBS":
			obsAcc = a
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	users := []*server.Account{obsAcc}
	must(nodeAcc.AddStreamExport(subj.AllFrames(), users))
	must(obsAcc.AddStreamImport(nodeAcc, subj.AllFrames(), ""))
	api := func(call string, resp server.ServiceRespType) {
		must(nodeAcc.AddServiceExportWithResponse("$JS.API."+call, resp, users))
		must(obsAcc.AddServiceImport(nodeAcc, subj.JSAPIPrefix()+"."+call, "$JS.API."+call))
	}
	api("INFO", server.Singleton)
	for _, s := range historyStreams {
		api("STREAM.INFO."+s, server.Singleton)
		api("DIRECT.GET."+s, server.Streamed) // a batch answers with many messages
		api("DIRECT.GET."+s+".>", server.Singleton)
	}
	opts.Users = []*server.User{
		{Username: "node", Password: "node-secret", Account: nodeAcc},
		{Username: "obs", Password: "obs-secret", Account: obsAcc, Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{subj.JSAPIPrefix() + ".>"}},
			Subscribe: &server.SubjectPermission{Allow: []string{protocol.InboxPrefix("obs") + ".>", subj.AllFrames()}},
		}},
	}
	opts.Port, opts.StoreDir = port, t.TempDir()
	return runServer(t, opts)
}

// A reader in an account of its own, reaching the node's JetStream API
// under the API prefix its credentials name (as agents and observers
// will), replays, follows live frames through a cut of its connection,
// watches every tab, reads stored frames, the current one and content
// over one message. Fails when the client uses $JS.API (the reader's
// account has no JetStream: no history) or any consumer.
func TestHistoryUnderAPIPrefix(t *testing.T) {
	s := accountsServer(t, -1)
	node, err := nats.Connect(s.ClientURL(), nats.UserInfo("node", "node-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	js := frameHistory(t, node, 1000)
	large := strings.Repeat("large content ", 100_000)
	for seq := int64(1); seq <= 10; seq++ {
		if seq == 4 {
			publishLarge(t, node, js, frame("t1", seq), large)
		} else {
			publish(t, node, frame("t1", seq))
		}
		publish(t, node, frame("other", seq))
	}
	awaitStored(t, js, 20)

	px := cutproxy.New(t, s.ClientURL())
	creds := &protocol.Credentials{User: "obs", Password: "obs-secret", Role: protocol.RoleObserver,
		InboxPrefix: protocol.InboxPrefix("obs"), JSAPIPrefix: subj.JSAPIPrefix()}
	c, reconnected := connectNoGap(t, px.URL(), creds)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	w, err := c.Watch(ctx, "t1", 1)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	for seq := int64(1); seq <= 10; seq++ {
		if f := next(t, w); f.Sequence != seq || (seq == 4 && (f.FullPage == nil || *f.FullPage != large)) {
			t.Fatalf("frame %d (content inlined: %v, %v), want %d", f.Sequence, f.FullPage != nil, f.ContentErr, seq)
		}
	}
	px.SetDown(true) // frames 11..15 are made while the reader is away
	for seq := int64(11); seq <= 15; seq++ {
		publish(t, node, frame("t1", seq))
	}
	awaitStored(t, js, 25)
	back(t, px, reconnected)
	// This reader cannot ask the tab for its last frame (no node answers
	// here, and its account could not reach one): frame 16 is published
	// once an answer on the new connection shows its subscription is
	// back on the server (nats.go sends it first), so 16 comes live.
	if _, err := c.Current(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	publish(t, node, frame("t1", 16))
	for seq := int64(11); seq <= 16; seq++ {
		if f := next(t, w); f.Sequence != seq {
			t.Fatalf("after the cut: frame %d, want %d", f.Sequence, seq)
		}
	}
	awaitStored(t, js, 26)
	readEverything(t, c, "t1", 16, 4, large)
	if _, err := c.Current(ctx, "other"); err != nil {
		t.Fatal(err)
	}
}

// A watch of every tab that loses its connection reads what the tabs
// made meanwhile from the history once it is back: every tab's frames,
// each once, in order, no gap.
func TestWatchAllThroughCut(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	js := frameHistory(t, node, 1000)
	tabs := answerTabList(t, node)
	tabs.publish(frame("a", 1))
	awaitStored(t, js, 1)
	px := cutproxy.New(t, s.ClientURL())
	c, reconnected := connectNoGap(t, px.URL(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	w, err := c.WatchAll(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if f := next(t, w); f.Tab != "a" || f.Sequence != 1 {
		t.Fatalf("frame %s/%d, want a/1", f.Tab, f.Sequence)
	}
	tabs.publish(frame("b", 1))
	if f := next(t, w); f.Tab != "b" || f.Sequence != 1 {
		t.Fatalf("frame %s/%d, want b/1", f.Tab, f.Sequence)
	}
	px.SetDown(true)
	for seq := int64(2); seq <= 4; seq++ {
		tabs.publish(frame("a", seq))
		tabs.publish(frame("b", seq))
	}
	awaitStored(t, js, 8)
	back(t, px, reconnected)
	// The watch's subscription may not be back on the server yet, nor
	// this frame stored when the watch reads the history: the node's
	// tab list tells it the frame is to come.
	tabs.publish(frame("a", 5))
	want := map[string]int64{"a": 5, "b": 4}
	got := map[string]int64{"a": 1, "b": 1}
	for got["a"] != want["a"] || got["b"] != want["b"] {
		f := next(t, w)
		if f.Sequence != got[f.Tab]+1 {
			t.Fatalf("frame %s/%d after %s/%d", f.Tab, f.Sequence, f.Tab, got[f.Tab])
		}
		got[f.Tab] = f.Sequence
	}
}

// A watch busy handing a frame over while its connection is lost and
// back (its reader is slow) still reads what it missed meanwhile: it
// sees the new connection, though it saw no loss.
func TestWatchAllThroughUnseenCut(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	js := frameHistory(t, node, 1000)
	tabs := answerTabList(t, node)
	px := cutproxy.New(t, s.ClientURL())
	c, reconnected := connectNoGap(t, px.URL(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	w, err := c.WatchAll(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	tabs.publish(frame("a", 1))
	if f := next(t, w); f.Tab != "a" || f.Sequence != 1 {
		t.Fatalf("frame %s/%d, want a/1", f.Tab, f.Sequence)
	}
	// a/2 comes live, and the watch holds it for its reader, who reads
	// it only once the connection was lost and is back.
	tabs.publish(frame("a", 2))
	awaitStored(t, js, 2)
	px.SetDown(true)
	for seq := int64(3); seq <= 4; seq++ {
		tabs.publish(frame("a", seq))
		tabs.publish(frame("b", seq))
	}
	awaitStored(t, js, 6)
	back(t, px, reconnected)
	want := map[string]int64{"a": 4, "b": 4}
	got := map[string]int64{"a": 1, "b": 2} // b's first frames were not published
	for got["a"] != want["a"] || got["b"] != want["b"] {
		f := next(t, w)
		if f.Sequence != got[f.Tab]+1 {
			t.Fatalf("frame %s/%d after %s/%d", f.Tab, f.Sequence, f.Tab, got[f.Tab])
		}
		got[f.Tab] = f.Sequence
	}
}

// Every tab's current frame comes from one direct get of the last
// message of each, read in pages of 512: 600 tabs give 600 frames, one
// each. The server answers for 1024 tabs at most: with more,
// WatchAll(last) ends with too_large, at once, instead of reading again
// and again.
func TestWatchAllLastTooManyTabs(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	js := frameHistory(t, node, 1000)
	for i := range 600 {
		publish(t, node, frame(fmt.Sprintf("t%d", i), 1))
		publish(t, node, frame(fmt.Sprintf("t%d", i), 2))
	}
	awaitStored(t, js, 1200)
	c := connect(t, s.ClientURL(), nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	w, err := c.WatchAll(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < 600 {
		f := next(t, w)
		if f.Sequence != 2 || seen[f.Tab] {
			t.Fatalf("frame %s/%d after %d tabs' last frames", f.Tab, f.Sequence, len(seen))
		}
		seen[f.Tab] = true
	}
	w.Stop()

	for i := 600; i < 1025; i++ {
		publish(t, node, frame(fmt.Sprintf("t%d", i), 1))
	}
	awaitStored(t, js, 1625)
	w, err = c.WatchAll(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case f, ok := <-w.Frames():
		if ok {
			t.Fatalf("frame %s/%d", f.Tab, f.Sequence)
		}
	case <-ctx.Done():
		t.Fatal("the watch did not end")
	}
	if err := w.Err(); codeOf(err) != protocol.CodeTooLarge || !strings.Contains(err.Error(), "1024") {
		t.Fatalf("watch ended with %v, want too_large", err)
	}
}

// tabList answers the tab list as a node does, with the last frame each
// tab published through it.
type tabList struct {
	t    testing.TB
	nc   *nats.Conn
	mu   sync.Mutex
	seqs map[string]int64
}

func answerTabList(t testing.TB, nc *nats.Conn) *tabList {
	t.Helper()
	l := &tabList{t: t, nc: nc, seqs: map[string]int64{}}
	_, err := nc.Subscribe(subj.Tabs(), func(m *nats.Msg) {
		l.mu.Lock()
		list := protocol.TabList{OK: true, Node: "n1", Tabs: []protocol.TabInfo{}}
		for tab, seq := range l.seqs {
			list.Tabs = append(list.Tabs, protocol.TabInfo{Tab: tab, Sequence: seq})
		}
		l.mu.Unlock()
		reply(m, list)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return l
}

// publish publishes f as the node does, its tab's last frame from now.
func (l *tabList) publish(f protocol.Frame) {
	l.t.Helper()
	l.mu.Lock()
	l.seqs[f.Tab] = f.Sequence
	l.mu.Unlock()
	publish(l.t, l.nc, f)
}

// connectNoGap connects a client to url that fails the test on a gap
// event; reconnected gets its reconnects.
func connectNoGap(t *testing.T, url string, creds *protocol.Credentials) (c *client.Client, reconnected <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 8)
	c = connect(t, url, creds, func(e client.Event) {
		switch e.Kind {
		case client.EventReconnected:
			ch <- struct{}{}
		case client.EventGap:
			t.Errorf("gap: %+v", e)
		}
	})
	return c, ch
}

// back lets connections through px again and waits for the client's
// reconnect.
func back(t *testing.T, px *cutproxy.Proxy, reconnected <-chan struct{}) {
	t.Helper()
	px.SetDown(false)
	select {
	case <-reconnected:
	case <-time.After(wait):
		t.Fatal("no reconnect")
	}
}
