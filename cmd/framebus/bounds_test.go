package main

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// loggedBound is the number serve logged at start as key=N.
func loggedBound(t *testing.T, n *node, key string) int64 {
	t.Helper()
	m := regexp.MustCompile(`\b` + key + `=(-?\d+)`).FindStringSubmatch(n.stderr.String())
	if m == nil {
		t.Fatalf("serve logged no %s at start:\n%s", key, n.stderr)
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return v
}

// The attacker's case: one agent opened 25 tabs on a node started with
// its defaults, and Chromium went from 1.45 GB to 5.4 GB. Now a node
// given no bound takes what its machine holds (printed at start), the
// 25 requests (five at a time) open tabs up to it and no further, each one
// refused says node_full, and a tab closed makes room for one more.
func TestServeBoundsTabsByDefault(t *testing.T) {
	n := startNode(t)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	bound := int(loggedBound(t, n, "maxTabs"))
	if bound < 2 || bound > 8*runtime.NumCPU() {
		t.Fatalf("serve took %d tabs by default", bound)
	}
	if staged := loggedBound(t, n, "maxStagedBytes"); staged <= 0 {
		t.Errorf("serve bounds staged files at %d bytes by default, want a bound", staged)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	bc, err := busclient.Connect(ctx, busclient.Options{CredentialsFile: n.credsFile(serving.AgentCredsFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()

	const asked = 25
	var mu sync.Mutex
	var opened []string
	full, other := 0, []error{}
	var wg sync.WaitGroup
	// Five at a time: enough to race for the last places, not so many
	// that a loaded machine's browser times out opening them.
	five := make(chan struct{}, 5)
	for range asked {
		wg.Go(func() {
			five <- struct{}{}
			defer func() { <-five }()
			tab, err := bc.NewTab(ctx, protocol.DefaultProfile, "about:blank")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				opened = append(opened, tab.Tab)
			case protocol.CodeOf(err) == protocol.CodeNodeFull:
				full++
			default:
				other = append(other, err)
			}
		})
	}
	wg.Wait()
	room := bound - 1 // the node's first tab
	through := max(0, len(opened)-room)
	t.Logf("a node bounded at %d tabs by default: %d tabs asked, five at a time, %d opened, %d refused node_full, %d through", bound, asked, len(opened), full, through)
	if len(other) > 0 {
		t.Fatalf("%d requests failed otherwise: %v", len(other), other)
	}
	if len(opened) != min(asked, room) || through != 0 {
		t.Fatalf("%d tabs opened, want %d", len(opened), min(asked, room))
	}
	// status says the bound and how much of it is taken.
	limits, _ := mustOK(t, n.env, "status")["limits"].(map[string]any)
	if limits == nil || limits["maxTabs"] != float64(bound) || limits["tabs"] != float64(1+len(opened)) || limits["maxStagedBytes"].(float64) <= 0 {
		t.Fatalf("status limits: %v; want maxTabs %d, tabs %d and a staged bytes bound", limits, bound, 1+len(opened))
	}
	if room >= asked {
		return // a machine that holds them all: nothing to refuse
	}
	if _, err := bc.NewTab(ctx, protocol.DefaultProfile, "about:blank"); protocol.CodeOf(err) != protocol.CodeNodeFull {
		t.Fatalf("a tab past the bound: %v, want node_full", err)
	}
	if _, err := bc.CloseTab(ctx, protocol.DefaultProfile, opened[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := bc.NewTab(ctx, protocol.DefaultProfile, "about:blank"); err != nil {
		t.Fatalf("a tab after one closed: %v", err)
	}
}

// Staged files are bounded for the node, all its tabs together, not only
// per tab (500 MiB each): a node configured for 3 MiB
// (files.maxStagedBytes) takes a 2 MiB upload in one tab, refuses the
// same in another with node_full (the input is left empty), and takes it
// once the first tab is closed and its files gone.
func TestServeBoundsStagedFiles(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte("files:\n  maxStagedBytes: 3145728\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, envConfig+"="+config)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	if staged := loggedBound(t, n, "maxStagedBytes"); staged != 3<<20 {
		t.Fatalf("serve logged maxStagedBytes=%d, want the configured %d", staged, 3<<20)
	}
	first := n.tab()
	second := mustOK(t, n.env, "tab", "new", site("/upload.html"))["tab"].(map[string]any)["tab"].(string)
	mustOK(t, n.env, "navigate", site("/upload.html"), "--wait", "--tab", first)
	mustOK(t, n.env, "navigate", site("/upload.html"), "--wait", "--tab", second)
	file := filepath.Join(t.TempDir(), "two.bin")
	content := make([]byte, 2<<20)
	rand.Read(content)
	if err := os.WriteFile(file, content, 0o600); err != nil {
		t.Fatal(err)
	}
	mustOK(t, n.env, "upload", "#one", file, "--tab", first)
	through := 0
	r := framebus(t, n.env, "", "upload", "#one", file, "--tab", second)
	if m := r.reply(t); r.status != 1 || m["code"] != string(protocol.CodeNodeFull) {
		through++
		t.Errorf("a second 2 MiB upload under 3 MiB for the node: exit %d, %s", r.status, r.stdout)
	}
	if got := mustOK(t, n.env, "eval", readBack, "--tab", second)["value"]; got != "none" {
		through++
		t.Errorf("the refused upload set the input: %v", got)
	}
	t.Logf("a second 2 MiB file under the node's 3 MiB: %d of 2 through", through)
	mustOK(t, n.env, "tab", "close", first)
	mustOK(t, n.env, "upload", "#one", file, "--tab", second)
	if got := mustOK(t, n.env, "eval", readBack, "--tab", second)["value"]; got != "two.bin "+sha(content) {
		t.Fatalf("after the first tab closed the page read %v", got)
	}
}
