package serving

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testdir"
)

// TestProfilesDirNotThroughALink: the browser's account replaces the
// directory of persistent profiles in its home with a link to a
// directory of root's (as /var/lib/framebus-browser/profiles -> /etc);
// serve refuses it rather than making root's directory the account's.
func TestProfilesDirNotThroughALink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test plays the browser's account against root: run the tests as root (CI does)")
	}
	account, err := cdpdriver.LookupBrowserUser(cdpdriver.DefaultBrowserUser, true)
	if err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(t.TempDir(), "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(testdir.Enterable(t), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	profiles := filepath.Join(home, "profiles")
	if err := os.Symlink(etc, profiles); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{home, profiles} {
		if err := os.Lchown(p, account.UID, account.GID); err != nil {
			t.Fatal(err)
		}
	}
	err = makeProfilesDir(profiles, account)
	if !errors.Is(err, cdpdriver.ErrUnsafeProfile) {
		t.Errorf("makeProfilesDir: %v; want it refused as unsafe", err)
	}
	info, err := os.Stat(etc)
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
		t.Errorf("root's directory behind the link is now uid %d gid %d", st.Uid, st.Gid)
	}
	// The account's own profiles directory still works.
	if err := os.Remove(profiles); err != nil {
		t.Fatal(err)
	}
	if err := makeProfilesDir(profiles, account); err != nil {
		t.Fatal(err)
	}
	info, err = os.Lstat(profiles)
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); !info.IsDir() || int(st.Uid) != account.UID {
		t.Errorf("profiles: %v uid %d; want the account's directory", info.Mode(), st.Uid)
	}
}
