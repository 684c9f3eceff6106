//go:build race

package main

// raceEnabled: the test binary runs with the race detector, so the
// framebus binary under test is built with it too.
const raceEnabled = true
