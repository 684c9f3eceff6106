package cdpdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/framebus/framebus/internal/testdir"
)

// The tests here play the browser's account against a node run as root:
// they plant links where the account may write (made by the test, then
// given to the account, as the account itself could make them) and count
// the files of root's that a launch then changed. Each must count 0.

// profileTestAccount is the account Chromium runs as for a root node.
func profileTestAccount(t *testing.T) *BrowserUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test plays the browser's account against root: run the tests as root (CI does)")
	}
	u, err := LookupBrowserUser(DefaultBrowserUser, true)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// profileTestGive makes path the account's, as if it had made it.
func profileTestGive(t *testing.T, u *BrowserUser, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.Lchown(p, u.UID, u.GID); err != nil {
			t.Fatal(err)
		}
	}
}

// profileTestCanaries are root's files the account must not reach.
type profileTestCanaries struct {
	dir   string
	files map[string]string // name: content
}

// profileTestNewCanaries fills dir (made when missing, root's) with n
// files of root's, mode 0600.
func profileTestNewCanaries(t *testing.T, dir string, n int) *profileTestCanaries {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &profileTestCanaries{dir: dir, files: map[string]string{}}
	for i := range n {
		name := fmt.Sprintf("canary%d", i)
		content := `{"canary":` + fmt.Sprint(i) + "}" // JSON, as Local State would be
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		c.files[name] = content
	}
	return c
}

// changed counts what is no longer as it was in the canaries' directory:
// a canary whose content, owner or mode changed, the directory's own
// owner or mode, and every entry that was not there.
func (c *profileTestCanaries) changed(t *testing.T) (n int) {
	t.Helper()
	check := func(path string, mode os.FileMode) {
		info, err := os.Lstat(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			n++
			return
		}
		if st := info.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 || info.Mode() != mode {
			t.Errorf("%s is now %v, uid %d gid %d", path, info.Mode(), st.Uid, st.Gid)
			n++
		}
	}
	check(c.dir, os.ModeDir|0o755)
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		path := filepath.Join(c.dir, e.Name())
		want, ok := c.files[e.Name()]
		switch {
		case !ok:
			t.Errorf("%s was made", path)
			n++
			continue
		case want == "" && e.IsDir(): // canaries of their own
			check(path, os.ModeDir|0o755)
			continue
		}
		check(path, 0o600)
		if got, _ := os.ReadFile(path); !bytes.Equal(got, []byte(want)) {
			t.Errorf("%s now holds %q", path, got)
			n++
		}
	}
	for name := range c.files {
		if _, err := os.Lstat(filepath.Join(c.dir, name)); errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is gone", name)
			n++
		}
	}
	return n
}

// profileTestLaunch launches on dir and says what became of it: the
// error, nil when Chromium ran (it is closed again).
func profileTestLaunch(t *testing.T, dir string, noDNS bool) error {
	t.Helper()
	p, err := Launch(context.Background(), LaunchOptions{Headless: true, UserDataDir: dir, NoSystemDNS: noDNS})
	if err == nil {
		p.Close()
	}
	return err
}

// profileTestTrap makes the profile directory dir, the account's, with
// name in it a link to target: a symbolic link of the account's, or a
// hard link, as the account could make where fs.protected_hardlinks is
// 0 (root makes it here: the setting would stop the account). It returns
// the trap's path.
func profileTestTrap(t *testing.T, u *BrowserUser, dir, name, target string, hard bool) string {
	t.Helper()
	trap := filepath.Join(dir, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	profileTestGive(t, u, dir)
	if hard {
		if err := os.Link(target, trap); err != nil {
			t.Fatal(err)
		}
		return trap
	}
	if err := os.Symlink(target, trap); err != nil {
		t.Fatal(err)
	}
	profileTestGive(t, u, trap)
	return trap
}

// profileTestRefused checks that err refuses the launch as unsafe,
// naming want.
func profileTestRefused(t *testing.T, err error, want string) {
	t.Helper()
	t.Logf("launch: %v", err)
	if !errors.Is(err, ErrUnsafeProfile) || !strings.Contains(err.Error(), want) {
		t.Errorf("launch: %v; want it refused (ErrUnsafeProfile) naming %s", err, want)
	}
}

// TestProfileFilesAreNoLinks: framebus.lock and Local State, the files
// root opens in a profile, as a link to a file of root's, to a path that
// does not exist yet, or as a second name of a file of root's: the
// launch is refused naming the file; root's files are untouched and the
// path not made.
func TestProfileFilesAreNoLinks(t *testing.T) {
	launchTestNeedChromium(t)
	u := profileTestAccount(t)
	canaries := profileTestNewCanaries(t, filepath.Join(t.TempDir(), "root"), 4)
	base := testdir.Enterable(t)
	for i, trap := range []struct {
		name, target string
		hard         bool
	}{
		{profileLockName, "canary0", false},
		{profileLockName, "canary1", true},
		{localStateName, "canary2", false},
		{localStateName, "not-yet", false},
		{localStateName, "canary3", true},
	} {
		profile := filepath.Join(base, fmt.Sprint("profile", i))
		path := profileTestTrap(t, u, profile, trap.name, filepath.Join(canaries.dir, trap.target), trap.hard)
		// NoSystemDNS: framebus writes Local State.
		profileTestRefused(t, profileTestLaunch(t, profile, true), path)
	}
	if n := canaries.changed(t); n != 0 {
		t.Errorf("%d of root's files changed or made through the profile's files", n)
	}
}

// TestProfileAdoptStaysInside: handing a profile to the account changes
// no file outside it, though the account swaps its subdirectories for
// links to a directory of root's while framebus walks them, and though a
// file of root's has a second name in it.
func TestProfileAdoptStaysInside(t *testing.T) {
	launchTestNeedChromium(t)
	u := profileTestAccount(t)
	canaries := profileTestNewCanaries(t, filepath.Join(t.TempDir(), "root"), 8)
	linkedCanary := profileTestNewCanaries(t, filepath.Join(t.TempDir(), "linked"), 1)
	profile := filepath.Join(testdir.Enterable(t), "profile")
	if err := os.Mkdir(profile, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(linkedCanary.dir, "canary0"), filepath.Join(profile, "hardlink")); err != nil {
		t.Fatal(err)
	}
	// Subdirectories as a profile run as root before has them: root's;
	// beside each, the account's link to root's directory.
	const subdirs = 64
	for i := range subdirs {
		sub := filepath.Join(profile, fmt.Sprintf("sub%d", i))
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		for f := range 4 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprint("f", f)), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(canaries.dir, sub+".link"); err != nil {
			t.Fatal(err)
		}
		profileTestGive(t, u, sub+".link")
	}
	// The account swaps each subdirectory with its link (both names
	// always there), over and over, until the launch is done.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for i := range subdirs {
				select {
				case <-stop:
					return
				default:
				}
				sub := filepath.Join(profile, fmt.Sprintf("sub%d", i))
				_ = unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, sub+".link", unix.RENAME_EXCHANGE)
			}
		}
	}()
	err := profileTestLaunch(t, profile, false)
	close(stop)
	wg.Wait()
	t.Logf("launch: %v", err)
	if n := canaries.changed(t) + linkedCanary.changed(t); n != 0 {
		t.Errorf("%d of root's files outside the profile changed owner or more", n)
	}
	// The profile is the account's (what the race left inside may not
	// all be: TestProfileThroughRootsLinks checks a profile at rest).
	if uid := launchTestOwner(t, profile); uid != u.UID {
		t.Errorf("the profile is uid %d's; want the account's (%d)", uid, u.UID)
	}
}

