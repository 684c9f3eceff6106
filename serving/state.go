package serving

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/smallfile"
	"github.com/framebus/framebus/protocol"
)

// State is what serve prints on its first line and keeps in the state
// file while it runs, so client commands find the node.
type State struct {
	OK   bool   `json:"ok"`
	Node string `json:"node"` // the node's name
	Bus  string `json:"bus"`
	// WebSocket is the bus's WebSocket listener (ws://HOST:PORT), if any.
	WebSocket string             `json:"websocket,omitempty"`
	Prefix    string             `json:"prefix"`
	PID       int                `json:"pid"`
	Tabs      []protocol.TabInfo `json:"tabs"`
	// Active is the tab client commands use without --tab (tab select).
	Active string `json:"active,omitempty"`
}

// ReadState reads the state file at path.
func ReadState(path string) (State, error) {
	data, err := smallfile.Read(path)
	if err != nil {
		return State{}, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, fmt.Errorf("state file %s: %w", path, err)
	}
	if st.Bus == "" {
		return State{}, fmt.Errorf("state file %s names no bus", path)
	}
	return st, nil
}

// WriteState replaces the state file atomically (write, then rename), so a
// client never reads half of it. The file may hold credentials of an
// external bus URL: only its owner may read it.
func WriteState(path string, st State) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return smallfile.WritePrivate(path, append(data, '\n'))
}

// removeState removes the state file if it still describes the node of
// process pid; another node may have replaced it meanwhile.
func removeState(path string, pid int) error {
	st, err := ReadState(path)
	if err != nil || st.PID != pid {
		return nil
	}
	return os.Remove(path)
}

// ProcessAlive reports whether a process with that id exists and has
// not ended: a node killed whose parent has not reaped it yet (a zombie)
// is gone, though the id still answers a signal; taken for alive, its
// successor kept neither its tabs nor told clients it was restarting.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	return !zombie(pid)
}

// zombie reports whether process pid has ended and waits to be reaped
// (state Z in /proc/PID/stat; the state follows the command's name in
// parentheses, which may hold spaces and parentheses itself).
func zombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] == 'Z'
}

// passableStateDir lets the browser's account (account; nil: Chromium
// runs as this user) pass through the state directory when a profile
// directory lies under it (FRAMEBUS_STATE=/x/node.json with
// --profile-dir /x/prof, the layout a newcomer picks): 0711, so it can
// enter on the way to its profile but neither list the directory nor
// read the files in it, which stay 0600. A directory PrivateDir left
// as it is (shared, or another user's) is left so here too.
func passableStateDir(stateDir string, account *cdpdriver.BrowserUser, profileDirs ...string) error {
	if account == nil || !slices.ContainsFunc(profileDirs, func(p string) bool { return p != "" && below(p, stateDir) }) {
		return nil
	}
	fi, err := os.Stat(stateDir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm() != 0o700 {
		return nil
	}
	return os.Chmod(stateDir, 0o711)
}

// below reports whether path lies under dir (both made absolute).
func below(path, dir string) bool {
	p, errP := filepath.Abs(path)
	d, errD := filepath.Abs(dir)
	if errP != nil || errD != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}
