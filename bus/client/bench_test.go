package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/testscale"
)

// stored is how many frames of tab t1 the replay benchmarks store.
const stored = 10_000

// storedFrames stores n frames of t1 interleaved with n of another tab,
// and connects a client over TCP.
func storedFrames(b *testing.B, n int64) *client.Client {
	s := testServer(b)
	node := nodeConn(b, s)
	js := frameHistory(b, node, 2*n)
	for seq := int64(1); seq <= n; seq++ {
		publish(b, node, frame("t1", seq))
		publish(b, node, frame("other", seq))
	}
	awaitStored(b, js, uint64(2*n))
	return connect(b, s.ClientURL(), nil, nil)
}

// BenchmarkReplay replays 10,000 stored frames of one tab (interleaved
// with another tab's) to a new observer over TCP: frames/s.
func BenchmarkReplay(b *testing.B) {
	c := storedFrames(b, stored)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		n := 0
		err := c.Frames(ctx, "t1", 1, 0, func(client.Frame) error { n++; return nil })
		cancel()
		if err != nil || n != stored {
			b.Fatalf("replayed %d frames: %v", n, err)
		}
	}
	b.ReportMetric(float64(stored*b.N)/time.Since(start).Seconds(), "frames/s")
}

// BenchmarkReplayFromLate finds frame 9,990 among 10,000 stored and
// replays the last 11: the cost of finding where a late start begins.
func BenchmarkReplayFromLate(b *testing.B) {
	c := storedFrames(b, stored)
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		n := 0
		err := c.Frames(ctx, "t1", stored-10, 0, func(client.Frame) error { n++; return nil })
		cancel()
		if err != nil || n != 11 {
			b.Fatalf("replayed %d frames: %v", n, err)
		}
	}
}

// BenchmarkWatchReplay watches t1 from frame 1 with 1,000 frames stored
// (interleaved with another tab's) until the last stored one has come:
// the replay part of a watch, frames/s.
func BenchmarkWatchReplay(b *testing.B) {
	const n = 1000
	c := storedFrames(b, n)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		w, err := c.Watch(ctx, "t1", 1)
		if err != nil {
			b.Fatal(err)
		}
		for want := int64(1); want <= n; want++ {
			if f := next(b, w); f.Sequence != want {
				b.Fatalf("frame %d, want %d", f.Sequence, want)
			}
		}
		w.Stop()
		cancel()
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "frames/s")
}

// BenchmarkWatchStart starts a watch of t1 from frame 600 of 1,000
// stored and waits for that first frame: the cost of finding where a
// watch begins.
func BenchmarkWatchStart(b *testing.B) {
	const n = 1000
	c := storedFrames(b, n)
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		w, err := c.Watch(ctx, "t1", 600)
		if err != nil {
			b.Fatal(err)
		}
		if f := next(b, w); f.Sequence != 600 {
			b.Fatalf("first frame %d, want 600", f.Sequence)
		}
		w.Stop()
		cancel()
	}
}
