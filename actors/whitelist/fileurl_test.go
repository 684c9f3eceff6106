package whitelist

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framebus/framebus/actors/files"
)

// file: URLs, when the file scheme is allowed, are judged by the path
// the browser reads against the file roots: file:///etc/passwd is the path
// /etc/passwd (not a host named etc), a host is refused, and no spelling
// (dot segments, percent-encoding, backslashes, a symlink in a root)
// reaches a file outside them. Counted from the attacker's side: how many
// URLs outside the roots got through.
func TestFileURLsObeyTheRoots(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "page.html"), []byte("<p>in"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "etcdir")); err != nil {
		t.Fatal(err)
	}
	roots, err := files.NewRoots([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := New([]string{"*"}, []string{"http", "https", "file"})
	wl := base.WithFileRoots(roots)
	for _, u := range []string{"file://" + root + "/page.html", "file://localhost" + root + "/page.html", "file:" + root + "/page.html", "file://" + root + "/sub/../page.html?x#y"} {
		if err := wl.Check(u); err != nil {
			t.Errorf("%s inside the root: %v", u, err)
		}
	}
	outside := []string{
		"file:///etc/passwd",
		"file:/etc/passwd",
		"file:etc/passwd",
		"file:////etc/passwd",
		"FILE:///etc/passwd",
		`file:\\\etc\passwd`,
		"file://" + root + "/../../../../etc/passwd",
		"file://" + root + "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
		"file://" + root + "/out",
		"file://" + root + "/etcdir/passwd",
		"file://" + root + "%2f..%2f..%2fetc/passwd",
		"file://etc/passwd",
		"file://evil.test/share/x",
		"file://127.0.0.1" + root + "/page.html",
		"file://" + root + "/missing.html",
	}
	got := 0
	for _, u := range outside {
		err := wl.Check(u)
		var denied *DeniedError
		if !errors.As(err, &denied) {
			got++
			t.Errorf("%s got through", u)
			continue
		}
		if denied.Malformed == nil && !strings.Contains(err.Error(), "files.roots") && !strings.Contains(err.Error(), "another machine") && !strings.Contains(err.Error(), "no such file") {
			t.Errorf("%s: %v, want it to name files.roots", u, err)
		}
	}
	// Without roots every file: URL is refused, naming the setting.
	err = base.Check("file:///etc/passwd")
	if err == nil || !strings.Contains(err.Error(), "/etc/passwd is outside the file roots (files.roots: none are configured)") {
		got++
		t.Errorf("no roots: %v", err)
	}
	if got != 0 {
		t.Fatalf("%d file URLs outside the roots got through", got)
	}
}
