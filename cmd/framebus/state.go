package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/framebus/framebus/protocol"
)

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
