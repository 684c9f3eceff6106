package bus

import (
	"fmt"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testscale"
)

// checkFor polls cond until it returns nil or timeout passes, as nats-server's
// tests do; it never sleeps hoping something happened.
func checkFor(t *testing.T, timeout, every time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(testscale.D(timeout))
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(every)
	}
	t.Fatal(err)
}

func TestClosedConnectionsLeaveTheTrackingSet(t *testing.T) {
	b, err := Start(Options{NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	keep, err := b.Connect("keep")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		nc, err := b.Connect("short")
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
	}
	checkFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if n := b.conns.count(); n != 1 {
			return fmt.Errorf("%d connections tracked, want 1", n)
		}
		return nil
	})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !keep.IsClosed() {
		t.Fatal("kept connection open after Close")
	}
}
