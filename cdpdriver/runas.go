package cdpdriver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Chromium refuses to run as root with its sandbox on, and without the
// sandbox a compromised renderer is root. So when framebus runs as root,
// Launch runs Chromium as an unprivileged account instead, sandbox on:
// the renderers are then sandboxed processes of a user who owns nothing
// but the browser's profiles.

// DefaultBrowserUser is the account Chromium runs as when framebus runs
// as root and LaunchOptions.User names none. Launch creates it (a system
// account without login or password, home /var/lib/framebus-browser)
// when it does not exist.
const DefaultBrowserUser = "framebus-browser"

// RootUser as LaunchOptions.User keeps Chromium root, without its
// sandbox: the old way, for machines where the sandbox cannot run.
const RootUser = "root"

// BrowserUser is the account a browser runs as.
type BrowserUser struct {
	Name     string
	UID, GID int
	Home     string
}

// ErrNoBrowserUser: the account Chromium is to run as does not exist and
// could not be created.
var ErrNoBrowserUser = errors.New("no account to run chromium as")

// browserUserFor says who Chromium runs as under opts: nil means this
// process's own user (so not root, or root by choice).
func browserUserFor(name string) (*BrowserUser, error) {
	if os.Geteuid() != 0 || name == RootUser {
		return nil, nil
	}
	if name == "" {
		name = DefaultBrowserUser
	}
	return LookupBrowserUser(name, name == DefaultBrowserUser)
}

// createUserMu serialises the creation of the default account within
// this process; useradd itself locks the account files against others.
var createUserMu sync.Mutex

// LookupBrowserUser finds the account name, creating it when it is
// missing and create is set (as DefaultBrowserUser is). Root is refused:
// it is what running as another account is for.
func LookupBrowserUser(name string, create bool) (*BrowserUser, error) {
	u, err := user.Lookup(name)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) && create {
		createUserMu.Lock()
		if u, err = user.Lookup(name); errors.As(err, &unknown) {
			err = createSystemUser(name)
			if err == nil {
				u, err = user.Lookup(name)
			}
		}
		createUserMu.Unlock()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w (create it, or set browser.user to an existing account)", ErrNoBrowserUser, name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if uid == 0 {
		return nil, fmt.Errorf("%w: %s is root; name an unprivileged account, or %q to run chromium as root without its sandbox", ErrNoBrowserUser, name, RootUser)
	}
	return &BrowserUser{Name: u.Username, UID: uid, GID: gid, Home: u.HomeDir}, nil
}

// browserUserHome is where DefaultBrowserUser lives, and keeps the
// persistent profiles of a node that runs as root.
const browserUserHome = "/var/lib/" + DefaultBrowserUser

func createSystemUser(name string) error {
	out, err := exec.Command("useradd", "--system", "--user-group",
		"--home-dir", browserUserHome, "--create-home",
		"--shell", "/usr/sbin/nologin", "--comment", "framebus browser", name).CombinedOutput()
	if err != nil {
		// A second process may have created it meanwhile (exit 9).
		if _, lerr := user.Lookup(name); lerr == nil {
			return nil
		}
		return fmt.Errorf("useradd %s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return os.Chmod(browserUserHome, 0o700)
}

// tempDir is where a throwaway profile of u's browser is made: the
// usual temporary directory when u can reach it, else u's home. "" (the
// usual one) for a browser of this process's own user.
func (u *BrowserUser) tempDir() string {
	if u == nil {
		return ""
	}
	tmp := os.TempDir()
	if u.reaches(filepath.Join(tmp, "profile")) == nil {
		return tmp
	}
	return u.Home
}

// credential makes Chromium's process run as u, with no supplementary
// groups (root's would otherwise stay).
func (u *BrowserUser) credential() *syscall.Credential {
	return &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}
}

// environ is this process's environment for a browser run as u: its
// own home, and none of this user's per-user directories.
func (u *BrowserUser) environ() []string {
	env := []string{"HOME=" + u.Home, "USER=" + u.Name, "LOGNAME=" + u.Name}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", name == "USER", name == "LOGNAME", strings.HasPrefix(name, "XDG_"), name == "DBUS_SESSION_BUS_ADDRESS":
		default:
			env = append(env, kv)
		}
	}
	return env
}

// adopt hands the profile directory dir (opened by openProfileDir) to
// u: everything in it becomes u's (a profile run as root before keeps
// working), and u must be able to reach it through every directory above
// it. It works through descriptors, never a path that u could redirect:
// a link is changed itself, never followed, a directory is entered only
// if it still is one, and a file with more than one name (a hard link to
// a file of root's elsewhere, say) is left alone.
func (u *BrowserUser) adopt(dir *os.File) error {
	if err := u.reaches(dir.Name()); err != nil {
		return err
	}
	if err := dir.Chown(u.UID, u.GID); err != nil {
		return err
	}
	return u.adoptEntries(dir, true)
}

// adoptEntries hands what the directory dir holds to u.
func (u *BrowserUser) adoptEntries(dir *os.File, top bool) error {
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return err
	}
	dirfd := int(dir.Fd())
	for _, name := range names {
		if top && name == profileLockName {
			continue // framebus's, not the browser's
		}
		fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // gone meanwhile
		}
		if err != nil {
			return &os.PathError{Op: "open", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		err = u.adoptEntry(fd, filepath.Join(dir.Name(), name))
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// adoptEntry hands the file fd (an O_PATH descriptor) to u, and what it
// holds when it is a directory.
func (u *BrowserUser) adoptEntry(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if !isDir && st.Nlink != 1 {
		return nil // another name elsewhere: not the profile's to give away
	}
	if int(st.Uid) != u.UID || int(st.Gid) != u.GID {
		if err := unix.Fchownat(fd, "", u.UID, u.GID, unix.AT_EMPTY_PATH); err != nil {
			return &os.PathError{Op: "chown", Path: path, Err: err}
		}
	}
	if !isDir {
		return nil
	}
	sub, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(sub), path)
	defer f.Close()
	return u.adoptEntries(f, false)
}

// reaches checks that u may enter every directory above dir.
func (u *BrowserUser) reaches(dir string) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		var search fs.FileMode = 0o001
		switch {
		case int(st.Uid) == u.UID:
			search = 0o100
		case int(st.Gid) == u.GID:
			search = 0o010
		}
		if info.Mode().Perm()&search == 0 {
			return fmt.Errorf("profile directory %s is out of reach of %s, the account chromium runs as: it may not enter %s (mode %04o, owner uid %d); keep profiles in a directory it can enter (e.g. under %s), or set browser.user",
				dir, u.Name, d, info.Mode().Perm(), st.Uid, u.Home)
		}
		if parent := filepath.Dir(d); parent == d {
			return nil
		}
	}
}