// TestProfilesDirIsNoLink: the account replaces its profiles directory
// with a link to a directory of root's (home/profiles -> /etc, so that
// home/profiles/default is /etc/default): the launch is refused, and
// nothing is made or changed there.
func TestProfilesDirIsNoLink(t *testing.T) {
	launchTestNeedChromium(t)
	u := profileTestAccount(t)
	root := t.TempDir()
	canaries := profileTestNewCanaries(t, filepath.Join(root, "etc"), 2)
	existing := profileTestNewCanaries(t, filepath.Join(root, "etc", "default"), 2)
	canaries.files["default"] = "" // a directory, of canaries of its own
	home := filepath.Join(testdir.Enterable(t), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	profiles := filepath.Join(home, "profiles")
	if err := os.Symlink(canaries.dir, profiles); err != nil {
		t.Fatal(err)
	}
	profileTestGive(t, u, home, profiles)
	for _, name := range []string{"default", "new"} {
		profileTestRefused(t, profileTestLaunch(t, filepath.Join(profiles, name), true), profiles)
	}
	if n := canaries.changed(t) + existing.changed(t); n != 0 {
		t.Errorf("%d of root's files changed or made through the profiles link", n)
	}
}

// TestProfileThroughRootsLinks: links that only root could have made on
// the way to a profile are followed, as the kernel would (a /var that is
// a link to /data/var), and a profile run as root before runs as the
// account and is the account's.
func TestProfileThroughRootsLinks(t *testing.T) {
	launchTestNeedChromium(t)
	u := profileTestAccount(t)
	base := testdir.Enterable(t)
	data := filepath.Join(base, "data")
	if err := os.MkdirAll(filepath.Join(data, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("data/var", filepath.Join(base, "var")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "var"), filepath.Join(data, "again")); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(base, "data", "again", "profile") // again -> var -> data/var
	// First run as root, as before there was an account: all root's.
	p, err := Launch(context.Background(), LaunchOptions{Headless: true, UserDataDir: profile, User: RootUser})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	real := filepath.Join(data, "var", "profile")
	if uid := launchTestOwner(t, filepath.Join(real, "Default")); uid != 0 {
		t.Fatalf("run as root, the profile's Default is uid %d's", uid)
	}
	if err := profileTestLaunch(t, profile, true); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{real, filepath.Join(real, localStateName), filepath.Join(real, "Default"), filepath.Join(real, "Default", "Preferences")} {
		if uid := launchTestOwner(t, path); uid != u.UID {
			t.Errorf("%s is uid %d's; want the account's (%d)", path, uid, u.UID)
		}
	}
	if uid := launchTestOwner(t, filepath.Join(real, profileLockName)); uid != 0 {
		t.Errorf("the lock is uid %d's; want root's", uid)
	}
}

// TestOpenProfileDirResolves: for a browser of this process's own user
// (u nil) links are followed as the kernel follows them, ".." in a
// link's target too; a loop of links is an error, not a hang; and a file
// on the way is no directory.
func TestOpenProfileDirResolves(t *testing.T) {
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"up":    "a/b/../b", // base/up -> base/a/b
		"loop1": "loop2",
		"loop2": "loop1",
		"file":  "a/f",
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "a", "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := openProfileDir(filepath.Join(base, "up", "new"), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if info, err := os.Stat(filepath.Join(base, "a", "b", "new")); err != nil || !info.IsDir() {
		t.Errorf("up/new made no a/b/new: %v", err)
	}
	if _, err := openProfileDir(filepath.Join(base, "loop1", "p"), nil, true); err == nil || !strings.Contains(err.Error(), "too many symbolic links") {
		t.Errorf("a loop of links: %v", err)
	}
	if _, err := openProfileDir(filepath.Join(base, "file", "p"), nil, true); err == nil || !strings.Contains(err.Error(), "is no directory") {
		t.Errorf("a file on the way: %v", err)
	}
}
