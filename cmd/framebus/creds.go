package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/atomicfile"
	"github.com/framebus/framebus/protocol"
)

// Credentials on the local machine: serve writes them beside its state
// file, readable by its user only, and client commands read them there
// unless told otherwise.
const (
	envCreds       = "FRAMEBUS_CREDS"   // a credentials file, when --creds is not given
	agentCredsFile = "credentials.json" // role agent: what client commands use
	adminCredsFile = "admin.json"       // role admin: what creds add uses
	usersFile      = "users.json"       // users added with creds add (hashes only)
)

// The node's own users: their passwords are kept beside the state file
// from one start to the next (see localUsers).
const (
	localAgentUser = "agent"
	localAdminUser = "admin"
)

// credsPath is the credentials file a client command uses: --creds, else
// $FRAMEBUS_CREDS (explicit: it must exist), else name beside the state
// file (implicit: absent means none).
func (c *cli) credsPath(flag, name string) (path string, explicit bool, err error) {
	if flag != "" {
		return flag, true, nil
	}
	if p := c.getenv(envCreds); p != "" {
		return p, true, nil
	}
	state, err := c.statePath()
	if err != nil {
		return "", false, err
	}
	return filepath.Join(filepath.Dir(state), name), false, nil
}

// credentials reads the credentials a client command logs in with, and
// whether there are any: a missing file beside the state file is none
// (a node on an external bus writes none).
func (c *cli) credentials(flag string) (protocol.Credentials, bool, error) {
	path, explicit, err := c.credsPath(flag, agentCredsFile)
	if err != nil {
		return protocol.Credentials{}, false, nil
	}
	creds, err := readCredentials(path)
	if !explicit && errors.Is(err, fs.ErrNotExist) {
		return protocol.Credentials{}, false, nil
	}
	if err != nil {
		return protocol.Credentials{}, false, err
	}
	return creds, true, nil
}

// readCredentials reads a credentials file.
func readCredentials(path string) (protocol.Credentials, error) {
	var creds protocol.Credentials
	data, err := readSmallFile(path)
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

// writePrivate replaces path atomically with data readable by its owner
// only, never by others, not even for a moment (see atomicfile.Write).
func writePrivate(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data)
}

func writeCredentials(path string, creds protocol.Credentials) error {
	data, _ := json.MarshalIndent(creds, "", "  ")
	return writePrivate(path, append(data, '\n'))
}

