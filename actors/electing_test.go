package actors

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A cluster's first start elects JetStream's leader only once every
// member in its routes is up, and until then the JetStream API answers
// 503. A node on a member of a cluster whose last member is not up yet
// waits for it within its caller's deadline; past it the error is
// unavailable and says what it waited for (it was internal, the 503,
// after a fixed 30 s). Once the last member comes up, the node starts.
func TestHistoryWaitsForTheClusterToForm(t *testing.T) {
	t.Parallel() // its own cluster
	listen, routes := bustest.ClusterRoutes(t, 3)
	start := func(i int) *bus.Bus {
		b, err := bus.Start(bus.Options{Name: fmt.Sprintf("s%d", i+1), JetStream: &bus.JetStreamOptions{},
			Cluster: &bus.ClusterOptions{Listen: listen[i], Routes: routes, Secret: "electing-cluster-secret"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	start(0)
	second := start(1)
	nc, err := second.Connect("node")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	history := func(ctx context.Context, log zerolog.Logger) (*History, error) {
		return StartHistory(ctx, nc, protocol.DefaultSubjects, HistoryOptions{Replicas: 3}, log)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(4*time.Second))
	_, err = history(ctx, zerolog.Nop())
	cancel()
	if protocol.CodeOf(err) != protocol.CodeUnavailable || !strings.Contains(err.Error(), "every member listed in its routes") {
		t.Fatalf("the history with two of three members up, on the cluster's first start: %v (code %s); want unavailable, saying what it waits for", err, protocol.CodeOf(err))
	}

	// The last member comes up once the node says it waits for it.
	started, waits := make(chan error, 1), make(chan struct{})
	said := sync.OnceFunc(func() { close(waits) })
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		defer cancel()
		h, err := history(ctx, zerolog.New(writerFunc(func(p []byte) (int, error) { said(); return len(p), nil })))
		if err == nil && h.Stream().CachedInfo().Config.Replicas != 3 {
			err = fmt.Errorf("the frame stream has %d replicas", h.Stream().CachedInfo().Config.Replicas)
		}
		started <- err
	}()
	select {
	case <-waits:
	case err := <-started:
		t.Fatalf("the history with the last member not up yet: %v; want it to wait, and say so", err)
	}
	start(2)
	if err := <-started; err != nil {
		t.Fatalf("the history once the last member is up: %v", err)
	}
}

// writerFunc is an io.Writer of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
