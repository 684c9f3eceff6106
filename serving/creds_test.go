package serving

import (
	"os"
	"path/filepath"
	"testing"
)

// serve makes the credentials' directory private, but not the user's
// home when the state file is there.
func TestCredentialsDirectoryIsNotTheHome(t *testing.T) {
	home := t.TempDir()
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	if err := PrivateDir(home); err == nil {
		t.Errorf("PrivateDir(home) gave no warning")
	}
	checkMode(t, home, 0o755|os.ModeDir)
	own := filepath.Join(home, "state")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := PrivateDir(own); err != nil {
		t.Fatal(err)
	}
	checkMode(t, own, 0o700|os.ModeDir)
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModeDir | os.ModePerm); got != want {
		t.Errorf("%s: mode %s, want %s", path, got, want)
	}
}
