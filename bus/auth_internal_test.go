package bus

import (
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The node's internal identity opens no listener, even to someone who
// holds its key: over TCP and WebSocket the server refuses it, in-process
// it logs in. (As if its seed had leaked: the test signs with it.)
func TestInternalIdentityInProcessOnly(t *testing.T) {
	b, err := Start(Options{WebSocket: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, url := range []string{b.ClientURL(), b.WebSocketURL()} {
		nc, err := nats.Connect(url, b.internal.option(), nats.NoReconnect(), nats.Timeout(5*time.Second))
		if err == nil {
			nc.Close()
			t.Errorf("%s: the internal nkey logged in", url)
			continue
		}
		// Over WebSocket the server may close before the client reads
		// its -ERR: refused all the same.
		broken := errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)
		if !errors.Is(err, nats.ErrAuthorization) && !broken {
			t.Errorf("%s: %v, want an authorization violation", url, err)
		}
	}
	nc, err := b.Connect("inproc")
	if err != nil {
		t.Fatalf("in-process: %v", err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}
