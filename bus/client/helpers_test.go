package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// wait bounds every wait of these tests.
var wait = testscale.D(20 * time.Second)

var subj = protocol.DefaultSubjects

// testServer is a real nats-server with JetStream and, when users are
// given, their permissions.
func testServer(t testing.TB, users ...*server.User) *server.Server {
	t.Helper()
	return startServer(t, -1, t.TempDir(), users...)
}

// startServer starts a nats-server on port (-1: any) with its JetStream
// store in dir.
func startServer(t testing.TB, port int, dir string, users ...*server.User) *server.Server {
	t.Helper()
	return runServer(t, &server.Options{Port: port, StoreDir: dir, Users: users})
}

// runServer starts a nats-server with opts, on loopback, with JetStream
// and payloads up to 16 MiB.
func runServer(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.NoSigs, opts.NoLog = "127.0.0.1", true, true
	opts.JetStream, opts.MaxPayload = true, 16<<20
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(wait) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// nodeConn is a connection with every permission: the test's stand-in
// for the node's own connections (it creates the stream, publishes
// frames and answers plans as the node does).
func nodeConn(t testing.TB, s *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(s), nats.UserInfo("node", "node-secret"), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// nodeUser may do everything.
func nodeUser() *server.User { return &server.User{Username: "node", Password: "node-secret"} }

// frameHistory creates the frame stream and content bucket as the node
// does (contracts: FrameStream() on AllFrames, a Nats-Msg-Id duplicate
// window, direct gets; the content bucket).
func frameHistory(t testing.TB, nc *nats.Conn, perTab int64) jetstream.JetStream {
	t.Helper()
	return frameHistoryIn(t, nc, perTab, jetstream.MemoryStorage)
}

// frameHistoryIn is frameHistory in memory or in files.
func frameHistoryIn(t testing.TB, nc *nats.Conn, perTab int64, storage jetstream.StorageType) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: subj.FrameStream(), Subjects: []string{subj.AllFrames()},
		Storage: storage, MaxMsgsPerSubject: perTab, MaxAge: time.Hour,
		Duplicates: 2 * time.Minute, AllowDirect: true,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: subj.ContentBucket(), Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	return js
}

// frame is frame seq of tab as the node publishes it.
func frame(tab string, seq int64) protocol.Frame {
	return protocol.Frame{Version: protocol.Version, Tab: tab, Sequence: seq,
		URL: fmt.Sprintf("http://127.0.0.1/%d", seq), Action: "click", Source: protocol.SourceAgent, Time: time.Unix(seq, 0).UTC()}
}

// publish publishes a frame as the node does: core NATS, with its
// Nats-Msg-Id.
func publish(t testing.TB, nc *nats.Conn, f protocol.Frame) {
	t.Helper()
	data, err := protocol.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: subj.TabFrames(f.Tab), Header: nats.Header{}, Data: data}
	m.Header.Set(jetstream.MsgIDHeader, protocol.FrameMsgID(f.Tab, f.Sequence))
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
}

// publishLarge stores content in the bucket, then publishes the frame
// that refers to it, as the node does for content over one message.
func publishLarge(t testing.TB, nc *nats.Conn, js jetstream.JetStream, f protocol.Frame, content string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	store, err := js.ObjectStore(ctx, subj.ContentBucket())
	if err != nil {
		t.Fatal(err)
	}
	obj := protocol.ContentObject(f.Tab, f.Sequence)
	if _, err := store.PutString(ctx, obj, content); err != nil {
		t.Fatal(err)
	}
	f.FullPageRef = &protocol.ContentRef{Bucket: subj.ContentBucket(), Object: obj, Sequence: f.Sequence, Bytes: len(content)}
	publish(t, nc, f)
}

// awaitStored waits until the stream holds n messages.
func awaitStored(t testing.TB, js jetstream.JetStream, n uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		s, err := js.Stream(ctx, subj.FrameStream())
		if err == nil && s.CachedInfo().State.Msgs >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the stream did not get to %d messages", n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// connect connects a client to url.
func connect(t testing.TB, url string, creds *protocol.Credentials, events func(client.Event)) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := client.Connect(ctx, client.Options{URL: url, Credentials: creds, OnEvent: events, ReconnectWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// next is the watcher's next frame, within wait.
func next(t testing.TB, w *client.Watcher) client.Frame {
	t.Helper()
	select {
	case f, ok := <-w.Frames():
		if !ok {
			t.Fatalf("the watch ended: %v", w.Err())
		}
		return f
	case <-time.After(wait):
		t.Fatal("no frame within", wait)
	}
	panic("unreachable")
}

func codeOf(err error) protocol.Code {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
