package cdpdriver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindChromiumEnv(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "my-chromium")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "does-not-exist")

	tests := []struct {
		name    string
		env     string
		want    string // the path returned; "" means an error is expected
		wantMsg []string
	}{
		{name: "valid path", env: exe, want: exe},
		{name: "missing path", env: missing, wantMsg: []string{missing, "FRAMEBUS_CHROMIUM", `apt-get install -y chromium`}},
		{name: "not executable", env: plain, wantMsg: []string{plain, `apt-get install -y chromium`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("FRAMEBUS_CHROMIUM", tt.env)
			got, err := FindChromium()
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("FindChromium() = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("FindChromium() = %q, nil; want an error", got)
			}
			if !errors.Is(err, ErrChromiumNotFound) {
				t.Errorf("error %v does not wrap ErrChromiumNotFound", err)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestFindChromiumSearch(t *testing.T) {
	t.Setenv("FRAMEBUS_CHROMIUM", "")

	t.Run("on PATH first", func(t *testing.T) {
		dir := t.TempDir()
		exe := filepath.Join(dir, "google-chrome")
		if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", dir)
		got, err := FindChromium()
		if err != nil || got != exe {
			t.Fatalf("FindChromium() = %q, %v; want %q", got, err, exe)
		}
	})

	t.Run("well-known paths without PATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		got, err := FindChromium()
		var want string
		for _, p := range findPaths() {
			if findIsExecutable(p) {
				want = p
				break
			}
		}
		if want == "" {
			if !errors.Is(err, ErrChromiumNotFound) || !strings.Contains(err.Error(), `apt-get install -y chromium`) {
				t.Fatalf("FindChromium() = %q, %v; want ErrChromiumNotFound with install advice", got, err)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("FindChromium() = %q, %v; want %q", got, err, want)
		}
	})
}
