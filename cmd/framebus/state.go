package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// nodeState is what serve prints on its first line and keeps in the state
// file while it runs, so client commands find the node.
type nodeState struct {
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

// statePath is $FRAMEBUS_STATE, else <user cache dir>/framebus/node.json.
func (c *cli) statePath() (string, error) {
	if p := c.getenv(envState); p != "" {
		return p, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no state file: %w; set %s", err, envState)
	}
	return filepath.Join(dir, "framebus", "node.json"), nil
}

// defaultStateHint names the default state file for help.
func defaultStateHint() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "framebus", "node.json")
	}
	return "$XDG_CACHE_HOME/framebus/node.json"
}

// errState is what a client says of a state file it cannot use: no node
// when there is none, else what is wrong with it (a FIFO or a directory
// in its place, not JSON, another user's).
func errState(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errNoNode(err)
	case errors.Is(err, fs.ErrPermission):
		return protocol.Errorf(protocol.CodePermissionDenied, "state file %s: %v (it is readable by the user that runs the node only)", path, err)
	}
	return protocol.Errorf(protocol.CodeBadRequest, "state file: %v", err)
}

func readState(path string) (nodeState, error) {
	data, err := readSmallFile(path)
	if err != nil {
		return nodeState{}, err
	}
	var st nodeState
	if err := json.Unmarshal(data, &st); err != nil {
		return nodeState{}, fmt.Errorf("state file %s: %w", path, err)
	}
	if st.Bus == "" {
		return nodeState{}, fmt.Errorf("state file %s names no bus", path)
	}
	return st, nil
}

// writeState replaces the state file atomically (write, then rename), so a
// client never reads half of it. The file may hold credentials of an
// external bus URL: only its owner may read it.
func writeState(path string, st nodeState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return writePrivate(path, append(data, '\n'))
}

// withoutPassword is a bus URL (or a comma-separated list of them) with
// any password replaced by "xxxxx".
func withoutPassword(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
				parts[i] = u.String()
			}
		}
	}
	return strings.Join(parts, ",")
}

// removeState removes the state file if it still describes the node of
// process pid; another node may have replaced it meanwhile.
func removeState(path string, pid int) error {
	st, err := readState(path)
	if err != nil || st.PID != pid {
		return nil
	}
	return os.Remove(path)
}

// processAlive reports whether a process with that id exists and has
// not ended: a node killed whose parent has not reaped it yet (a zombie)
// is gone, though the id still answers a signal; taken for alive, its
// successor kept neither its tabs nor told clients it was restarting.
func processAlive(pid int) bool {
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
// read the files in it, which stay 0600. A directory privateDir left
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
