// Package smallfile reads and writes framebus's own small files:
// credentials, state, users and configuration files.
package smallfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/framebus/framebus/internal/atomicfile"
)

// maxSmallFile bounds what is read of a file framebus keeps small: a
// credentials, state, users or config file (a few KiB at most).
const maxSmallFile = 4 << 20

// Read reads one of framebus's own small files. It must be a
// regular file of at most maxSmallFile bytes: a FIFO, a device or a
// directory named by mistake (--creds, $FRAMEBUS_STATE, --config) is an
// error at once, where reading it would block for good (a FIFO nobody
// writes) or without end (/dev/zero). The open does not block, so
// neither does a FIFO's.
func Read(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fileKind(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSmallFile+1))
	if err == nil && len(data) > maxSmallFile {
		err = fmt.Errorf("%s is larger than %d bytes", path, maxSmallFile)
	}
	return data, err
}

// fileKind names what a non-regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// ReadSecret reads a small file that holds a secret: only its owner
// may read or write it (0600 or less), else it is refused, as ssh does
// a private key that others can read.
func ReadSecret(path string) ([]byte, error) {
	data, err := Read(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%s is open to others (%s): it holds a secret; chmod 600 it", path, perm)
	}
	return data, nil
}

// WritePrivate replaces path atomically with data readable by its owner
// only, never by others, not even for a moment (see atomicfile.Write).
func WritePrivate(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data)
}
