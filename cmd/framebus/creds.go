package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// envCreds names a credentials file, when --creds is not given.
const envCreds = "FRAMEBUS_CREDS"

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

// credentials reads the credentials a client command logs in with (flag,
// else file beside the state file), and
// whether there are any: a missing file beside the state file is none
// (a node on an external bus writes none).
func (c *cli) credentials(flag, file string) (protocol.Credentials, bool, error) {
	path, explicit, err := c.credsPath(flag, file)
	if err != nil {
		return protocol.Credentials{}, false, nil
	}
	creds, err := serving.ReadCredentials(path)
	if !explicit && errors.Is(err, fs.ErrNotExist) {
		return protocol.Credentials{}, false, nil
	}
	if err != nil {
		return protocol.Credentials{}, false, err
	}
	return creds, true, nil
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
                             (the bcrypt hash only) in ` + serving.UsersFile + ` beside its
                             state file, for the next start too.
creds remove <name>          removes a user; its connections are closed
creds list                   the users added with creds add
They need the node's admin credentials (` + serving.AdminCredsFile + ` beside the state
file, or --creds FILE of an admin): an agent can never make an admin.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, false)
			role := fs.String("role", "", "the new user's `role`: agent, observer, operator or admin")
			out := fs.String("out", "", "write the credentials to `FILE` (0600) instead of printing them")
			return func(c *cli, args []string) error {
				if len(args) == 0 {
					return usagef("creds: want add <name> --role R, remove <name> or list")
				}
				if target.creds == "" {
					path, _, err := c.credsPath("", serving.AdminCredsFile)
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
	password := serving.NewPassword()
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
		if err := serving.WriteCredentials(out, creds); err != nil {
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
