package client_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A credentials file that cannot be read is no refusal: a missing one is
// unavailable (its node has not started), one that is not JSON
// bad_request; permission_denied is the system's or the bus's refusal
// only.
func TestCredentialsFileFaultsAreNoRefusal(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "malformed.json")
	if err := os.WriteFile(malformed, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	for path, want := range map[string]protocol.Code{
		filepath.Join(dir, "missing.json"): protocol.CodeUnavailable,
		malformed:                          protocol.CodeBadRequest,
	} {
		c, err := client.Connect(ctx, client.Options{CredentialsFile: path})
		if c != nil {
			c.Close()
		}
		if protocol.CodeOf(err) != want {
			t.Errorf("Connect with credentials file %s: %v (%s); want %s", filepath.Base(path), err, protocol.CodeOf(err), want)
		}
	}
}
