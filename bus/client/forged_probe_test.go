package client_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/bus/client"
)

// Wherever forged messages lie in the stream (see TestForgedFramesPassedOver),
// a replay from any frame starts at that frame: the search for where it
// starts probes stored messages, and took a forged one's sequence (its
// JSON's, without the node's message id) for a frame's, so a forged
// "sequence":1 after frame 10 made a replay from frame 3 start at 11.
func TestForgedFramesArePassedOverAnywhere(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	js := frameHistory(t, node, 1000)
	forgeRaw := func(data string, header nats.Header) {
		t.Helper()
		if err := node.PublishMsg(&nats.Msg{Subject: subj.TabFrames("t1"), Data: []byte(data), Header: header}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := int64(1); seq <= 10; seq++ {
		publish(t, node, frame("t1", seq))
	}
	forgeRaw(`{"version":1,"tab":"t1","sequence":999999,"url":"https://forged.example/"}`, nil)
	forgeRaw(`{"version":1,"tab":"t2","sequence":500000,"url":"https://forged.example/"}`, nats.Header{"Nats-Msg-Id": []string{"t2.500000"}})
	forgeRaw(`{"version":1,"tab":"t1","sequence":1,"url":"https://forged.example/"}`, nil)
	for seq := int64(11); seq <= 20; seq++ {
		publish(t, node, frame("t1", seq))
	}
	awaitStored(t, js, 23)

	c := connect(t, s.ClientURL(), nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, from := range []int64{1, 3} {
		w, err := c.Watch(ctx, "t1", from)
		if err != nil {
			t.Fatal(err)
		}
		for seq := from; seq <= 20; seq++ {
			if f := next(t, w); f.Tab != "t1" || f.Sequence != seq || f.URL == "https://forged.example/" {
				t.Fatalf("watch from %d: frame %s/%d %s, want t1/%d", from, f.Tab, f.Sequence, f.URL, seq)
			}
		}
		w.Stop()
	}
	var got []int64
	if err := c.Frames(ctx, "t1", 0, 0, func(f client.Frame) error {
		got = append(got, f.Sequence)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 || got[0] != 1 || got[19] != 20 {
		t.Errorf("Frames: %v, want 1 to 20", got)
	}
	// The last message stored is no frame: Current is the last frame.
	forgeRaw(`{"version":1,"tab":"t1","sequence":21}`, nil)
	awaitStored(t, js, 24)
	if f, err := c.Current(ctx, "t1"); err != nil || f.Sequence != 20 {
		t.Errorf("Current: frame %d, %v; want frame 20", f.Sequence, err)
	}
}
