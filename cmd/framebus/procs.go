package main

import (
	"os"
	"runtime"
)

// leaveCoresToChromium gives the Go runtime half the CPUs (at least one)
// unless $GOMAXPROCS says otherwise. A node's own work is waiting on
// sockets; the CPU-heavy part of every action runs in Chromium's browser
// and renderer processes. With a P per core, idle Go threads spin and wake
// each other across cores at every bus hop and take CPU from Chromium:
// measured on a 2-core machine (BenchmarkEvalRoundTrip), one P made the
// raw CDP round trip ~12% faster and the bus path ~15% faster than two.
func leaveCoresToChromium() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(max(1, runtime.NumCPU()/2))
}
