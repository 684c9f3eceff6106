package files

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/protocol"
)

// Node paths are judged by what they resolve to; every way out of a root
// (.., a symlink to a file, a symlink to a directory, a relative path, no
// roots at all) is refused naming the path and the setting. Counted from
// the attacker's side.
func TestRootsRefuseEveryWayOut(t *testing.T) {
	root := t.TempDir()
	in := filepath.Join(root, "in.txt")
	if err := os.WriteFile(in, []byte("in"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/etc/passwd", filepath.Join(root, "shadowlink"))
	os.Symlink("/etc", filepath.Join(root, "etc"))
	os.Symlink(in, filepath.Join(root, "alias.txt")) // inside: allowed
	roots, err := NewRoots([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{in, filepath.Join(root, "alias.txt"), root + "/x/../in.txt"} {
		f, err := roots.Open(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		f.Close()
	}
	var none *Roots
	cases := []struct {
		roots *Roots
		path  string
	}{
		{roots, "/etc/shadow"},
		{roots, root + "/../../../../etc/shadow"},
		{roots, filepath.Join(root, "shadowlink")},
		{roots, filepath.Join(root, "etc", "passwd")},
		{roots, "in.txt"},
		{roots, root + "\x00/in.txt"},
		{none, in},
		{&Roots{}, in},
	}
	through := 0
	for _, tc := range cases {
		f, err := tc.roots.Open(tc.path)
		var denied *DeniedError
		if err == nil {
			through++
			f.Close()
			t.Errorf("%q got through", tc.path)
			continue
		}
		if !errors.As(err, &denied) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), "files.roots") {
			t.Errorf("%q: %v, want a refusal naming it and files.roots", tc.path, err)
		}
	}
	if through != 0 {
		t.Fatalf("%d paths outside the roots got through", through)
	}
	if _, err := roots.Resolve(root + "/missing"); !errors.As(err, new(*NotFoundError)) {
		t.Errorf("missing file under the root: %v", err)
	}
	for _, bad := range [][]string{{"relative"}, {"/nonexistent-root-dir"}, {in}} {
		if _, err := NewRoots(bad); err == nil || !strings.Contains(err.Error(), "files.roots") {
			t.Errorf("NewRoots(%q): %v", bad, err)
		}
	}
}

// Only regular files are read: a FIFO, a socket or a device under a root
// is refused at once, never waited on (opening a FIFO for reading blocks
// until someone writes: a tab that uploads one would hang).
func TestRootsRefuseWhatIsNoFile(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	roots, err := NewRoots([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, root} {
		opened := make(chan error, 1)
		go func() {
			f, err := roots.Open(p)
			if err == nil {
				f.Close()
			}
			opened <- err
		}()
		select {
		case err := <-opened:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want a refusal: not a regular file", p, err)
			}
		case <-time.After(10 * time.Second):
			os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0) // lets the open end
			t.Fatalf("opening %s still waits after 10s", p)
		}
	}
}

// Staged for another account (the browser's, when the node is root): the
// file is that account's, every directory on its way stays the node's, so
// the account can swap none of them for a link while the node writes.
// Counted as that account (uid 65534): what it could rename.
func TestStageDirectoriesStayTheNodes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test stages files for another account, which needs root (CI runs as root)")
	}
	parent := testdir.Enterable(t)
	s := NewStage(parent, Limits{MaxFile: 10, MaxTotal: 15})
	s.OwnedBy(65534, 65534)
	sum := sha256.Sum256([]byte("x"))
	id, err := s.Begin("a.txt", 1, hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(id, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(id); err != nil {
		t.Fatal(err)
	}
	p, err := s.Path(id)
	if err != nil {
		t.Fatal(err)
	}
	owner := func(path string) int { fi, _ := os.Lstat(path); return int(fi.Sys().(*syscall.Stat_t).Uid) }
	if owner(p) != 65534 {
		t.Errorf("the staged file is uid %d's; want the account's", owner(p))
	}
	swappable := 0
	for _, dir := range []string{filepath.Dir(p), filepath.Dir(filepath.Dir(p))} {
		if owner(dir) != 0 {
			t.Errorf("%s is uid %d's; want the node's", dir, owner(dir))
		}
		// As the account: rename the directory away (the first step of
		// swapping it for a link).
		mv := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "mv", dir, dir+".away")
		if mv.Run() == nil {
			swappable++
			os.Rename(dir+".away", dir)
		}
	}
	if swappable != 0 {
		t.Fatalf("the account could move %d of the stage's directories", swappable)
	}
	read := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", p)
	if out, err := read.Output(); err != nil || string(out) != "x" {
		t.Fatalf("the account reads its staged file: %q %v", out, err)
	}
}

// A stage writes chunks to a private file, checks size and digest at
// commit, keeps within its limits, and names files only by its own ids.
func TestStage(t *testing.T) {
	parent := t.TempDir()
	s := NewStage(parent, Limits{MaxFile: 10, MaxTotal: 15})
	content := []byte("0123456789")
	sum := sha256.Sum256(content)
	id, err := s.Begin("a.txt", 10, hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	if !protocol.ValidStagedID(id) {
		t.Fatalf("id %q", id)
	}
	if _, err := s.Path(id); err == nil {
		t.Fatal("an uncommitted file has a path")
	}
	if _, err := s.Write(id, 0, content[:4]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(id, 0, content[4:]); protocol.CodeOf(err) != protocol.CodeBadRequest {
		t.Fatalf("chunk at the wrong offset: %v", err)
	}
	if _, err := s.Write(id, 4, content[4:]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(id); err != nil {
		t.Fatal(err)
	}
	p, err := s.Path(id)
	if err != nil || filepath.Base(p) != "a.txt" {
		t.Fatalf("path %q %v", p, err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(content) {
		t.Fatalf("content %q", got)
	}
	for _, c := range []struct {
		path string
		perm os.FileMode
	}{{p, 0o600}, {filepath.Dir(p), 0o700}, {filepath.Dir(filepath.Dir(p)), 0o700}} {
		if fi, err := os.Stat(c.path); err != nil || fi.Mode().Perm() != c.perm {
			t.Errorf("%s: mode %v (%v), want %v", c.path, fi.Mode().Perm(), err, c.perm)
		}
	}
	// Limits: one file, and the tab's total.
	if _, err := s.Begin("big", 11, hex.EncodeToString(sum[:])); protocol.CodeOf(err) != protocol.CodeTooLarge {
		t.Errorf("file over the limit: %v", err)
	}
	if _, err := s.Begin("more", 6, hex.EncodeToString(sum[:])); protocol.CodeOf(err) != protocol.CodeTooLarge {
		t.Errorf("total over the limit: %v", err)
	}
	// A digest that does not match drops the file.
	id2, err := s.Begin("b.txt", 3, hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	s.Write(id2, 0, []byte("abc"))
	if _, err := s.Commit(id2); protocol.CodeOf(err) != protocol.CodeBadRequest || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("wrong digest: %v", err)
	}
	if _, err := s.Path(id2); err == nil {
		t.Error("a dropped file has a path")
	}
	// Names are names, never paths; ids are the stage's own.
	for _, name := range []string{"../x", "/etc/passwd", "..", "", "a\x00b"} {
		if _, err := s.Begin(name, 1, hex.EncodeToString(sum[:])); protocol.CodeOf(err) != protocol.CodeBadRequest {
			t.Errorf("name %q: %v", name, err)
		}
	}
	other := NewStage(parent, Limits{})
	defer other.Close()
	if _, err := other.Path(id); protocol.CodeOf(err) != protocol.CodeBadRequest {
		t.Errorf("another stage's id: %v", err)
	}
	// Close removes everything.
	dir := filepath.Dir(filepath.Dir(p))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("stage directory left after Close: %v", err)
	}
}
