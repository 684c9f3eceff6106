package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
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

// The README is the front door to docs/: every file there is linked from
// it, and every relative link in the README and in docs/ leads to a file
// that exists and, with a #fragment, to a heading in it.
func TestDocsLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v (found %d)", err, len(docs))
	}
	for _, doc := range docs {
		if !strings.Contains(string(readme), "](docs/"+filepath.Base(doc)+")") {
			t.Errorf("README.md does not link docs/%s", filepath.Base(doc))
		}
	}
	link := regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)
	for _, file := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target, fragment := m[1], strings.TrimPrefix(m[2], "#")
			if strings.Contains(target, "://") {
				continue
			}
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), target)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: link to %s: %v", file, m[0], err)
				continue
			}
			if fragment != "" && !slices.Contains(headingAnchors(string(body)), fragment) {
				t.Errorf("%s: link %s: no such heading in %s", file, m[0], path)
			}
		}
	}
}

// headingAnchors are the fragments GitHub gives a markdown file's headings.
func headingAnchors(doc string) []string {
	var out []string
	inCode := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
