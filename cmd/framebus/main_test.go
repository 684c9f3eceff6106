package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// The tests run the framebus binary as real processes against real NATS
// and real Chromium, as a user would. TestMain builds it once.
var (
	binary   string
	testSite *httptest.Server
)

func TestMain(m *testing.M) {
	if job := os.Getenv(devtoolsProbeEnv); job != "" {
		os.Exit(runDevToolsProbe(job))
	}
	if job := os.Getenv(serveBenchClientEnv); job != "" {
		os.Exit(runServeBenchClient(job))
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "framebus-cmd-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Chromium keeps its crash database under XDG_CONFIG_HOME, outside
	// its profile.
	if testConfigHome, err = os.MkdirTemp("", "framebus-config-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(testConfigHome)
	// Nor may they read or leave the machine's cache: the default state
	// file and the credentials a node keeps beside it (a command with
	// --bus still reads the default credentials file, and one left by a
	// node started by hand made it log in as that node's agent).
	if testCacheHome, err = os.MkdirTemp("", "framebus-cache-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(testCacheHome)
	binDir = dir
	binary = filepath.Join(dir, "framebus")
	if err := buildFramebus(binary, raceEnabled); err != nil {
		fmt.Fprintln(os.Stderr, "build framebus:", err)
		return 1
	}
	testSite = httptest.NewServer(http.FileServer(http.Dir("../../testdata/site")))
	defer testSite.Close()
	return m.Run()
}

// binDir holds the binaries the tests build.
var binDir string

// buildFramebus builds the framebus command into path, with the race
// detector or without.
func buildFramebus(path string, race bool) error {
	args := []string{"build", "-o", path}
	if race {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	return build.Run()
}

// plainBinary is framebus built without the race detector, for the tests
// that measure a node's memory: the detector's own bookkeeping is many
// times a node's heap and is not handed back as the heap is. Built once,
// when first asked for.
var plainBinary = sync.OnceValues(func() (string, error) {
	if !raceEnabled {
		return binary, nil
	}
	path := filepath.Join(binDir, "framebus-plain")
	return path, buildFramebus(path, false)
})

// site returns the URL of a page of testdata/site.
func site(path string) string { return testSite.URL + path }

// testEnv is the environment of a framebus process: this one's, minus
// anything that would point it at another node, plus extra.
func testEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, envURL+"=") || strings.HasPrefix(kv, envState+"=") || strings.HasPrefix(kv, "GORACE=") ||
			strings.HasPrefix(kv, "FRAMEBUS_") && !strings.HasPrefix(kv, "FRAMEBUS_CHROMIUM=") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=") || strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			continue // nor any configuration of the machine's own
		}
		env = append(env, kv)
	}
	if raceEnabled {
		// The race runtime otherwise sleeps a second before every exit.
		env = append(env, strings.TrimSpace("GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	env = append(env, "XDG_CONFIG_HOME="+testConfigHome, "XDG_CACHE_HOME="+testCacheHome)
	return append(env, extra...)
}

// testCacheHome is the processes' cache directory (XDG_CACHE_HOME), so
// the default state file is the tests' own.
var testCacheHome string

// testConfigHome is an empty configuration directory for the processes
// the tests start, so a config.yaml of the machine's cannot change them.
// runTests makes it (not package init: the test binary also runs as a
// probe of another user, which must leave nothing behind).
var testConfigHome string

// result is what a finished framebus process left.
type result struct {
	stdout, stderr string
	status         int
}

// reply decodes the last line of stdout as a JSON object.
func (r result) reply(t *testing.T) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\nstdout: %s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return m
}

// framebus runs the binary to completion (at most two minutes).
func framebus(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	return framebusIn(t, "", env, stdin, args...)
}

// framebusIn runs the binary in the working directory dir ("" for the
// test's own).
func framebusIn(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	cmd := testchild.DieWithTest(exec.CommandContext(ctx, binary, args...))
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		t.Fatalf("framebus %q did not finish within the deadline\nstdout: %s\nstderr: %s", args, r.stdout, r.stderr)
	case errors.As(err, &exit):
		r.status = exit.ExitCode()
	default:
		t.Fatalf("framebus %q: %v", args, err)
	}
	return r
}

// mustOK runs a command that must succeed and returns its reply.
func mustOK(t *testing.T, env []string, args ...string) map[string]any {
	t.Helper()
	r := framebus(t, env, "", args...)
	m := r.reply(t)
	if r.status != 0 || m["ok"] != true {
		t.Fatalf("framebus %q: exit %d\nstdout: %s\nstderr: %s", args, r.status, r.stdout, r.stderr)
	}
	return m
}

// lockedBuffer collects a process's output while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is a framebus process that keeps running: serve or watch.
type process struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan struct{} // closed when it exited
	err    error         // cmd.Wait's result, once done
}

func startProcess(t testing.TB, env []string, args ...string) *process {
	t.Helper()
	return startProcessOf(t, binary, env, args...)
}

