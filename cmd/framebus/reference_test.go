package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated parts of docs/ (go generate ./cmd/framebus)")

// The generated parts of docs/ say what the declarations say: an action,
// flag or error code added, renamed or reworded without regenerating the
// docs fails here.
func TestDocsReference(t *testing.T) {
	// Help texts name default paths under the user's home: write them as
	// ~, the same on every machine.
	t.Setenv("HOME", "~")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	files := map[string]bool{}
	for _, s := range docSections {
		files[s.file] = true
	}
	for file := range files {
		path := filepath.Join("..", "..", "docs", file)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := regenerate(file, string(data))
		if err != nil {
			t.Fatal(err)
		}
		if want == string(data) {
			continue
		}
		if *updateDocs {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote %s", path)
			continue
		}
		t.Errorf("docs/%s differs from the declarations it is generated from; run: go generate ./cmd/framebus", file)
	}
}
