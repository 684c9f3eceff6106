package serving

import (
	"os"
	"path/filepath"
	"testing"
)

// The state file is replaced whole, and only its own node removes it.
func TestStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "node.json")
	st := State{OK: true, Bus: "nats://127.0.0.1:4222", Prefix: "framebus", PID: 42}
	if err := WriteState(path, st); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, mode %v", err, fi.Mode())
	}
	got, err := ReadState(path)
	if err != nil || got.Bus != st.Bus || got.PID != 42 {
		t.Fatalf("ReadState = %+v, %v", got, err)
	}
	if err := removeState(path, 43); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal("another node's state file was removed")
	}
	if err := removeState(path, 42); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("state file still there: %v", err)
	}
}
