package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testdir"
)

// A newcomer's layout, made three times in the attacker's tries:
// FRAMEBUS_STATE=/x/node.json with --profile-dir /x/prof, as root (the
// browser runs as its own account); and /x/more/prof, /x/more made by
// serve. serve starts and a navigate works;
// the browser's account passes through /x to its profile but can list
// nothing there and read none of the state and credentials files (the
// users creds add made too), even after framebus mcp --http wrote its
// token beside them.
func TestNewcomersLayout(t *testing.T) {
	for _, prof := range []string{"prof", filepath.Join("more", "prof")} {
		t.Run(strings.ReplaceAll(prof, "/", "_"), func(t *testing.T) { newcomersLayout(t, prof) })
	}
}

func newcomersLayout(t *testing.T, prof string) {
	setpriv := needSetpriv(t)
	account, err := cdpdriver.LookupBrowserUser(cdpdriver.DefaultBrowserUser, true)
	if err != nil {
		t.Fatal(err)
	}
	x := filepath.Join(testdir.Enterable(t), "x") // as /x: its parent others may enter
	state := filepath.Join(x, "node.json")
	env := testEnv(envState + "=" + state)
	n := &node{process: startProcess(t, env, "serve", "--profile-dir", filepath.Join(x, prof)), stateFile: state, env: env}
	n.ready(t)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	mustOK(t, n.env, "navigate", site("/form.html"), "--wait")
	if profile := chromiumProfile(t, n.cmd.Process.Pid); profile != filepath.Join(x, prof, "default") {
		t.Errorf("Chromium's profile is %s, not under --profile-dir", profile)
	}
	m := startMCPHTTP(t, n.env)
	defer m.stop(syscall.SIGTERM, 30*time.Second)
	mustOK(t, n.env, "navigate", site("/links.html"), "--wait")
	mustOK(t, n.env, "creds", "add", "newcomer", "--role", "observer") // users.json beside them

	info, err := os.Stat(x)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o711 {
		t.Errorf("%s is %04o, want 0711 (others pass through, list nothing)", x, mode)
	}
	as := func(args ...string) (string, bool) {
		cmd := testchild.DieWithTest(exec.Command(setpriv, append([]string{"--reuid=" + strconv.Itoa(account.UID), "--regid=" + strconv.Itoa(account.GID), "--clear-groups"}, args...)...))
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err == nil
	}
	through, tries := 0, 0
	for _, f := range []string{"node.json", "credentials.json", "admin.json", "users.json", filepath.Base(m.TokenFile)} {
		tries++
		if out, ok := as("/bin/cat", filepath.Join(x, f)); ok {
			through++
			t.Errorf("%s (the browser's account) read %s: %.80q", account.Name, f, out)
		}
	}
	tries++
	if out, ok := as("/bin/ls", x); ok {
		through++
		t.Errorf("%s (the browser's account) listed %s: %q", account.Name, x, out)
	}
	if _, ok := as("/bin/ls", filepath.Join(x, prof)); !ok {
		t.Errorf("%s (the browser's account) cannot enter its own profiles directory", account.Name)
	}
	t.Logf("%d of %d reads by the browser's account got through", through, tries)
}
