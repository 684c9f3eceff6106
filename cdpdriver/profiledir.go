package cdpdriver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// When framebus runs as root, a profile directory and the directories
// above it may be the browser account's: a compromised browser can put a
// symbolic link or a hard link wherever root is about to work by path,
// and have root create, truncate or chown a file of its choosing (say
// /etc/passwd). So root never works on a profile by path: it resolves
// the directory one component at a time with openat(O_NOFOLLOW), follows
// a symbolic link only where the account cannot have put it, and does
// all its work relative to the directory it opened.

// ErrUnsafeProfile: the way to a profile directory, or a file root works
// on inside it, is something the browser's account could have planted.
var ErrUnsafeProfile = errors.New("unsafe profile directory")

// maxSymlinkHops bounds the links followed while resolving one path, as
// the kernel's own limit does.
const maxSymlinkHops = 40

// openProfileDir opens the directory at path for root's work in it,
// creating the missing directories (0700) when create is set. With u nil
// (Chromium runs as this process's user) nobody else writes there and
// links are followed as the kernel would; otherwise a link in a
// directory u can write is refused, never followed.
func openProfileDir(path string, u *BrowserUser, create bool) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	at := "/" // where fd is, for messages
	todo := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	hops := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if name == "" || name == "." {
			continue
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create && name != ".." {
			// A directory on the way to u's profile lets u pass through
			// (0711), as the state directory does: u lists nothing in
			// it, and cannot put a link there.
			mode := uint32(0o700)
			if u != nil && slices.ContainsFunc(todo, func(s string) bool { return s != "" && s != "." }) {
				mode = 0o711
			}
			if err = unix.Mkdirat(fd, name, mode); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("profile %s: %s: %w", path, filepath.Join(at, name), err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			unix.Close(fd)
			return nil, fmt.Errorf("profile %s: %s: %w", path, filepath.Join(at, name), err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			unix.Close(fd)
			fd, at = next, filepath.Join(at, name)
		case unix.S_IFLNK:
			target, err := linkTarget(fd, next, at, name, u, &st)
			unix.Close(next)
			if hops++; err == nil && hops > maxSymlinkHops {
				err = fmt.Errorf("%s: too many symbolic links", filepath.Join(at, name))
			}
			if err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("profile %s: %w", path, err)
			}
			if strings.HasPrefix(target, "/") {
				unix.Close(fd)
				if fd, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
					return nil, fmt.Errorf("profile %s: %w", path, err)
				}
				at = "/"
			}
			todo = append(strings.Split(target, "/"), todo...)
		default:
			unix.Close(next)
			unix.Close(fd)
			return nil, fmt.Errorf("profile %s: %s is no directory", path, filepath.Join(at, name))
		}
	}
	// The O_PATH descriptor cannot list or change the directory: open it
	// for that, as the same directory (".").
	dir, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return os.NewFile(uintptr(dir), abs), nil
}

// linkTarget is where the symbolic link name in the directory dirfd
// (at) points, when it may be followed: u must not have been able to put
// it there.
func linkTarget(dirfd, linkfd int, at, name string, u *BrowserUser, link *unix.Stat_t) (string, error) {
	var dir unix.Stat_t
	if err := unix.Fstat(dirfd, &dir); err != nil {
		return "", err
	}
	if why := u.mayPlant(&dir, link); why != "" {
		return "", fmt.Errorf("%w: %s is a symbolic link in %s, which %s; framebus does not follow it as root (replace it with the directory itself, or keep profiles elsewhere)",
			ErrUnsafeProfile, filepath.Join(at, name), at, why)
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(linkfd, "", buf)
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(at, name), err)
	}
	return string(buf[:n]), nil
}

// mayPlant says why u could have put the entry (of stat entry) in the
// directory (of stat dir), "" when it could not: the directory is u's,
// or its group's and group-writable, or writable by all (in a sticky
// one, only entries u owns are u's to replace).
func (u *BrowserUser) mayPlant(dir, entry *unix.Stat_t) string {
	if u == nil {
		return ""
	}
	switch {
	case int(dir.Uid) == u.UID:
		return fmt.Sprintf("%s (the browser's account) owns", u.Name)
	case int(dir.Gid) == u.GID && dir.Mode&0o020 != 0:
		return fmt.Sprintf("the group of %s (the browser's account) may write", u.Name)
	case dir.Mode&0o002 != 0 && dir.Mode&unix.S_ISVTX == 0:
		return fmt.Sprintf("everyone, %s (the browser's account) too, may write", u.Name)
	case dir.Mode&0o002 != 0 && entry.Uid != 0 && entry.Uid != dir.Uid:
		return fmt.Sprintf("everyone may write, and uid %d, not root, made it", entry.Uid)
	}
	return ""
}

// openProfileFile opens name in the profile directory dir, never through
// a link: it must be a regular file, and for root one with no other name
// (a hard link to a file of root's elsewhere would have root work on
// that file; a user's own hard links, a backup's, are harmless). flags add to O_NOFOLLOW|O_NONBLOCK (no hang on a FIFO).
func openProfileFile(dir *os.File, name string, flags int, perm uint32) (*os.File, error) {
	path := filepath.Join(dir.Name(), name)
	fd, err := unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, perm)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%w: %s is a symbolic link; framebus does not follow it as root (remove it)", ErrUnsafeProfile, path)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		err = fmt.Errorf("%w: %s is no regular file (mode %o); remove it", ErrUnsafeProfile, path, st.Mode)
	case st.Nlink != 1 && os.Geteuid() == 0: // a user's own links are theirs
		err = fmt.Errorf("%w: %s has %d names (hard links); framebus does not work on it as root (remove it)", ErrUnsafeProfile, path, st.Nlink)
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	// Back to blocking reads and writes: it is a regular file.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// MakeProfileDir makes dir, and the directories missing above it
// (0700), as Launch resolves a profile for a browser that runs as u (nil:
// this process's user): a link u could have put on the way is refused,
// never followed. dir itself is then u's, for a caller that makes
// profile directories ahead of their launch.
func MakeProfileDir(dir string, u *BrowserUser) error {
	f, err := openProfileDir(dir, u, true)
	if err != nil {
		return err
	}
	defer f.Close()
	if u != nil {
		return f.Chown(u.UID, u.GID)
	}
	return nil
}

// LaunchUser is the account a browser launched with LaunchOptions.User
// user runs as: nil for this process's own (not root, or root by
// choice).
func LaunchUser(user string) (*BrowserUser, error) {
	return browserUserFor(user)
}
