// Package atomicfile writes a file whole or not at all: a reader (or a
// process started after a crash) sees the old content or the new, never
// half of it.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data: written to a temporary file beside it,
// then renamed over it. The file is its owner's alone (0600, as
// os.CreateTemp makes it) from the first byte on.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}
