package cdpdriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// deadDNS is the DNS-over-HTTPS server a browser without DNS is given:
// an address literal (no lookup to reach it) on the discard port, where
// no DoH server answers.
const deadDNS = "https://127.0.0.1:9/dns-query"

// systemDNS sets, in the profile's Local State, DNS-over-HTTPS in secure
// mode at deadDNS (off), or takes that setting out again (on) so that a
// profile once run under a whitelist resolves names again without one.
// With it Chromium never asks the machine's resolver, and every name it
// looks up itself fails. There is no command-line flag for it: Local
// State is where Chromium keeps its "Use secure DNS" choice. The rest of
// Local State is kept, and a choice of the user's own is left alone.
//
// dir is the profile directory opened by openProfileDir; u, when not
// nil, is the account the browser runs as, which gets the file.
func systemDNS(dir *os.File, u *BrowserUser, off bool) error {
	path := filepath.Join(dir.Name(), localStateName)
	state := map[string]any{}
	data, err := readLocalState(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !off {
			return nil
		}
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(data, &state); err != nil {
			if !off {
				return nil // not ours to undo; Chromium resets it
			}
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	ours := map[string]any{"mode": "secure", "templates": deadDNS}
	current, _ := state["dns_over_https"].(map[string]any)
	switch {
	case off:
		state["dns_over_https"] = ours
	case current != nil && current["templates"] == deadDNS:
		delete(state, "dns_over_https")
	default:
		return nil
	}
	if data, err = json.Marshal(state); err != nil {
		return err
	}
	return replaceProfileFile(dir, localStateName, data, u)
}

// localStateName is Chromium's file of browser-wide settings.
const localStateName = "Local State"

// maxLocalState bounds what is read of Local State: Chromium's own is
// some kilobytes.
const maxLocalState = 8 << 20

// readLocalState reads the profile's Local State as root, never through
// a link (see openProfileFile).
func readLocalState(dir *os.File) ([]byte, error) {
	f, err := openProfileFile(dir, localStateName, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLocalState+1))
	if err == nil && len(data) > maxLocalState {
		err = fmt.Errorf("%s is larger than %d bytes", f.Name(), maxLocalState)
	}
	return data, err
}

// replaceProfileFile puts data in the profile directory dir as name,
// u's when u is not nil: written to a new file of its own and renamed
// over name, so that whatever name was (a link, say) is replaced, never
// written through.
func replaceProfileFile(dir *os.File, name string, data []byte, u *BrowserUser) error {
	tmp := fmt.Sprintf(".%s.framebus-%d", name, os.Getpid())
	dirfd := int(dir.Fd())
	_ = unix.Unlinkat(dirfd, tmp, 0) // left by a crash of ours
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: filepath.Join(dir.Name(), tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), tmp))
	_, err = f.Write(data)
	if err == nil && u != nil {
		err = f.Chown(u.UID, u.GID)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("write %s: %w", filepath.Join(dir.Name(), name), err)
	}
	return nil
}
