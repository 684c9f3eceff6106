//go:build race

package client_test

// raceEnabled: the tests run with the race detector, and so are the
// processes they build (the build cache then serves them).
const raceEnabled = true
