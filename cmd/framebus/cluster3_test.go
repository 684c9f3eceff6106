package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// busMember is a framebus bus process: one member of the cluster, no
// browser.
type busMember struct {
	*process
	state busState
}

// startBusMember runs framebus bus as the cluster member listen with
// name and store (its JetStream directory, kept over a restart).
func startBusMember(t *testing.T, name, config, store string) *busMember {
	t.Helper()
	m := &busMember{process: startProcess(t, testEnv(envConfig+"="+config), "bus", "--node", name, "--store", store)}
	var line string
	waitFor(t, "bus prints its first line", 60*time.Second, func() bool {
		if m.exited() {
			t.Fatalf("bus exited early: %v\nstdout: %s\nstderr: %s", m.err, m.stdout, m.stderr)
		}
		first, err := bufio.NewReader(strings.NewReader(m.stdout.String())).ReadString('\n')
		line = first
		return err == nil
	})
	if err := json.Unmarshal([]byte(line), &m.state); err != nil || !m.state.OK || m.state.Name != name {
		t.Fatalf("bus's first line %q: %v", line, err)
	}
	return m
}

// credentialsAt writes creds (read from file) with the bus URL url, for a
// client of another member of the cluster.
func credentialsAt(t *testing.T, file, url string) string {
	t.Helper()
	creds, err := serving.ReadCredentials(file)
	if err != nil {
		t.Fatal(err)
	}
	creds.URL = url
	out := filepath.Join(t.TempDir(), filepath.Base(file))
	if err := serving.WriteCredentials(out, creds); err != nil {
		t.Fatal(err)
	}
	return out
}

// frameLines decodes watch's output, one frame per line.
func frameLines(t *testing.T, out string) []protocol.Frame {
	t.Helper()
	var frames []protocol.Frame
	for line := range strings.Lines(out) {
		var f protocol.Frame
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			continue // a line still being written
		}
		frames = append(frames, f)
	}
	return frames
}

// framebus bus is a cluster member or nothing: without --cluster, or
// without the routes' secret (in a file only its owner reads), it
// refuses to start and says why.
func TestBusNeedsACluster(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("a-secret-the-members-share\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(t.TempDir(), "open-secret")
	if err := os.WriteFile(open, []byte("a-secret-the-members-share\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bus", "--cluster", "127.0.0.1:0", "--cluster-secret-file", open}, "chmod 600 it"},
		{[]string{"bus"}, "--cluster (bus.cluster.listen) is required"},
		{[]string{"bus", "--cluster", "127.0.0.1:0"}, "needs the secret its routes log in with"},
		{[]string{"bus", "--cluster", "127.0.0.1:0", "--cluster-secret-file", "/nonexistent/secret"}, "bus.cluster.secretFile"},
		{[]string{"bus", "--cluster", "10.1.2.3:6222", "--cluster-secret-file", secret}, "is not a loopback address"},
		{[]string{"bus", "extra"}, "takes no arguments"},
	} {
		r := framebus(t, testEnv(), "", c.args...)
		if r.status != 2 || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("framebus %q: exit %d, %s %s; want exit 2 saying %q", c.args, r.status, r.stdout, r.stderr, c.want)
		}
	}
}
