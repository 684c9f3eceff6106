package cdpdriver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/internal/xdisplay"
)

// TestMain closes the browser the tests of this package share.
func TestMain(m *testing.M) {
	if os.Getenv(launchTestChildEnv) != "" {
		launchTestChild()
		return
	}
	code := m.Run()
	launchTestShared.mu.Lock()
	if launchTestShared.proc != nil {
		launchTestShared.proc.Close()
	}
	launchTestShared.mu.Unlock()
	os.Exit(code)
}

// launchTestShared is one headless Chromium for every test that only needs
// "a browser": started by the first test that asks, closed by TestMain.
var launchTestShared struct {
	mu   sync.Mutex
	proc *Process
	err  error
}

// launchTestBrowser returns the shared headless Chromium, launching it on
// first use; tests skip when no Chromium is installed. Do not Close it.
func launchTestBrowser(t testing.TB) *Process {
	t.Helper()
	launchTestShared.mu.Lock()
	defer launchTestShared.mu.Unlock()
	if launchTestShared.proc == nil && launchTestShared.err == nil {
		launchTestShared.proc, launchTestShared.err = Launch(context.Background(), LaunchOptions{Headless: true})
	}
	if errors.Is(launchTestShared.err, ErrChromiumNotFound) {
		t.Skip(launchTestShared.err)
	}
	if launchTestShared.err != nil {
		t.Fatalf("launch shared chromium: %v", launchTestShared.err)
	}
	return launchTestShared.proc
}

// launchTestNeedChromium skips the test when no Chromium is installed.
func launchTestNeedChromium(t testing.TB) {
	t.Helper()
	if _, err := FindChromium(); err != nil {
		t.Skip(err)
	}
}

// launchTestWaitFor polls cond until it holds or the deadline passes
// (nats-server's checkFor).
func launchTestWaitFor(t testing.TB, total time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %s: %v", what, total, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// launchTestGroup lists the live processes of a process group (see
// launchTestGone) as "pid comm state" by scanning /proc.
func launchTestGroup(pgid int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, state, _, pg, ok := launchTestStat(pid)
		if ok && pg == pgid && launchTestGone(pid) != nil {
			out = append(out, fmt.Sprintf("%d %s %s", pid, comm, state))
		}
	}
	return out
}

// launchTestStat reads comm, state, ppid and pgrp from /proc/<pid>/stat.
func launchTestStat(pid int) (comm, state string, ppid, pgrp int, ok bool) {
	comm, f, ok := launchTestStatFields(pid)
	if !ok {
		return "", "", 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	pgrp, _ = strconv.Atoi(f[2])
	return comm, f[0], ppid, pgrp, true
}

// launchTestStatFields reads /proc/<pid>/stat: comm, and the fields after
// it from state on.
func launchTestStatFields(pid int) (comm string, fields []string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", nil, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 7 {
		return "", nil, false
	}
	return s[open+1 : end], f, true
}

// pfExiting is the kernel's PF_EXITING task flag: the process is in
// exit() and will not run its own code again.
const pfExiting = 0x4

// launchTestGone says whether pid no longer runs: absent, a zombie nobody
// has reaped yet, or already exiting. An exiting process has closed its
// files (which is how Close knows the group is gone) but may still show
// state R for a moment on a loaded machine.
func launchTestGone(pid int) error {
	_, f, ok := launchTestStatFields(pid)
	if !ok || f[0] == "Z" || f[0] == "X" {
		return nil
	}
	if flags, err := strconv.ParseUint(f[6], 10, 64); err == nil && flags&pfExiting != 0 {
		return nil
	}
	return fmt.Errorf("process %d is still running (state %s)", pid, f[0])
}

var launchTestWSPattern = regexp.MustCompile(`^ws://127\.0\.0\.1:(\d+)/devtools/browser/[0-9a-f-]+$`)

