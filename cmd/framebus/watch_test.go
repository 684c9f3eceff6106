package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/internal/cutproxy"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// natsServer starts a nats-server with opts on a random loopback port.
func natsServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.NoSigs, opts.NoLog = "127.0.0.1", -1, true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// historyBus is a nats-server with the frame stream as a node makes it,
// holding frames 1..n of tab, and a connection publishing as the node.
func historyBus(t *testing.T, tab string, n int64) (*server.Server, func(seq int64)) {
	t.Helper()
	s := natsServer(t, &server.Options{JetStream: true, StoreDir: t.TempDir()})
	nc, err := nats.Connect("", nats.InProcessServer(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	subj := protocol.DefaultSubjects
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: subj.FrameStream(), Subjects: []string{subj.AllFrames()},
		Storage: jetstream.MemoryStorage, MaxMsgsPerSubject: 1000, Duplicates: time.Minute, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	publish := func(seq int64) {
		data, _ := protocol.Marshal(protocol.Frame{Version: protocol.Version, Tab: tab, Sequence: seq, URL: fmt.Sprintf("http://x/%d", seq), Action: "click", Source: protocol.SourceAgent})
		m := &nats.Msg{Subject: subj.TabFrames(tab), Header: nats.Header{}, Data: data}
		m.Header.Set(jetstream.MsgIDHeader, protocol.FrameMsgID(tab, seq))
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
		defer cancel()
		if _, err := js.PublishMsg(ctx, m); err != nil { // acknowledged: stored before the command runs
			t.Fatal(err)
		}
	}
	for seq := int64(1); seq <= n; seq++ {
		publish(seq)
	}
	return s, publish
}

// printedFrames decodes the frames a command printed.
func printedFrames(t *testing.T, stdout string) []int64 {
	t.Helper()
	var seqs []int64
	for _, line := range readLines(stdout) {
		f, err := protocol.DecodeFrame([]byte(line))
		if err != nil {
			t.Fatalf("not a frame: %v: %.200s", err, line)
		}
		seqs = append(seqs, f.Sequence)
	}
	return seqs
}

func wantFrames(t *testing.T, what string, got []int64, first, last int64) {
	t.Helper()
	ok := int64(len(got)) == last-first+1
	for i := 0; ok && i < len(got); i++ {
		ok = got[i] == first+int64(i)
	}
	if !ok {
		t.Fatalf("%s printed frames %v, want %d..%d, each once", what, got, first, last)
	}
}

// frames prints stored frames and exits; watch --from replays them, then
// follows live ones, and through cuts of its connection (each logged)
// prints every frame once. No node has the tab here: its history is
// replayed all the same, as a closed tab's is.
func TestWatchFromAndFrames(t *testing.T) {
	s, publish := historyBus(t, "T1", 10)
	env := testEnv()

	r := framebus(t, env, "", "frames", "--bus", s.ClientURL(), "--tab", "T1", "--from", "3", "--to", "6")
	if r.status != 0 {
		t.Fatalf("frames: exit %d, %s %s", r.status, r.stdout, r.stderr)
	}
	wantFrames(t, "frames --from 3 --to 6", printedFrames(t, r.stdout), 3, 6)

	px := cutproxy.New(t, s.ClientURL())
	watch := startProcess(t, env, "watch", "--bus", px.URL(), "--tab", "T1", "--from", "2")
	printed := func() []int64 { return printedFrames(t, watch.stdout.String()) }
	waitFor(t, "watch replays the stored frames", 30*time.Second, func() bool { return len(printed()) >= 9 })
	for seq := int64(11); seq <= 40; seq++ {
		if seq%10 == 5 {
			n := strings.Count(watch.stderr.String(), "reconnected") // before the cut: the reconnect may be logged at once
			px.Cut()
			waitFor(t, "watch reconnects", 30*time.Second, func() bool { return strings.Count(watch.stderr.String(), "reconnected") > n })
		}
		publish(seq)
	}
	waitFor(t, "watch prints frame 40", 30*time.Second, func() bool {
		p := printed()
		return len(p) > 0 && p[len(p)-1] >= 40
	})
	if status := watch.stop(syscall.SIGINT, 10*time.Second); status != 0 {
		t.Errorf("watch exited %d on SIGINT", status)
	}
	wantFrames(t, "watch --from 2", printed(), 2, 40)
	if n := strings.Count(watch.stderr.String(), "disconnected from the bus"); n != 3 {
		t.Errorf("watch logged %d disconnects, want 3:\n%s", n, watch.stderr.String())
	}

	// No node has the tab, and no history: refused, not watched forever
	// (no node runs on this bus at all: unavailable).
	r = framebus(t, env, "", "watch", "--bus", s.ClientURL(), "--tab", "NOSUCH", "--from", "1")
	var reply errorReply
	if err := json.Unmarshal([]byte(r.stdout), &reply); err != nil || r.status != 1 || reply.Code != protocol.CodeUnavailable {
		t.Fatalf("watch of a tab with no history: exit %d, %s", r.status, r.stdout)
	}
}

// A command the user's role may not send prints permission_denied and
// exits 1 (not a timeout after the plan's wait): an observer's plan,
// through a bus that refuses it.
func TestPermissionDeniedPrinted(t *testing.T) {
	subj := protocol.DefaultSubjects
	s := natsServer(t, &server.Options{Users: []*server.User{{Username: "obs", Password: "obs-secret", Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{subj.Tabs()}},
		Subscribe: &server.SubjectPermission{Allow: []string{protocol.InboxPrefix("obs") + ".>", subj.AllFrames()}},
	}}}})
	url := strings.Replace(s.ClientURL(), "nats://", "nats://obs:obs-secret@", 1)
	r := framebus(t, testEnv(), "", "eval", "1+1", "--bus", url, "--tab", "T1")
	var reply errorReply
	if err := json.Unmarshal([]byte(r.stdout), &reply); err != nil || r.status != 1 || reply.Code != protocol.CodePermissionDenied ||
		!strings.Contains(reply.Error, "may not publish to framebus.tab.T1.plan") {
		t.Fatalf("an observer's eval: exit %d, %s", r.status, r.stdout)
	}
}
