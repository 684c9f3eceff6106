package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// readBack is the script that answers what the page's #one input holds:
// the first file's name and the SHA-256 of its bytes, as the page reads
// them.
const readBack = `(async () => { const f = document.getElementById('one').files[0]; if (!f) return 'none';
	const d = await crypto.subtle.digest('SHA-256', await f.arrayBuffer());
	return f.name + ' ' + Array.from(new Uint8Array(d), b => b.toString(16).padStart(2, '0')).join(''); })()`

// The CLI's upload sends the user's own file over the bus, however large
// (here three chunks), and the page reads back exactly its bytes; a plan
// that names a node path outside the roots is refused naming it and
// files.roots, and sets nothing.
func TestCLIUploadSendsTheUsersFile(t *testing.T) {
	t.Parallel() // its own node and directories
	root := t.TempDir()
	n := startNode(t, "FRAMEBUS_FILE_ROOTS="+root)
	mustOK(t, n.env, "navigate", site("/upload.html"), "--wait")
	content := make([]byte, 2*protocol.StageChunkSize+777)
	rand.Read(content)
	file := filepath.Join(t.TempDir(), "mine.bin")
	if err := os.WriteFile(file, content, 0o600); err != nil {
		t.Fatal(err)
	}
	mustOK(t, n.env, "upload", "#one", file)
	if got := mustOK(t, n.env, "eval", readBack)["value"]; got != "mine.bin "+sha(content) {
		t.Fatalf("the page read %v, want mine.bin %s", got, sha(content))
	}
	for _, args := range [][]string{
		{"upload", "--on-node", "#one", "/etc/shadow"},
		{"plan"},
	} {
		r := framebus(t, n.env, `{"action":{"type":"upload","selector":"#one","files":["/etc/shadow"]}}`, args...)
		if m := r.reply(t); r.status != 1 || m["code"] != "permission_denied" || !strings.Contains(r.stdout, "/etc/shadow is outside the file roots (files.roots: ") {
			t.Fatalf("%q of /etc/shadow: exit %d, %s", args, r.status, r.stdout)
		}
	}
	if got := mustOK(t, n.env, "eval", readBack)["value"]; got != "mine.bin "+sha(content) {
		t.Fatalf("a refused upload changed the input: %v", got)
	}
	// The REPL's upload is the same command.
	other := filepath.Join(t.TempDir(), "from repl.txt")
	if err := os.WriteFile(other, []byte("typed in the REPL"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := framebus(t, n.env, "upload #one '"+other+"'\nquit\n", "repl")
	if r.status != 0 || !strings.Contains(r.stdout, `"ok":true`) {
		t.Fatalf("repl upload: exit %d, %s %s", r.status, r.stdout, r.stderr)
	}
	if got := mustOK(t, n.env, "eval", readBack)["value"]; got != "from repl.txt "+sha([]byte("typed in the REPL")) {
		t.Fatalf("after the REPL's upload the page read %v", got)
	}
}

// The acceptance, as an unprivileged local user (uid and gid 65534) on the
// node's bus: a plan upload of a path outside the roots is refused (0 got
// through), and a CLI upload of the user's own file works.
func TestUnprivilegedUserUpload(t *testing.T) {
	setpriv := needSetpriv(t)
	n := startNode(t)
	mustOK(t, n.env, "navigate", site("/upload.html"), "--wait")

	// The user's own place: a directory 65534 owns, with a copy of the
	// binary (the test's is in a root-only directory) and its file.
	home := nobodyHome(t)
	bin := filepath.Join(home, "framebus")
	copyFile(t, binary, bin, 0o755)
	content := []byte("the user's own file\n")
	own := filepath.Join(home, "own.txt")
	if err := os.WriteFile(own, content, 0o644); err != nil {
		t.Fatal(err)
	}
	// The user's own agent credentials, from the node's admin.
	creds := filepath.Join(home, "creds.json")
	mustOK(t, n.env, "creds", "add", "nobody", "--role", "agent", "--out", creds)
	if err := os.Chown(creds, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + home, envCreds + "=" + creds, envState + "=" + filepath.Join(home, "state.json")}
	if raceEnabled {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	asNobody := func(stdin string, args ...string) result {
		t.Helper()
		return framebusAs(t, setpriv, bin, env, stdin, args...)
	}
	if r := asNobody("", "eval", "1"); r.status != 0 {
		t.Fatalf("the unprivileged user cannot reach the bus: %s %s", r.stdout, r.stderr)
	}
	through := 0
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{`{"action":{"type":"upload","selector":"#one","files":["/etc/shadow"]}}`, []string{"plan", "--tab", n.tab()}},
		{`{"action":{"type":"upload","selector":"#one","files":["/root/../etc/shadow"]}}`, []string{"plan", "--tab", n.tab()}},
		{"", []string{"upload", "--on-node", "--tab", n.tab(), "#one", "/etc/shadow"}},
	} {
		r := asNobody(c.stdin, c.args...)
		if r.status == 0 || !strings.Contains(r.stdout, `"code":"permission_denied"`) || !strings.Contains(r.stdout, "files.roots") {
			through++
			t.Errorf("%q as uid 65534: exit %d, %s %s", c.args, r.status, r.stdout, r.stderr)
		}
		if got := mustOK(t, n.env, "eval", readBack)["value"]; got != "none" {
			through++
			t.Errorf("%q as uid 65534 set %v", c.args, got)
		}
	}
	if through != 0 {
		t.Fatalf("%d uploads of /etc/shadow by an unprivileged user got through", through)
	}
	if r := asNobody("", "upload", "--tab", n.tab(), "#one", own); r.status != 0 {
		t.Fatalf("the user's own upload: exit %d, %s %s", r.status, r.stdout, r.stderr)
	}
	if got := mustOK(t, n.env, "eval", readBack)["value"]; got != "own.txt "+sha(content) {
		t.Fatalf("the page read %v, want own.txt %s", got, sha(content))
	}
}

// needSetpriv is the path of setpriv, which runs a command as uid 65534
// and needs root (the node here runs as root, as the README's first
// command does).
func needSetpriv(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs a user's commands as uid 65534 with setpriv, which needs root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed: ", err)
	}
	return setpriv
}

// nobodyHome is a directory of uid 65534's own, removed when t ends.
func nobodyHome(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("", "framebus-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return home
}

// framebusAs runs bin as uid and gid 65534 with no groups.
func framebusAs(t *testing.T, setpriv, bin string, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.status = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
