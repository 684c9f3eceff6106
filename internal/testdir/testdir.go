// Package testdir makes temporary directories for tests whose browser
// runs as another account than the test (cdpdriver.DefaultBrowserUser,
// when the tests run as root).
package testdir

import (
	"os"
	"path/filepath"
	"testing"
)

// Enterable is t.TempDir made enterable and readable by other accounts
// (0755, its parent 0711), for what a browser running as another account
// is to reach: a profile directory, a file to upload. t.TempDir's own are
// the test's alone.
func Enterable(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o755}, {filepath.Dir(dir), 0o711}} {
		if err := os.Chmod(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Writable is Enterable where the browser may also write (sticky and
// world-writable, as /tmp): for a file it writes that the test reads, such
// as a net-log.
func Writable(t testing.TB) string {
	t.Helper()
	dir := Enterable(t)
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return dir
}
