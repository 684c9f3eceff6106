package client_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/bus/client"
)

// forge has the server itself publish on tab's frame subject, as any user
// who may make a direct get can: the answer to a direct get of a content
// chunk a page shaped like a frame, with the frame subject as its reply.
func forge(t *testing.T, nc *nats.Conn, js jetstream.JetStream, tab string, seq int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	store, err := js.ObjectStore(ctx, subj.ContentBucket())
	if err != nil {
		t.Fatal(err)
	}
	shaped := fmt.Sprintf(`{"version":1,"tab":%q,"sequence":%d,"url":"https://forged.example/","action":"click","source":"agent","time":"2026-01-01T00:00:00Z"}`, tab, seq)
	obj, err := store.PutString(ctx, fmt.Sprintf("page/%d", seq), shaped)
	if err != nil {
		t.Fatal(err)
	}
	req := fmt.Sprintf(`{"last_by_subj":"$O.%s.C.%s"}`, subj.ContentBucket(), obj.NUID)
	if err := nc.PublishRequest("$JS.API.DIRECT.GET.OBJ_"+subj.ContentBucket(), subj.TabFrames(tab), []byte(req)); err != nil {
		t.Fatal(err)
	}
}

// Watch, Frames and Current take only the node's frames: what a user had
// the server publish on a frame subject (live, and stored by the frame
// stream, even as the tab's last message) is passed over, and does not
// make the watch skip the node's frames after it.
func TestForgedFramesPassedOver(t *testing.T) {
	s := testServer(t)
	nc := nodeConn(t, s)
	js := frameHistory(t, nc, 100)
	for seq := int64(1); seq <= 3; seq++ {
		publish(t, nc, frame("T", seq))
	}
	forge(t, nc, js, "T", 50)
	for seq := int64(4); seq <= 5; seq++ {
		publish(t, nc, frame("T", seq))
	}
	forge(t, nc, js, "T", 60) // the tab's last stored message
	awaitStored(t, js, 5+2)   // 5 frames and 2 forgeries
	c := connect(t, s.ClientURL(), nil, nil)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	w, err := c.Watch(ctx, "T", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for want := int64(1); want <= 5; want++ {
		if f := next(t, w); f.Sequence != want || f.URL == "https://forged.example/" {
			t.Fatalf("frame %d: got %d %s", want, f.Sequence, f.URL)
		}
	}
	cur, err := c.Current(ctx, "T")
	if err != nil || cur.Sequence != 5 {
		t.Fatalf("Current: %d %s, %v; want frame 5", cur.Sequence, cur.URL, err)
	}
	var stored []int64
	if err := c.Frames(ctx, "T", 0, 0, func(f client.Frame) error { stored = append(stored, f.Sequence); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(stored) != "[1 2 3 4 5]" {
		t.Fatalf("Frames: %v", stored)
	}
}
