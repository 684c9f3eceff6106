// Command member runs one member of a framebus bus cluster in a process
// of its own, for tests that freeze a member (SIGSTOP stops a whole
// process, so the test's own members cannot be frozen one at a time).
// It reads its bus.Options as JSON on its first line of stdin, starts
// the bus, prints "ready <client URL>" and runs until stdin ends. See
// bustest.StartMember.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/framebus/framebus/bus"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "member: options:", err)
		os.Exit(2)
	}
	var opts bus.Options
	if err := json.Unmarshal(line, &opts); err != nil {
		fmt.Fprintln(os.Stderr, "member: options:", err)
		os.Exit(2)
	}
	b, err := bus.Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		os.Exit(1)
	}
	fmt.Println("ready", b.ClientURL())
	_, _ = io.Copy(io.Discard, in) // until the test closes stdin, or dies
	b.Close()
}
