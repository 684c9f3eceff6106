package cdpdriver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A profile directory is used by one browser at a time: Chromium hands a
// second start on the same directory to the first browser and exits,
// which would look like a failed launch. Launch takes an exclusive lock on
// <dir>/framebus.lock first, held until Close, and refuses a profile that
// another process holds with an error that says so.

// ErrProfileInUse: another process runs a browser on the profile.
var ErrProfileInUse = errors.New("profile in use")

// profileLockName is the lock file inside a profile directory.
const profileLockName = "framebus.lock"

// lockProfile takes the profile's lock; the returned file holds it.
func lockProfile(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("profile %s: %w", dir, err)
	}
	path := filepath.Join(dir, profileLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock profile %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		} else {
			who = "process " + who
		}
		return nil, fmt.Errorf("%w: %s is used by %s; give this node another profile (browser.profileDir) or stop that one", ErrProfileInUse, dir, who)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}
