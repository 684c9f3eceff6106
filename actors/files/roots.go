package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Setting is the configuration key of the roots, named in every refusal.
const Setting = "files.roots"

// Roots are the directories under which a plan may name node files. The
// zero value and nil have none: every node path is refused.
type Roots struct {
	dirs  []string // absolute, symlinks resolved, cleaned
	given []string // as configured, cleaned
}

// NewRoots checks dirs (each an existing directory, given as an absolute
// path) and resolves their symlinks.
func NewRoots(dirs []string) (*Roots, error) {
	r := &Roots{}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("%s: %q is not an absolute path", Setting, d)
		}
		resolved, err := filepath.EvalSymlinks(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", Setting, d, plain(err))
		}
		fi, err := os.Stat(resolved)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", Setting, d, plain(err))
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s: %q is not a directory", Setting, d)
		}
		r.dirs = append(r.dirs, resolved)
		r.given = append(r.given, filepath.Clean(d))
	}
	return r, nil
}

// Dirs are the roots, resolved.
func (r *Roots) Dirs() []string {
	if r == nil {
		return nil
	}
	return append([]string(nil), r.dirs...)
}

// DeniedError refuses a node path outside the roots.
type DeniedError struct {
	Path     string // as given
	Resolved string // what it resolved to, when that was the trouble
	Roots    []string
}

func (e *DeniedError) Error() string {
	where := "none are configured"
	if len(e.Roots) > 0 {
		where = strings.Join(e.Roots, ", ")
	}
	if e.Resolved != "" && e.Resolved != e.Path {
		return fmt.Sprintf("permission denied: %s resolves to %s, which is outside the file roots (%s: %s)", e.Path, e.Resolved, Setting, where)
	}
	return fmt.Sprintf("permission denied: %s is outside the file roots (%s: %s)", e.Path, Setting, where)
}

// NotFoundError is a path under a root that names no file.
type NotFoundError struct {
	Path string
	Err  error
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }
func (e *NotFoundError) Unwrap() error { return e.Err }

// Resolve returns path with `..` and symlinks resolved, if that lies
// under a root: else a *DeniedError. A relative path is refused (relative
// to what, on the node?). A path whose words already leave every root is
// refused without touching the file system, so a refusal never tells
// whether a file exists outside the roots.
func (r *Roots) Resolve(path string) (string, error) {
	if r == nil || len(r.dirs) == 0 || !filepath.IsAbs(path) || strings.IndexByte(path, 0) >= 0 {
		return "", r.denied(path, "")
	}
	clean := filepath.Clean(path)
	if !under(clean, r.dirs) && !under(clean, r.given) {
		return "", r.denied(path, "")
	}
	resolved, err := filepath.EvalSymlinks(clean)
	if err != nil {
		return "", &NotFoundError{Path: path, Err: plain(err)}
	}
	if !r.contains(resolved) {
		return "", r.denied(path, resolved)
	}
	return resolved, nil
}

// Open opens the regular file path names, under a root, for reading
// (anything else, a FIFO or a device, is refused without waiting). What
// was opened is checked again by its descriptor, so a symlink swapped in
// after Resolve cannot redirect the read (O_NOFOLLOW refuses one as the
// last component; /proc/self/fd says where a directory swap led).
func (r *Roots) Open(path string) (*os.File, error) {
	resolved, err := r.Resolve(path)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO opens at once (and is refused below as no
	// regular file) instead of waiting for a writer; on a regular file it
	// changes nothing.
	f, err := os.OpenFile(resolved, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &NotFoundError{Path: path, Err: plain(err)}
	}
	opened, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || !r.contains(opened) {
		f.Close()
		return nil, r.denied(path, opened)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotFoundError{Path: path, Err: errors.New("is not a regular file")}
	}
	return f, nil
}

// contains reports whether an absolute, clean, resolved path lies in a
// root.
func (r *Roots) contains(p string) bool { return under(p, r.dirs) }

func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

func (r *Roots) denied(path, resolved string) error {
	return &DeniedError{Path: path, Resolved: resolved, Roots: r.Dirs()}
}

// plain is err without the call that failed ("no such file or
// directory", not "lstat /x: no such file or directory").
func plain(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
