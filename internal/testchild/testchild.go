// Package testchild makes the processes a test starts die with it. A
// test binary killed at its timeout (go test's -timeout, a CI job
// cancelled) runs no cleanup, so a `framebus serve` it started, and that
// node's Chromium, would keep running for good. The kernel's
// parent-death signal kills them instead.
package testchild

import (
	"os/exec"
	"syscall"
)

// DieWithTest has cmd killed when the test process ends, however it ends.
// Call it before cmd.Start. It keeps any SysProcAttr already set.
//
// The signal fires when the OS thread that started cmd exits; the Go
// runtime keeps its threads for the life of the process unless a
// goroutine that locked one ends, which the tests do not do.
func DieWithTest(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return cmd
}
