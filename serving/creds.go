package serving

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/framebus/framebus/internal/smallfile"
	"github.com/framebus/framebus/protocol"
)

// Credentials on the local machine: serve writes them beside its state
// file, readable by its user only, and client commands read them there
// unless told otherwise.
const (
	AgentCredsFile    = "credentials.json" // role agent: what client commands use
	OperatorCredsFile = "operator.json"    // role operator: what a person's commands use (view, takeover, handback, answer)
	AdminCredsFile    = "admin.json"       // role admin: what creds add uses
	UsersFile         = "users.json"       // users added with creds add (hashes only)
)

// The node's own users: their passwords are kept beside the state file
// from one start to the next (see localUsers).
const (
	LocalAgentUser    = "agent"
	LocalOperatorUser = "operator"
	LocalAdminUser    = "admin"
)

// ReadCredentials reads a credentials file.
func ReadCredentials(path string) (protocol.Credentials, error) {
	var creds protocol.Credentials
	data, err := smallfile.Read(path)
	switch {
	case errors.Is(err, fs.ErrPermission):
		return creds, protocol.Errorf(protocol.CodePermissionDenied, "credentials %s: %w (it is readable by the user that runs the node only)", path, err)
	case errors.Is(err, fs.ErrNotExist):
		return creds, protocol.Errorf(protocol.CodeUnavailable, "credentials %s: %w", path, err)
	case err != nil:
		return creds, protocol.Errorf(protocol.CodeBadRequest, "credentials: %v", err)
	}
	if err := json.Unmarshal(data, &creds); err != nil {
		return creds, protocol.Errorf(protocol.CodeBadRequest, "credentials %s: not a credentials file: %v", path, err)
	}
	if creds.User == "" || creds.URL == "" {
		return creds, protocol.Errorf(protocol.CodeBadRequest, "credentials %s: names no user or no url", path)
	}
	return creds, nil
}

// WriteCredentials writes a credentials file, 0600.
func WriteCredentials(path string, creds protocol.Credentials) error {
	data, _ := json.MarshalIndent(creds, "", "  ")
	return smallfile.WritePrivate(path, append(data, '\n'))
}

// NewPassword is a fresh random password: 192 bits in hex, which never
// starts with '-' (a base64 one did, one time in 32, and a command line
// tool then took it for a flag: nats --password -x...).
func NewPassword() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// PrivateDir makes dir, the credentials' directory, the user's alone
// (0700), as it is when serve creates it. A shared directory (sticky, as
// /tmp), one of another user, and the user's home are left as they are,
// with an error to warn of: the files in it stay 0600 either way.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o066 == 0 {
		// 0700, or 0711 for a browser's account on its way to a
		// profile beneath (passableStateDir): others list nothing.
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&os.ModeSticky != 0 || !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s (%s) is shared with others; keep the state file in a directory of your own", dir, fi.Mode().Perm())
	}
	if home, err := os.UserHomeDir(); err == nil && sameDir(dir, home) {
		// Not the user's home (FRAMEBUS_STATE=~/node.json): others may
		// be meant to enter it.
		return fmt.Errorf("%s is your home directory, which framebus leaves as it is (%s); keep the state file in a directory of its own", dir, fi.Mode().Perm())
	}
	return os.Chmod(dir, 0o700)
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