// startProcessOf is startProcess running the framebus binary at bin.
func startProcessOf(t testing.TB, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{t: t, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = testchild.DieWithTest(exec.Command(bin, args...))
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			p.stop(syscall.SIGTERM, 30*time.Second)
		}
		if t.Failed() {
			t.Logf("framebus %q stdout:\n%s\nstderr:\n%s", args, p.stdout, p.stderr)
		}
	})
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits for the exit; past the deadline it kills the
// process and fails the test. It returns the exit status.
func (p *process) stop(sig syscall.Signal, deadline time.Duration) int {
	p.t.Helper()
	_ = p.cmd.Process.Signal(sig)
	deadline = testscale.D(deadline)
	select {
	case <-p.done:
	case <-time.After(deadline):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Errorf("framebus did not exit within %s of %s", deadline, sig)
	}
	return p.cmd.ProcessState.ExitCode()
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, deadline time.Duration, cond func() bool) {
	t.Helper()
	deadline = testscale.D(deadline)
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s", what, deadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// node is a running "framebus serve" with its own state file.
type node struct {
	*process
	state     serving.State
	stateFile string
	env       []string // finds this node through the state file
}

// startNode runs framebus serve with extra environment variables.
func startNode(t testing.TB, extra ...string) *node {
	t.Helper()
	return startNodeOf(t, binary, extra...)
}

// startNodeOf is startNode running the framebus binary at bin.
func startNodeOf(t testing.TB, bin string, extra ...string) *node {
	t.Helper()
	n := launchNode(t, bin, extra...)
	n.ready(t)
	return n
}

// launchNode starts framebus serve at bin without waiting for it (nodes
// of one cluster start together: JetStream's cluster needs its members).
func launchNode(t testing.TB, bin string, extra ...string) *node {
	t.Helper()
	stateFile := filepath.Join(t.TempDir(), "node.json")
	env := testEnv(append([]string{envState + "=" + stateFile}, extra...)...)
	return &node{process: startProcessOf(t, bin, env, "serve"), stateFile: stateFile, env: env}
}

// ready waits for serve's first line and reads the node's state from it.
func (n *node) ready(t testing.TB) {
	t.Helper()
	p := n.process
	var line string
	waitFor(t, "serve prints its first line", 60*time.Second, func() bool {
		if p.exited() {
			t.Fatalf("serve exited early: %v\nstdout: %s\nstderr: %s", p.err, p.stdout, p.stderr)
		}
		first, err := bufio.NewReader(strings.NewReader(p.stdout.String())).ReadString('\n')
		line = first
		return err == nil
	})
	if err := json.Unmarshal([]byte(line), &n.state); err != nil {
		t.Fatalf("serve's first line %q: %v", line, err)
	}
	bus, err := url.Parse(n.state.Bus) // a node on another's bus has its login in it
	// One tab of the default profile; a node started again may list its
	// sessions' tabs too (it runs them again as it starts).
	defaults := slices.DeleteFunc(slices.Clone(n.state.Tabs), func(tab protocol.TabInfo) bool { return tab.Profile != protocol.DefaultProfile })
	if err != nil || !n.state.OK || bus.Scheme != "nats" || bus.Hostname() != "127.0.0.1" || len(defaults) != 1 {
		t.Fatalf("serve's first line: %s", line)
	}
}

// tab is the node's first tab, of the default profile.
func (n *node) tab() string {
	i := slices.IndexFunc(n.state.Tabs, func(tab protocol.TabInfo) bool { return tab.Profile == protocol.DefaultProfile })
	return n.state.Tabs[i].Tab
}

// chromiumProfile finds the --user-data-dir of the Chromium that process
// pid started, from /proc.
func chromiumProfile(t *testing.T, pid int) string {
	t.Helper()
	for _, child := range childProcesses(pid) {
		for _, arg := range cmdline(child) {
			if dir, ok := strings.CutPrefix(arg, "--user-data-dir="); ok {
				return dir
			}
		}
	}
	t.Fatalf("no chromium child of process %d with --user-data-dir", pid)
	return ""
}

// childProcesses lists the processes whose parent is pid.
func childProcesses(pid int) []int {
	var out []int
	for _, p := range allProcesses() {
		if parent, ok := parentOf(p); ok && parent == pid {
			out = append(out, p)
		}
	}
	return out
}

// processesMentioning lists the processes whose command line contains s.
func processesMentioning(s string) []int {
	var out []int
	for _, p := range allProcesses() {
		for _, arg := range cmdline(p) {
			if strings.Contains(arg, s) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func allProcesses() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err == nil && fmt.Sprint(pid) == e.Name() {
			out = append(out, pid)
		}
	}
	return out
}

func cmdline(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}

// readLines splits output into its complete lines.
func readLines(s string) []string {
	var out []string
	r := bufio.NewReader(strings.NewReader(s))
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			return out
		}
		out = append(out, strings.TrimRight(line, "\n"))
	}
}
