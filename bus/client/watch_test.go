package client_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
)

// An observer that comes after 50 frames replays all 50 (the large
// content of one inlined from the content bucket), then follows live
// frames without gap or duplicate; from 0 starts at the current frame,
// and from 20 at frame 20, wherever it lies in the stream.
func TestWatchReplaysThenFollows(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	js := frameHistory(t, node, 1000)
	large := strings.Repeat("large content ", 100_000) // 1.4 MB: more than one message of the default 1 MiB
	for seq := int64(1); seq <= 50; seq++ {
		if seq == 25 {
			publishLarge(t, node, js, frame("t1", seq), large)
		} else {
			publish(t, node, frame("t1", seq))
		}
		publish(t, node, frame("other", seq)) // interleaved: stream sequences are not frame sequences
	}
	publish(t, node, frame("t1", 50)) // published twice, stored once
	awaitStored(t, js, 100)

	c := connect(t, s.ClientURL(), nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	w, err := c.Watch(ctx, "t1", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for seq := int64(1); seq <= 50; seq++ {
		f := next(t, w)
		if f.Tab != "t1" || f.Sequence != seq {
			t.Fatalf("frame %s/%d, want t1/%d", f.Tab, f.Sequence, seq)
		}
		if seq == 25 && (f.FullPage == nil || *f.FullPage != large || f.FullPageRef != nil || f.ContentErr != nil ||
			!strings.Contains(string(f.Data), `"fullPage":"large content`)) {
			t.Fatalf("frame 25's content was not inlined: ref %+v, err %v", f.FullPageRef, f.ContentErr)
		}
	}
	for seq := int64(51); seq <= 60; seq++ {
		publish(t, node, frame("t1", seq))
		publish(t, node, frame("t1", seq-1)) // a duplicate the stream drops
	}
	for seq := int64(51); seq <= 60; seq++ {
		if f := next(t, w); f.Sequence != seq {
			t.Fatalf("live frame %d, want %d", f.Sequence, seq)
		}
	}

	for _, tc := range []struct{ from, first int64 }{{0, 60}, {20, 20}, {60, 60}} {
		w, err := c.Watch(ctx, "t1", tc.from)
		if err != nil {
			t.Fatal(err)
		}
		if f := next(t, w); f.Sequence != tc.first {
			t.Errorf("watch from %d began at frame %d, want %d", tc.from, f.Sequence, tc.first)
		}
		w.Stop()
	}
}

// Frames prints what is stored between two sequences and returns;
// Current reads the last frame without a replay.
func TestFramesAndCurrent(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	js := frameHistory(t, node, 1000)
	for seq := int64(1); seq <= 30; seq++ {
		publish(t, node, frame("t1", seq))
	}
	awaitStored(t, js, 30)
	c := connect(t, s.ClientURL(), nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	for _, tc := range []struct{ from, to, first, last int64 }{{0, 0, 1, 30}, {5, 9, 5, 9}, {28, 100, 28, 30}} {
		var got []int64
		err := c.Frames(ctx, "t1", tc.from, tc.to, func(f client.Frame) error {
			got = append(got, f.Sequence)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != int(tc.last-tc.first+1) || got[0] != tc.first || got[len(got)-1] != tc.last {
			t.Errorf("frames %d..%d: got %v, want %d..%d", tc.from, tc.to, got, tc.first, tc.last)
		}
	}
	cur, err := c.Current(ctx, "t1")
	if err != nil || cur.Sequence != 30 {
		t.Fatalf("current: %d, %v", cur.Sequence, err)
	}
	if _, err := c.Current(ctx, "nosuch"); codeOf(err) != protocol.CodeTabNotFound {
		t.Fatalf("current of a tab with no frames: %v", err)
	}
}

// Frames expired from the history before a watch read them are a gap
// event, not hidden.
func TestWatchReportsExpiredFrames(t *testing.T) {
	s := testServer(t)
	node := nodeConn(t, s)
	js := frameHistory(t, node, 10) // keeps the last 10 frames of a tab
	for seq := int64(1); seq <= 30; seq++ {
		publish(t, node, frame("t1", seq))
	}
	awaitStored(t, js, 10)
	var mu sync.Mutex
	var gaps []client.Event
	c := connect(t, s.ClientURL(), nil, func(e client.Event) {
		if e.Kind == client.EventGap {
			mu.Lock()
			gaps = append(gaps, e)
			mu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	w, err := c.Watch(ctx, "t1", 5)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if f := next(t, w); f.Sequence != 21 {
		t.Fatalf("first frame %d, want 21 (the first kept)", f.Sequence)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(gaps) != 1 || gaps[0].Tab != "t1" || gaps[0].From != 5 || gaps[0].To != 20 {
		t.Fatalf("gap events %+v, want one for t1 5..20", gaps)
	}
}
