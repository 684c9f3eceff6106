// Package xdisplay gives tests a real X display: an Xvfb server of their
// own, and xdotool to act on it as a person would (real X input through
// the XTEST extension, which no page or DevTools client can tell from a
// keyboard's or a mouse's).
//
//	display := xdisplay.Start(t, 1280, 800) // sets nothing; pass it on
//	t.Setenv("DISPLAY", display)
//	xdisplay.Do(t, display, "key", "ctrl+l")
//
// Access: Xvfb runs without an authorization file, so it accepts every
// connection from this machine (its host list starts with the local
// host) and none from the network (-nolisten tcp). That is what lets a
// browser running as another account (cdpdriver's framebus-browser, when
// the tests run as root) open its windows on it: see docs/security.md.
package xdisplay

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testchild"
)

// startTimeout bounds how long Xvfb may take to say which display it took.
const startTimeout = 10 * time.Second

// Start starts an Xvfb server with one screen of width x height (24-bit
// colour), stopped when the test ends, and returns its display (":N").
// The test fails when Xvfb is not installed (.ci/run installs it).
func Start(t testing.TB, width, height int) string {
	t.Helper()
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Fatal("no X display can be made here: Xvfb is missing (apt-get install xvfb; .ci/run installs it)")
	}
	// Xvfb picks a free display itself and writes its number to the
	// pipe (-displayfd): display numbers a killed server left behind, or
	// another test's, are never guessed at.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	x := testchild.DieWithTest(exec.Command(xvfb, "-displayfd", "3", "-screen", "0", strconv.Itoa(width)+"x"+strconv.Itoa(height)+"x24", "-nolisten", "tcp"))
	x.ExtraFiles = []*os.File{w}
	if err := x.Start(); err != nil {
		w.Close()
		t.Fatal(err)
	}
	w.Close()
	// Terminated, not killed, so it removes its socket and lock file.
	t.Cleanup(func() { _ = x.Process.Signal(syscall.SIGTERM); _ = x.Wait() })
	number := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		number <- strings.TrimSpace(line)
	}()
	select {
	case n := <-number:
		if _, err := strconv.Atoi(n); err != nil {
			t.Fatalf("Xvfb did not say which display it took (%q)", n)
		}
		return ":" + n
	case <-time.After(startTimeout):
		t.Fatalf("Xvfb did not start a display within %s", startTimeout)
	}
	return ""
}

// doTimeout bounds one xdotool command.
const doTimeout = 20 * time.Second

// Do runs xdotool with args on display, as a person at its keyboard and
// mouse; the test fails when it fails (or xdotool is not installed:
// .ci/run installs it).
func Do(t testing.TB, display string, args ...string) {
	t.Helper()
	tool, err := exec.LookPath("xdotool")
	if err != nil {
		t.Fatal("no X input can be made here: xdotool is missing (apt-get install xdotool; .ci/run installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("xdotool %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
