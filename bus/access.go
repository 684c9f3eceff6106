package bus

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/protocol"
)

// User is a user of the embedded server: a name, the bcrypt hash of its
// password (the server never holds the password itself) and its role,
// whose subject permissions protocol.Subjects.RolePermissions gives.
type User struct {
	Name         string `json:"name"`
	PasswordHash string `json:"passwordHash"`
	Role         string `json:"role"`
}

// HashPassword is the bcrypt hash of a password that framebus made up
// (192 random bits or more), as User.PasswordHash takes it. The cost is
// bcrypt's least: stretching protects passwords people choose, and no one
// guesses 192 random bits, however cheap each guess; while every login
// pays the cost (1 ms at the least against 60 ms at bcrypt's default).
// A password a person chose deserves the default cost (htpasswd -B).
func HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	return string(h), err
}

// checkUser checks a user's name, role and hash.
func checkUser(u User) error {
	if err := protocol.CheckUser(u.Name, u.Role); err != nil {
		return fmt.Errorf("%w: user %q: %v", ErrInvalidOptions, u.Name, err)
	}
	if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
		return fmt.Errorf("%w: user %q: the password must be given as a bcrypt hash ($2a$...): %v", ErrInvalidOptions, u.Name, err)
	}
	return nil
}

// checkUsers checks every user and that no name is given twice.
func checkUsers(users []User) error {
	seen := map[string]bool{}
	for _, u := range users {
		if err := checkUser(u); err != nil {
			return err
		}
		if seen[u.Name] {
			return fmt.Errorf("%w: user %q is given twice", ErrInvalidOptions, u.Name)
		}
		seen[u.Name] = true
	}
	return nil
}

// internalUser is the identity of the node's own in-process connections:
// an nkey made up at start, allowed everything, and accepted only on
// in-process connections, so that not even its leaked seed opens the TCP
// or WebSocket listener. An nkey, not a password: a signature check costs
// microseconds where a bcrypt compare costs tens of milliseconds, and the
// node connects often.
type internalUser struct {
	kp  nkeys.KeyPair
	pub string
}

func newInternalUser() (*internalUser, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return &internalUser{kp: kp, pub: pub}, nil
}

func (iu *internalUser) serverUser(account *server.Account) *server.NkeyUser {
	return &server.NkeyUser{
		Nkey:                   iu.pub,
		Account:                account,
		AllowedConnectionTypes: map[string]struct{}{jwt.ConnectionTypeInProcess: {}},
	}
}

func (iu *internalUser) option() nats.Option { return nats.Nkey(iu.pub, iu.kp.Sign) }

// serverUsers are users as the server takes them, each with its role's
// permissions under the bus's prefix, on TCP and WebSocket connections,
// and the accounts they are in: admins in the node's, an agent or
// observer in one of its own. accounts is every account the server has,
// the node's first.
func (b *Bus) serverUsers(users []User) (out []*server.User, accounts []*server.Account, err error) {
	accounts = []*server.Account{b.nodeAcc}
	for _, u := range users {
		p, err := b.subjects.RolePermissions(u.Role, u.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: user %q: %v", ErrInvalidOptions, u.Name, err)
		}
		acc := b.nodeAcc
		if u.Role != protocol.RoleAdmin {
			if acc, err = userAccount(b.nodeAcc, b.subjects, u); err != nil {
				return nil, nil, err
			}
			accounts = append(accounts, acc)
		}
		out = append(out, &server.User{
			Username: u.Name,
			Password: u.PasswordHash,
			Account:  acc,
			Permissions: &server.Permissions{
				Publish:   &server.SubjectPermission{Allow: p.Publish.Allow, Deny: p.Publish.Deny},
				Subscribe: &server.SubjectPermission{Allow: p.Subscribe.Allow, Deny: p.Subscribe.Deny},
			},
			AllowedConnectionTypes: map[string]struct{}{
				jwt.ConnectionTypeStandard: {}, jwt.ConnectionTypeWebsocket: {},
			},
		})
	}
	return out, accounts, nil
}