// newPassword is a fresh random password: 192 bits in hex, which never
// starts with '-' (a base64 one did, one time in 32, and a command line
// tool then took it for a flag: nats --password -x...).
func newPassword() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func credsCommand() command {
	return command{
		name:    "creds",
		args:    "add <name> --role agent|observer|admin [--out FILE] | remove <name> | list",
		summary: "let another process use the bus: make a user with a role and print its credentials",
		group:   groupNode,
		details: `creds add <name> --role R    makes user <name> with role R (agent: plans,
                             lifecycle, sessions, frames; observer: frames,
                             history, content, tab lists, nothing that changes a
                             browser; admin: everything) and prints its
                             credentials file, or writes it (0600) to --out.
                             The running node accepts it at once and keeps it
                             (the bcrypt hash only) in ` + usersFile + ` beside its
                             state file, for the next start too.
creds remove <name>          removes a user; its connections are closed
creds list                   the users added with creds add
They need the node's admin credentials (` + adminCredsFile + ` beside the state
file, or --creds FILE of an admin): an agent can never make an admin.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, false)
			role := fs.String("role", "", "the new user's `role`: agent, observer or admin")
			out := fs.String("out", "", "write the credentials to `FILE` (0600) instead of printing them")
			return func(c *cli, args []string) error {
				if len(args) == 0 {
					return usagef("creds: want add <name> --role R, remove <name> or list")
				}
				if target.creds == "" {
					path, _, err := c.credsPath("", adminCredsFile)
					if err != nil {
						return errNoNode(err)
					}
					target.creds = path
				}
				switch sub, rest := args[0], args[1:]; {
				case sub == "add" && len(rest) == 1:
					if err := protocol.CheckUser(rest[0], *role); err != nil {
						return usagef("creds add: %v", err)
					}
					return c.addUser(target, rest[0], *role, *out)
				case sub == "remove" && len(rest) == 1:
					return c.send(target, func(cl *client) string { return cl.subj.AdminUsers(protocol.UsersRemove) },
						protocol.UserRequest{Name: rest[0]}, noNode)
				case sub == "list" && len(rest) == 0:
					return c.send(target, func(cl *client) string { return cl.subj.AdminUsers(protocol.UsersList) }, nil, noNode)
				}
				return usagef("creds: want add <name> --role R, remove <name> or list, got %q", args)
			}
		},
	}
}

// addUser makes a password, sends the node only its hash, and hands out
// the credentials.
func (c *cli) addUser(target clientFlags, name, role, out string) error {
	// --out is made, empty and 0600, before the node has the user: a
	// file that exists (the node's own credentials.json, say) is never
	// replaced, and a path that cannot be written adds no user whose
	// password nobody has.
	if out != "" {
		if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
			return protocol.Errorf(protocol.CodeBadRequest, "creds add --out %s: %v", out, err)
		}
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return protocol.Errorf(protocol.CodeBadRequest, "creds add --out %s: it exists; creds add writes a new file (remove it, or choose another name)", out)
		}
		if err != nil {
			return protocol.Errorf(protocol.CodeBadRequest, "creds add --out %s: %v", out, err)
		}
		f.Close()
		written := false
		defer func() {
			if !written {
				os.Remove(out)
			}
		}()
		return c.addUserTo(target, name, role, out, &written)
	}
	return c.addUserTo(target, name, role, "", nil)
}

func (c *cli) addUserTo(target clientFlags, name, role, out string, written *bool) error {
	password := newPassword()
	hash, err := bus.HashPassword(password)
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "hash the password: %v", err)
	}
	cl, err := c.connect(target)
	if err != nil {
		return err
	}
	defer cl.close()
	ctx, cancel := context.WithTimeout(c.ctx, lifecycleWait)
	defer cancel()
	data, _ := json.Marshal(protocol.UserRequest{Name: name, Role: role, PasswordHash: hash})
	answer, err := cl.bc.RequestData(ctx, cl.subj.AdminUsers(protocol.UsersAdd), data)
	if err != nil {
		return errNoNode(err)
	}
	var reply errorReply
	if err := json.Unmarshal(answer, &reply); err != nil {
		return protocol.Errorf(protocol.CodeInternal, "users reply: invalid JSON: %v", err)
	}
	if !reply.OK {
		return protocol.Errorf(reply.Code, "%s", reply.Error)
	}
	creds := protocol.Credentials{URL: cl.creds.URL, WebSocket: cl.creds.WebSocket, User: name, Password: password,
		Role: role, Prefix: cl.subj.Prefix, InboxPrefix: protocol.InboxPrefix(name), JSAPIPrefix: cl.subj.JSAPIPrefixFor(role),
		BusUID: cl.creds.BusUID}
	if out != "" {
		if err := writeCredentials(out, creds); err != nil {
			return protocol.Errorf(protocol.CodeInternal, "write %s: %v (user %s was added; creds remove %s)", out, err, name, name)
		}
		*written = true
		c.printJSON(struct {
			OK   bool   `json:"ok"`
			File string `json:"file"`
			User string `json:"user"`
			Role string `json:"role"`
		}{true, out, name, role})
		return nil
	}
	c.printJSON(struct {
		OK bool `json:"ok"`
		protocol.Credentials
	}{true, creds})
	return nil
}

// privateDir makes dir, the credentials' directory, the user's alone
// (0700), as it is when serve creates it. A shared directory (sticky, as
// /tmp), one of another user, and the user's home are left as they are,
// with an error to warn of: the files in it stay 0600 either way.
func privateDir(dir string) error {
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
