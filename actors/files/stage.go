package files

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/framebus/framebus/protocol"
)

// Limits bound what a tab's Stage holds.
type Limits struct {
	MaxFile  int64 // bytes of one file; DefaultMaxFile when 0
	MaxTotal int64 // bytes of all the tab's files; DefaultMaxTotal when 0
	// Shared, when set, bounds the files of every stage given it
	// together (a node's tabs); nil: only the limits above.
	Shared *Budget
}

// The default limits.
const (
	DefaultMaxFile  = 100 << 20
	DefaultMaxTotal = 500 << 20
)

func (l Limits) file() int64 {
	if l.MaxFile > 0 {
		return l.MaxFile
	}
	return DefaultMaxFile
}

func (l Limits) total() int64 {
	if l.MaxTotal > 0 {
		return l.MaxTotal
	}
	return DefaultMaxTotal
}

// Stage is a tab's private directory of files to upload: created (0700)
// on first use under its parent, each file 0600 in a directory of its own
// (so the page sees the file's own name), removed by Close. Safe for
// concurrent use: clients stage from the bus while the tab runs plans.
type Stage struct {
	parent string
	limits Limits

	mu     sync.Mutex
	dir    string // "" until the first file
	files  map[string]*staged
	total  int64 // bytes promised by the files begun (their declared sizes)
	closed bool
	// uid and gid own the directories and files, -1 for this process.
	uid, gid int
}

type staged struct {
	name     string
	path     string
	size     int64 // declared
	sum      string
	received int64
	f        *os.File
	h        hash.Hash
	done     bool
}

// NewStage makes a tab's stage under parent ("" for the system's
// temporary directory).
func NewStage(parent string, limits Limits) *Stage {
	return &Stage{parent: parent, limits: limits, files: map[string]*staged{}, uid: -1, gid: -1}
}

// OwnedBy makes the stage's files uid's and gid's (a browser running as
// another account reads them); call it before the first file. The
// directories stay the node's (0711: that account can reach a file it is
// given by path, but neither list nor change them), so the account cannot
// swap a directory for a link between the node making it and writing in
// it.
func (s *Stage) OwnedBy(uid, gid int) { s.uid, s.gid = uid, gid }

// Begin starts a file: its name (as the page sees it), its size and the
// hex SHA-256 of its content. It answers the file's id.
func (s *Stage) Begin(name string, size int64, sum string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	if size < 0 {
		return "", protocol.Errorf(protocol.CodeBadRequest, "stage.size: %d is not a size", size)
	}
	if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
		return "", protocol.Errorf(protocol.CodeBadRequest, "stage.sha256: %q is not a SHA-256 digest (64 hex digits)", sum)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", protocol.Errorf(protocol.CodeTabClosed, "the tab closed")
	}
	if size > s.limits.file() {
		return "", protocol.Errorf(protocol.CodeTooLarge, "%s is %d bytes; a staged file may have at most %d", name, size, s.limits.file())
	}
	if s.total+size > s.limits.total() {
		return "", protocol.Errorf(protocol.CodeTooLarge, "%s (%d bytes) would bring the tab's staged files to %d bytes; a tab may hold at most %d (they go when it closes)", name, size, s.total+size, s.limits.total())
	}
	if err := s.limits.Shared.take(name, size); err != nil {
		return "", err
	}
	st, id, err := s.create(name)
	if err != nil {
		s.limits.Shared.give(size)
		return "", err
	}
	st.size, st.sum, st.h = size, strings.ToLower(sum), sha256.New()
	s.total += size
	s.files[id] = st
	return id, nil
}

// reachable lets the files' own account pass through dir (0711) when it
// is not the node's.
func (s *Stage) reachable(dir string) error {
	if s.uid < 0 {
		return nil
	}
	return os.Chmod(dir, 0o711)
}

// create makes the file of a new id, 0600 in a directory of its own (0700,
// or 0711 when the file is another account's: see OwnedBy).
func (s *Stage) create(name string) (*staged, string, error) {
	if s.dir == "" {
		dir, err := os.MkdirTemp(s.parent, "framebus-tab-")
		if err == nil {
			err = s.reachable(dir)
		}
		if err != nil {
			return nil, "", protocol.Errorf(protocol.CodeInternal, "stage: %v", err)
		}
		s.dir = dir
	}
	id := newID()
	fdir := filepath.Join(s.dir, id)
	err := os.Mkdir(fdir, 0o700)
	if err == nil {
		err = s.reachable(fdir)
	}
	if err != nil {
		return nil, "", protocol.Errorf(protocol.CodeInternal, "stage: %v", err)
	}
	path := filepath.Join(fdir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		if err = f.Chown(s.uid, s.gid); err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, "", protocol.Errorf(protocol.CodeInternal, "stage: %v", err)
	}
	return &staged{name: name, path: path, f: f}, id, nil
}

// Write writes a chunk at offset, which must be where the file's bytes so
// far end; it answers how many bytes the file has.
func (s *Stage) Write(id string, offset int64, data []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.open(id)
	if err != nil {
		return 0, err
	}
	if offset != st.received {
		return st.received, protocol.Errorf(protocol.CodeBadRequest, "stage.offset: %d, but %s has %d bytes so far; send the chunk at %d", offset, st.name, st.received, st.received)
	}
	if st.received+int64(len(data)) > st.size {
		s.drop(id, st)
		return 0, protocol.Errorf(protocol.CodeTooLarge, "%s: more bytes than the %d declared; the file is dropped", st.name, st.size)
	}
	if _, err := st.f.Write(data); err != nil {
		s.drop(id, st)
		return 0, protocol.Errorf(protocol.CodeInternal, "stage %s: %v", st.name, err)
	}
	st.h.Write(data)
	st.received += int64(len(data))
	return st.received, nil
}

