package bustest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/bus"
)

// Member is a bus cluster member running in a process of its own
// (command member), which a test can freeze and thaw with SIGSTOP and
// SIGCONT as a GC pause, a swapped VM or a partition looks to the
// others. It dies with the test, and with the test's process.
type Member struct {
	URL   string // the client URL
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

var memberBinary struct {
	once sync.Once
	path string
	err  error
}

// memberStart bounds a member's start (its build is the first's).
const memberStart = 2 * time.Minute

// StartMember starts a member with opts (they travel as JSON: no
// logger) in a process of its own, built with the race detector when
// race is true (so the test's build cache serves it).
func StartMember(t testing.TB, opts bus.Options, race bool) *Member {
	t.Helper()
	memberBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "framebus-member-")
		if err != nil {
			memberBinary.err = err
			return
		}
		memberBinary.path = filepath.Join(dir, "member")
		args := []string{"build", "-o", memberBinary.path}
		if race {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "github.com/framebus/framebus/internal/bustest/member")...).CombinedOutput()
		if err != nil {
			memberBinary.err = fmt.Errorf("build the member command: %v\n%s", err, out)
		}
	})
	if memberBinary.err != nil {
		t.Fatal(memberBinary.err)
	}
	data, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(memberBinary.path)
	cmd.Stderr = os.Stderr
	// The member dies with the test's process, even killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &Member{cmd: cmd, stdin: stdin}
	t.Cleanup(m.stop)
	if _, err := stdin.Write(append(data, '\n')); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ready:
		url, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
		if !ok {
			t.Fatalf("member %s: %q", opts.Name, line)
		}
		m.URL = url
	case <-time.After(memberStart):
		t.Fatalf("member %s did not start within %s", opts.Name, memberStart)
	}
	return m
}

// Pid is the member's process id.
func (m *Member) Pid() int { return m.cmd.Process.Pid }

// Freeze stops the member's process (SIGSTOP): its sockets stay open,
// and it answers nothing.
func (m *Member) Freeze(t testing.TB) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// Thaw lets a frozen member go on (SIGCONT).
func (m *Member) Thaw(t testing.TB) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// stop ends the member: thawed, its stdin closed, killed if it does
// not end soon.
func (m *Member) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGCONT)
	_ = m.stdin.Close()
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
}