// Users are the users the embedded server accepts now (without the
// node's internal one), in name order.
func (b *Bus) Users() []User {
	b.usersMu.Lock()
	defer b.usersMu.Unlock()
	return slices.Clone(b.users)
}

// AddUser makes the running embedded server accept a new user at once
// (nats-server's configuration reload). A user of that name must not exist.
func (b *Bus) AddUser(u User) error {
	if err := checkUser(u); err != nil {
		return err
	}
	return b.changeUsers(func(users []User) ([]User, error) {
		if slices.ContainsFunc(users, func(have User) bool { return have.Name == u.Name }) {
			return nil, fmt.Errorf("%w: user %q exists", ErrInvalidOptions, u.Name)
		}
		return append(users, u), nil
	})
}

// RemoveUser makes the running embedded server refuse a user from now
// on; the server closes that user's open connections.
func (b *Bus) RemoveUser(name string) error {
	return b.changeUsers(func(users []User) ([]User, error) {
		i := slices.IndexFunc(users, func(have User) bool { return have.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("%w: no user %q", ErrInvalidOptions, name)
		}
		return slices.Delete(users, i, i+1), nil
	})
}

// changeUsers applies change to the users and reloads the server with
// the result; on any error the users stay as they were.
func (b *Bus) changeUsers(change func([]User) ([]User, error)) error {
	if b.srv == nil {
		return fmt.Errorf("%w: users are the embedded server's; an external server (%s) has its own", ErrInvalidOptions, redactURL(b.opts.URL))
	}
	b.usersMu.Lock()
	defer b.usersMu.Unlock()
	users, err := change(slices.Clone(b.users))
	if err != nil {
		return err
	}
	su, accounts, err := b.serverUsers(users)
	if err != nil {
		return err
	}
	// The server keeps the Options it runs with (and fills some in), so the
	// new ones are a copy of those with other users and their accounts. A
	// removed user's account stays in the server, empty.
	next := b.sopts.Clone()
	next.Users, next.Accounts = su, accounts
	// A reload does not start the service imports of an account it
	// creates (nats-server 2.15: only those of accounts it already has),
	// so a new user's account is registered first, empty, and the reload
	// fills it in.
	for _, acc := range accounts {
		if _, err := b.srv.LookupAccount(acc.Name); err != nil {
			if _, err := b.srv.RegisterAccount(acc.Name); err != nil {
				return fmt.Errorf("bus: the account of a new user: %w", err)
			}
		}
	}
	if err := b.srv.ReloadOptions(next); err != nil {
		return fmt.Errorf("bus: reload the server's users: %w", err)
	}
	b.sopts, b.users = next, users
	b.log.Info().Strs("users", userNames(users)).Msg("users changed")
	return nil
}

func userNames(users []User) []string {
	names := make([]string, len(users))
	for i, u := range users {
		names[i] = u.Name + "(" + u.Role + ")"
	}
	return names
}

// LoopbackOnly says why a listener is on loopback unless asked otherwise.
const LoopbackOnly = "every connection must log in, but the bus has no TLS, so passwords and frames would cross the network in clear text; " +
	"listen on loopback (127.0.0.1, ::1 or localhost) and reach it from elsewhere through an SSH tunnel, or opt in to a remote listener (AllowRemote; serve --allow-remote)"

// listenHostOK checks that a listener's host is loopback unless the
// options allow a remote listener.
func listenHostOK(what, host string, allowRemote bool) error {
	if allowRemote || IsLoopback(host) {
		return nil
	}
	where := host
	if where == "" || where == "0.0.0.0" || strings.Trim(where, "[]") == "::" {
		where = "every interface"
	}
	return fmt.Errorf("%w: %s %q (%s) is not a loopback address: %s", ErrInvalidOptions, what, host, where, LoopbackOnly)
}