// Commit ends a file: its size and digest must be those declared, else
// it is dropped.
func (s *Stage) Commit(id string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.open(id)
	if err != nil {
		return 0, err
	}
	if st.received != st.size {
		s.drop(id, st)
		return 0, protocol.Errorf(protocol.CodeBadRequest, "%s: %d bytes received of the %d declared; the file is dropped", st.name, st.received, st.size)
	}
	if got := hex.EncodeToString(st.h.Sum(nil)); got != st.sum {
		s.drop(id, st)
		return 0, protocol.Errorf(protocol.CodeBadRequest, "%s: the bytes received have SHA-256 %s, not the %s declared; the file is dropped", st.name, got, st.sum)
	}
	if err := st.f.Close(); err != nil {
		s.drop(id, st)
		return 0, protocol.Errorf(protocol.CodeInternal, "stage %s: %v", st.name, err)
	}
	st.f, st.h, st.done = nil, nil, true
	return st.size, nil
}

// Abort drops a file, staged or not.
func (s *Stage) Abort(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.files[id]
	if !ok {
		return s.unknown(id)
	}
	s.drop(id, st)
	return nil
}

// open is the file of id that is still being written.
func (s *Stage) open(id string) (*staged, error) {
	st, ok := s.files[id]
	switch {
	case !ok:
		return nil, s.unknown(id)
	case st.done:
		return nil, protocol.Errorf(protocol.CodeBadRequest, "stage.id: %s is committed already", id)
	}
	return st, nil
}

func (s *Stage) drop(id string, st *staged) {
	if st.f != nil {
		st.f.Close()
	}
	os.RemoveAll(filepath.Dir(st.path))
	s.total -= st.size
	s.limits.Shared.give(st.size)
	delete(s.files, id)
}

func (s *Stage) unknown(id string) error {
	if s.closed {
		return protocol.Errorf(protocol.CodeTabClosed, "the tab closed")
	}
	return protocol.Errorf(protocol.CodeBadRequest, "no file %q is staged for this tab (ids are the node's answer to a stage request, and belong to the tab they were staged for)", id)
}

// Path is the path of a committed file, for the browser.
func (s *Stage) Path(id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.files[id]
	if !ok {
		return "", s.unknown(id)
	}
	if !st.done {
		return "", protocol.Errorf(protocol.CodeBadRequest, "staged file %s (%s) is not committed yet (%d of %d bytes)", id, st.name, st.received, st.size)
	}
	return st.path, nil
}

// Copy stages the content of an open node file (a plan's upload of a path
// under the roots), so the browser reads a copy no later change to the
// original can affect. It answers the copy's path.
func (s *Stage) Copy(f *os.File, name string) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", protocol.Errorf(protocol.CodeInternal, "stage %s: %v", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", protocol.Errorf(protocol.CodeTabClosed, "the tab closed")
	}
	size := fi.Size()
	if size > s.limits.file() {
		return "", protocol.Errorf(protocol.CodeTooLarge, "%s is %d bytes; an uploaded file may have at most %d", f.Name(), size, s.limits.file())
	}
	if s.total+size > s.limits.total() {
		return "", protocol.Errorf(protocol.CodeTooLarge, "%s (%d bytes) would bring the tab's files to %d bytes; a tab may hold at most %d", f.Name(), size, s.total+size, s.limits.total())
	}
	if err := s.limits.Shared.take(f.Name(), size); err != nil {
		return "", err
	}
	st, id, err := s.create(name)
	if err != nil {
		s.limits.Shared.give(size)
		return "", err
	}
	s.files[id] = st
	st.size = size
	s.total += size
	// Read at most the size checked: a file that grows meanwhile is cut.
	n, err := io.Copy(st.f, io.LimitReader(f, size))
	if err == nil {
		err = st.f.Close()
	}
	st.f = nil
	if err != nil {
		s.drop(id, st)
		return "", protocol.Errorf(protocol.CodeInternal, "stage %s: %v", name, err)
	}
	s.total += n - size
	s.limits.Shared.give(size - n)
	st.size, st.received, st.done = n, n, true
	return st.path, nil
}

// Close removes the directory and every file in it; the stage takes no
// more files.
func (s *Stage) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for id, st := range s.files {
		if st.f != nil {
			st.f.Close()
		}
		delete(s.files, id)
	}
	s.limits.Shared.give(s.total)
	s.total = 0
	if s.dir == "" {
		return nil
	}
	dir := s.dir
	s.dir = ""
	return os.RemoveAll(dir)
}

// checkName: a file's name is one path element the page will see, never
// a path.
func checkName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return protocol.Errorf(protocol.CodeBadRequest, "stage.name: %q is not a file name", name)
	case strings.ContainsAny(name, "/\x00"):
		return protocol.Errorf(protocol.CodeBadRequest, "stage.name: %q is a path; give the file's name only", name)
	case len(name) > 255 || !utf8.ValidString(name):
		return protocol.Errorf(protocol.CodeBadRequest, "stage.name: %q is not a file name (at most 255 bytes of UTF-8)", name)
	}
	return nil
}

// newID is an opaque id: 128 random bits in hex, never derived from a
// name or a path.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // documented never to fail on Linux
	}
	return hex.EncodeToString(b[:])
}
