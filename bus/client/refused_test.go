package client_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// The bus comes back on its port with the user's password changed (serve
// --rotate-credentials) while a client watches: nats gives up after the
// second refused login, and the watch and a call made then end with
// permission_denied, naming the refusal, as Connect says it, not
// unavailable "the node may have stopped" (which a script would retry
// for ever).
func TestRotatedPasswordIsARefusal(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, -1, dir, &server.User{Username: "agent", Password: "the-first-password"})
	port := s.Addr().(*net.TCPAddr).Port
	creds := &protocol.Credentials{User: "agent", Password: "the-first-password"}
	c := connect(t, s.ClientURL(), creds, nil)
	w, err := c.Watch(context.Background(), "t1", client.FromNext)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	s.Shutdown()
	s.WaitForShutdown()
	startServer(t, port, dir, &server.User{Username: "agent", Password: "a-rotated-password"})
	deadline := time.After(testscale.D(wait))
	for ended := false; !ended; {
		select {
		case _, ok := <-w.Frames():
			ended = !ok
		case <-deadline:
			t.Fatal("the watch did not end")
		}
	}
	if err := w.Err(); codeOf(err) != protocol.CodePermissionDenied || !strings.Contains(err.Error(), "refused") {
		t.Errorf("the watch ended with %v (code %q), want permission_denied", err, codeOf(err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(wait))
	defer cancel()
	if _, err := c.Plan(ctx, "t1", evalPlan("after-rotation")); codeOf(err) != protocol.CodePermissionDenied {
		t.Errorf("a plan after the refusal: %v (code %q), want permission_denied", err, codeOf(err))
	}
}