// launchTestCmdline is a process's command line, one argument a string.
func launchTestCmdline(t testing.TB, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// A launched browser is reached through its pipe alone: it has no
// DevTools port, and says so.
func TestLaunchHeadless(t *testing.T) {
	p := launchTestBrowser(t)
	if p.BrowserWebSocketURL() != "" || p.DevToolsURL() != "" {
		t.Errorf("BrowserWebSocketURL() = %q, DevToolsURL() = %q; want none without DebuggingPort", p.BrowserWebSocketURL(), p.DevToolsURL())
	}
	if p.Pid() <= 0 {
		t.Errorf("Pid() = %d", p.Pid())
	}
	args := launchTestCmdline(t, p.Pid())
	if !slices.Contains(args, "--remote-debugging-pipe") {
		t.Errorf("command line %q has no --remote-debugging-pipe", args)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--remote-debugging-port") || strings.HasPrefix(a, "--remote-debugging-address") {
			t.Errorf("command line has %q: the browser has a DevTools port", a)
		}
	}
	if !strings.HasPrefix(filepath.Base(p.UserDataDir()), "framebus-profile-") {
		t.Errorf("UserDataDir() = %q; want a framebus-profile-* temp dir", p.UserDataDir())
	}
	select {
	case <-p.Done():
		t.Fatal("Done() is closed while the browser runs")
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	b, err := p.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Chromium's new headless mode calls itself "Chrome/<version>" here;
	// only the old headless shell said "HeadlessChrome".
	if product, err := b.Version(ctx); err != nil || !strings.Contains(product, "Chrome/") {
		t.Errorf("Version() over the pipe = %q, %v; want Chrome/<version>", product, err)
	}
}

// With DebuggingPort (for tests that attach, as to a user's own Chrome)
// the browser also has a port the kernel chose, whose HTTP endpoint
// agrees on the websocket URL.
func TestLaunchDebuggingPort(t *testing.T) {
	launchTestNeedChromium(t)
	t.Parallel()
	p, err := Launch(context.Background(), LaunchOptions{Headless: true, DebuggingPort: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m := launchTestWSPattern.FindStringSubmatch(p.BrowserWebSocketURL())
	if m == nil {
		t.Fatalf("BrowserWebSocketURL() = %q; want ws://127.0.0.1:PORT/devtools/browser/ID", p.BrowserWebSocketURL())
	}
	if m[1] == "9222" {
		t.Errorf("port is 9222; the port must be chosen by the kernel")
	}
	if want := "http://127.0.0.1:" + m[1]; p.DevToolsURL() != want {
		t.Errorf("DevToolsURL() = %q; want %q", p.DevToolsURL(), want)
	}
	resp, err := http.Get(p.DevToolsURL() + "/json/version")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		WS string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.WS != p.BrowserWebSocketURL() {
		t.Errorf("/json/version webSocketDebuggerUrl = %q; want %q", v.WS, p.BrowserWebSocketURL())
	}
}

func TestLaunchCloseCleansUp(t *testing.T) {
	launchTestNeedChromium(t)
	// A private HOME lets us find this browser's crash handlers: they
	// detach into their own session, outside the process group.
	home := t.TempDir()
	t.Setenv("HOME", home)
	start := time.Now()
	p, err := Launch(context.Background(), LaunchOptions{Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	launched := time.Since(start)
	pid, dir := p.Pid(), p.UserDataDir()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("profile dir: %v", err)
	}
	// Chromium forks its helpers (zygote, utility, renderer) into our group.
	launchTestWaitFor(t, 10*time.Second, "chromium has helper processes", func() error {
		if g := launchTestGroup(pid); len(g) < 2 {
			return fmt.Errorf("group %d: %v", pid, g)
		}
		return nil
	})
	t.Logf("group before Close: %v", launchTestGroup(pid))
	t.Logf("crash handlers outside the group: %v", launchTestCrashpad(home))

	start = time.Now()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	closed := time.Since(start)
	t.Logf("Launch took %v, Close took %v", launched.Round(time.Millisecond), closed.Round(time.Millisecond))

	select {
	case <-p.Done():
	default:
		t.Error("Done() is not closed after Close")
	}
	if err := launchTestGone(pid); err != nil {
		t.Error(err)
	}
	if g := launchTestGroup(pid); len(g) > 0 {
		t.Errorf("processes left in group %d: %v", pid, g)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("profile dir %s still exists (%v)", dir, err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	launchTestWaitFor(t, 10*time.Second, "crash handlers exit with the browser", func() error {
		if c := launchTestCrashpad(home); len(c) > 0 {
			return fmt.Errorf("still running: %v", c)
		}
		return nil
	})
}

// launchTestCrashpad lists live crash handlers whose database is under home.
func launchTestCrashpad(home string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.ReplaceAll(string(cmdline), "\x00", " ")
		pid, _ := strconv.Atoi(e.Name())
		if strings.Contains(args, "crashpad_handler") && strings.Contains(args, home) && launchTestGone(pid) != nil {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestLaunchCloseAfterExit(t *testing.T) {
	launchTestNeedChromium(t)
	p, err := Launch(context.Background(), LaunchOptions{Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	// Kill the browser process only, as a crash would.
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done() not closed after the browser was killed")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close after exit: %v", err)
	}
	if g := launchTestGroup(p.Pid()); len(g) > 0 {
		t.Errorf("processes left in group %d: %v", p.Pid(), g)
	}
	if _, err := os.Stat(p.UserDataDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("profile dir %s still exists (%v)", p.UserDataDir(), err)
	}
}

func TestLaunchKeepsGivenUserDataDir(t *testing.T) {
	launchTestNeedChromium(t)
	dir := filepath.Join(testdir.Enterable(t), "profile")
	p, err := Launch(context.Background(), LaunchOptions{Headless: true, UserDataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if p.UserDataDir() != dir {
		t.Errorf("UserDataDir() = %q; want %q", p.UserDataDir(), dir)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// Chromium writes "Local State" as it shuts down: its presence shows
	// Close let the browser exit cleanly and kept the directory.
	if _, err := os.Stat(filepath.Join(dir, "Local State")); err != nil {
		t.Errorf("given profile dir after Close: %v", err)
	}
}

// A given profile runs one browser at a time: a second launch on it is a
// clear "profile in use" error, and works again once the first closed.
func TestLaunchProfileInUse(t *testing.T) {
	launchTestNeedChromium(t)
	dir := filepath.Join(testdir.Enterable(t), "profile")
	first, err := Launch(context.Background(), LaunchOptions{Headless: true, UserDataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Launch(context.Background(), LaunchOptions{Headless: true, UserDataDir: dir})
	if !errors.Is(err, ErrProfileInUse) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
		t.Fatalf("second launch on %s: %v, want profile in use naming the dir and the holder", dir, err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Launch(context.Background(), LaunchOptions{Headless: true, UserDataDir: dir})
	if err != nil {
		t.Fatalf("launch after the first closed: %v", err)
	}
	again.Close()
}

// TestLaunchFailures: a binary that is not Chromium gives an error quoting
// its stderr, promptly, and leaves no process and no temp profile behind.
func TestLaunchFailures(t *testing.T) {
	scripts := testdir.Enterable(t) // Chromium's account runs them
	script := func(name, body string) string {
		path := filepath.Join(scripts, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	noisy := script("noisy", "echo 'loading profile' >&2\necho 'error while loading shared libraries: libfoo.so' >&2\nexit 3")
	silent := script("silent", "exec sleep 60")
	pidfile := filepath.Join(scripts, "pid")
	if err := os.Chmod(scripts, 0o777); err != nil { // the forks script, run as Chromium's account, writes pidfile
		t.Fatal(err)
	}
	forks := script("forks", "sleep 60 &\necho $! > "+pidfile+"\necho 'waiting' >&2\nwait")

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		opts    LaunchOptions
		wantErr error    // errors.Is target, if any
		wantMsg []string // substrings of the error
	}{
		{name: "bin false", opts: LaunchOptions{Binary: "/bin/false"}, wantMsg: []string{"/bin/false", "exit status 1", "before it was ready", "wrote nothing to stderr"}},
		{name: "stderr quoted", opts: LaunchOptions{Binary: noisy}, wantMsg: []string{"exit status 3", "loading profile", "libfoo.so"}},
		{name: "missing binary", opts: LaunchOptions{Binary: filepath.Join(scripts, "nope")}, wantErr: os.ErrNotExist},
		{name: "start timeout", opts: LaunchOptions{Binary: silent, StartTimeout: 300 * time.Millisecond}, wantErr: context.DeadlineExceeded, wantMsg: []string{"no answer on its DevTools pipe after 300ms"}},
		{name: "start timeout kills the group", opts: LaunchOptions{Binary: forks, StartTimeout: 500 * time.Millisecond}, wantErr: context.DeadlineExceeded, wantMsg: []string{"waiting"}},
		{name: "cancelled context", ctx: cancelled, opts: LaunchOptions{Binary: silent}, wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := testdir.Enterable(t)
			t.Setenv("TMPDIR", tmp) // where Launch makes its temp profile
			ctx := tt.ctx
			if ctx == nil {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(context.Background(), testscale.D(20*time.Second))
				defer cancel()
			}
			start := time.Now()
			p, err := Launch(ctx, tt.opts)
			if err == nil {
				p.Close()
				t.Fatal("Launch succeeded; want an error")
			}
			t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error does not wrap %v", tt.wantErr)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error does not mention %q", m)
				}
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("temp profile left behind: %v", left)
			}
		})
	}
	if b, err := os.ReadFile(pidfile); err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err := launchTestGone(pid); err != nil {
			t.Errorf("the launched binary's child survived: %v", err)
		}
	} else {
		t.Errorf("forks script did not run: %v", err)
	}
}

// A headed browser starts and shows its pages on a real X display: an
// Xvfb server of a size no headless browser reports.
func TestLaunchHeadedUnderXvfb(t *testing.T) {
	launchTestNeedChromium(t)
	display := xdisplay.Start(t, 1234, 777)
	t.Setenv("DISPLAY", display)

	ctx := context.Background()
	p, err := Launch(ctx, LaunchOptions{Headless: false})
	if err != nil {
		t.Fatalf("headed launch on %s: %v", display, err)
	}
	defer p.Close()
	b, err := p.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	id, err := b.NewTarget(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	page, err := b.ConnectPage(ctx, id, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()
	v, err := page.Eval(ctx, "[screen.width, screen.height]", 10*time.Second)
	if err != nil || string(v) != "[1234,777]" {
		t.Fatalf("the headed page sees screen %s (%v), want Xvfb's [1234,777]", v, err)
	}
}

// launchTestChildEnv makes the test binary a child that launches Chromium,
// prints "PID DIR" and blocks, for TestLaunchDiesWithParent.
const launchTestChildEnv = "FRAMEBUS_TEST_LAUNCH_CHILD"

func launchTestChild() {
	p, err := Launch(context.Background(), LaunchOptions{Headless: true})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println(p.Pid(), p.UserDataDir())
	select {}
}

// TestLaunchDiesWithParent: when the process that launched Chromium is
// killed hard (no Close), Chromium and its helpers die too.
func TestLaunchDiesWithParent(t *testing.T) {
	launchTestNeedChromium(t)
	home := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), launchTestChildEnv+"=1", "HOME="+home)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	var pid int
	var dir string
	if _, err := fmt.Sscan(line, &pid, &dir); err != nil {
		t.Fatalf("child said %q", line)
	}
	defer os.RemoveAll(dir) // nobody called Close
	if launchTestGone(pid) == nil {
		t.Fatalf("chromium %d is not running", pid)
	}

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	launchTestWaitFor(t, 10*time.Second, "chromium dies with its parent", func() error { return launchTestGone(pid) })
	launchTestWaitFor(t, 10*time.Second, "chromium's helpers die with it", func() error {
		if g := launchTestGroup(pid); len(g) > 0 {
			return fmt.Errorf("left in group %d: %v", pid, g)
		}
		if c := launchTestCrashpad(home); len(c) > 0 {
			return fmt.Errorf("crash handlers still running: %v", c)
		}
		return nil
	})
}

// A browser killed by a signal before it was ready (a segmentation fault
// at start, seen on a loaded machine) is launched again: the first two
// runs of this wrapper crash, the third is Chromium. One that crashes
// every time is given up after the third; one that exits by itself (exit
// status) is not launched again.
func TestLaunchAgainAfterACrashAtStart(t *testing.T) {
	chromium, err := FindChromium()
	if err != nil {
		t.Fatal(err)
	}
	dir := testdir.Enterable(t) // Chromium's account runs the wrapper
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	wrapper := filepath.Join(dir, "crashes-once")
	body := fmt.Sprintf("#!/bin/sh\necho run >> %s\nif [ $(wc -l < %s) -le 2 ]; then kill -SEGV $$; fi\nexec %s \"$@\"\n", runs, runs, chromium)
	if err := os.WriteFile(wrapper, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", dir)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	p, err := Launch(ctx, LaunchOptions{Binary: wrapper, Headless: true})
	if err != nil {
		t.Fatalf("launch after a crash at start: %v", err)
	}
	p.Close()
	if data, _ := os.ReadFile(runs); strings.Count(string(data), "run") != 3 {
		t.Fatalf("the wrapper ran %d times, want 3", strings.Count(string(data), "run"))
	}

	crashes := filepath.Join(dir, "crashes")
	if err := os.WriteFile(crashes, []byte("#!/bin/sh\necho run >> "+runs+"\nkill -SEGV $$\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(runs); err != nil {
		t.Fatal(err)
	}
	if _, err := Launch(ctx, LaunchOptions{Binary: crashes, Headless: true}); err == nil || !strings.Contains(err.Error(), "segmentation fault") {
		t.Fatalf("a binary that always crashes: %v", err)
	}
	if data, _ := os.ReadFile(runs); strings.Count(string(data), "run") != launchTries {
		t.Fatalf("a binary that always crashes ran %d times, want %d", strings.Count(string(data), "run"), launchTries)
	}

	exits := filepath.Join(dir, "exits")
	if err := os.WriteFile(exits, []byte("#!/bin/sh\necho run >> "+runs+"\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(runs); err != nil {
		t.Fatal(err)
	}
	if _, err := Launch(ctx, LaunchOptions{Binary: exits, Headless: true}); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("a binary that exits: %v", err)
	}
	if data, _ := os.ReadFile(runs); strings.Count(string(data), "run") != 1 {
		t.Fatalf("a binary that exits by itself ran %d times, want 1", strings.Count(string(data), "run"))
	}
}
