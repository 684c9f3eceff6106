package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/framebus/framebus/bus/client"
)

// BenchmarkReplay replays 10,000 stored frames of one tab (interleaved
// with another tab's) to a new observer over TCP: frames/s.
func BenchmarkReplay(b *testing.B) {
	const stored = 10_000
	s := testServer(b)
	node := nodeConn(b, s)
	js := frameHistory(b, node, 2*stored)
	for seq := int64(1); seq <= stored; seq++ {
		publish(b, node, frame("t1", seq))
		publish(b, node, frame("other", seq))
	}
	awaitStored(b, js, 2*stored)
	c := connect(b, s.ClientURL(), nil, nil)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	const stored = 10_000
	s := testServer(b)
	node := nodeConn(b, s)
	js := frameHistory(b, node, 2*stored)
	for seq := int64(1); seq <= stored; seq++ {
		publish(b, node, frame("t1", seq))
		publish(b, node, frame("other", seq))
	}
	awaitStored(b, js, 2*stored)
	c := connect(b, s.ClientURL(), nil, nil)
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		n := 0
		err := c.Frames(ctx, "t1", stored-10, 0, func(client.Frame) error { n++; return nil })
		cancel()
		if err != nil || n != 11 {
			b.Fatalf("replayed %d frames: %v", n, err)
		}
	}
}
