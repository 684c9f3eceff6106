package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // the request failed; stdout has {"ok":false,...}
	exitUsage  = 2 // the command line is wrong; stdout has code bad_request
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A closed stdout (framebus demo | head) must not kill the process
	// before it has stopped Chromium: writes then fail with EPIPE instead.
	signal.Ignore(syscall.SIGPIPE)
	leaveCoresToChromium()
	c := &cli{
		ctx:         ctx,
		stopSignals: stop,
		stdin:       os.Stdin,
		stdout:      os.Stdout,
		stderr:      os.Stderr,
		getenv:      os.Getenv,
	}
	status := c.run(os.Args[1:])
	stop()
	os.Exit(status)
}

// cli is one invocation: where it reads and writes, and how it ends.
type cli struct {
	ctx context.Context // cancelled by SIGINT or SIGTERM
	// stopSignals restores the default signal handling, so a second
	// Ctrl-C during a slow shutdown ends the process at once.
	stopSignals func()
	stdin       io.Reader
	stdout      io.Writer
	stderr      io.Writer
	getenv      func(string) string
}

// usageError is a wrong command line: exit status 2, code bad_request.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errReported means the command already printed its failure reply; the
// exit status is 1.
var errReported = errors.New("failure already reported")

// run executes one command line and returns the exit status.
func (c *cli) run(args []string) int {
	return c.report(c.dispatch(args))
}

// report prints a command's failure as its reply and returns the exit
// status.
func (c *cli) report(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errReported):
		return exitFailed
	}
	var usage *usageError
	if errors.As(err, &usage) {
		c.printJSON(errorReply{Error: usage.msg, Code: protocol.CodeBadRequest})
		return exitUsage
	}
	// Options a node cannot start with are a usage error too.
	var options *serving.OptionsError
	if errors.As(err, &options) {
		c.printJSON(errorReply{Error: options.Msg, Code: protocol.CodeBadRequest})
		return exitUsage
	}
	c.printJSON(errorReply{Error: err.Error(), Code: protocol.CodeOf(err)})
	return exitFailed
}

func (c *cli) dispatch(args []string) error {
	if len(args) == 0 {
		c.printHelp(c.stderr)
		return usagef("no command given; run: framebus help")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "--help":
		name = "help"
	}
	cmd, ok := lookupCommand(name)
	if !ok {
		return usagef("unknown command %q; run: framebus help", name)
	}
	return c.runCommand(cmd, rest)
}
