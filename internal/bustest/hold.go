package bustest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// HoldStream makes stream take nothing until the returned release: its
// subjects are taken away (over nc, a connection of the stream's
// account), so a node's store gets no ack and sends each frame again,
// and what the node publishes live runs ahead of the history.
func HoldStream(t testing.TB, ctx context.Context, nc *nats.Conn, stream jetstream.Stream) (release func()) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	taking := info.Config
	held := taking
	held.Subjects, held.SubjectTransform = []string{"framebus-test.held." + taking.Name}, nil
	if _, err := js.UpdateStream(ctx, held); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := js.UpdateStream(ctx, taking); err != nil {
			t.Fatal(err)
		}
	}
}
