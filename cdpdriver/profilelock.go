package cdpdriver

import (
	"errors"
	"fmt"
	"os"
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

// lockProfile takes the lock of the profile directory dir (opened by
// openProfileDir); the returned file holds it.
func lockProfile(dir *os.File) (*os.File, error) {
	f, err := openProfileFile(dir, profileLockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock profile %s: %w", dir.Name(), err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := make([]byte, 32)
		n, _ := f.ReadAt(holder, 0)
		f.Close()
		who := strings.TrimSpace(string(holder[:n]))
		if who == "" {
			who = "another process"
		} else {
			who = "process " + who
		}
		return nil, fmt.Errorf("%w: %s is used by %s; give this node another profile (browser.profileDir) or stop that one", ErrProfileInUse, dir.Name(), who)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}
