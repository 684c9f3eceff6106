package bus

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/protocol"
)

// authenticator logs clients in to the embedded server, as nats-server's
// CustomClientAuthentication: users by name and bcrypt-hashed password,
// each registered in its account with its role's permissions, and the
// node's internal nkey on in-process connections only.
//
// Why not the server's own user list: that changes only by a
// configuration reload, and a reload rebuilds the service imports of
// every account, so that every user's requests find no responder while
// it runs (measured: 764 of 2554 tab list requests refused during 30
// reloads). Here a user's account is made once, live, and adding or
// removing a user touches no one else.
type authenticator struct {
	internal *internalUser
	node     *server.Account // the server's own node account
	unknown  []byte          // compared with an unknown user's password

	mu    sync.RWMutex
	users map[string]*authUser
}

// authUser is a user as the authenticator checks and registers it.
type authUser struct {
	User
	hash []byte
	reg  *server.User // account and permissions for RegisterUser
}

// Check logs a client in (server.Authentication).
func (a *authenticator) Check(c server.ClientAuthentication) bool {
	o := c.GetOpts()
	if o.Nkey != "" {
		return a.checkInternal(c, o)
	}
	// The read lock is held until the client is registered, so a user
	// RemoveUser has let go of is never registered after it looked for
	// the user's connections.
	a.mu.RLock()
	defer a.mu.RUnlock()
	u := a.users[o.Username]
	hash := a.unknown
	if u != nil {
		hash = u.hash
	}
	// An unknown name is compared too, with a hash of the cost framebus
	// gives its users: refused in the time a wrong password takes, so
	// timing does not tell which names exist (without, ~1.7 ms against
	// ~2.8 ms).
	if compareHash(hash, []byte(o.Password)) != nil || u == nil {
		return false
	}
	c.RegisterUser(u.reg)
	return true
}

// compareHash is bcrypt's compare; a variable so that a test can count
// the compares a login makes.
var compareHash = bcrypt.CompareHashAndPassword

// unknownUserHash is the hash an unknown user's password is compared
// with: of a password no one has, at the cost of HashPassword's.
func unknownUserHash() ([]byte, error) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, err
	}
	h, err := HashPassword(base64.RawStdEncoding.EncodeToString(secret[:]))
	return []byte(h), err
}

// checkInternal accepts the node's nkey on an in-process connection (a
// pipe, never a socket) that signed the server's nonce with it.
func (a *authenticator) checkInternal(c server.ClientAuthentication, o *server.ClientOpts) bool {
	if o.Nkey != a.internal.pub {
		return false
	}
	if addr := c.RemoteAddress(); addr == nil || addr.Network() != "pipe" {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(o.Sig)
	if err != nil {
		if sig, err = base64.StdEncoding.DecodeString(o.Sig); err != nil {
			return false
		}
	}
	pub, err := nkeys.FromPublicKey(o.Nkey)
	if err != nil || pub.Verify(c.GetNonce(), sig) != nil {
		return false
	}
	c.RegisterUser(&server.User{Username: "framebus-node", Account: a.node})
	return true
}

// register makes a user known: admins in the node's account, an agent or
// observer in an account of its own (made live on srv the first time).
func (a *authenticator) register(srv *server.Server, subj protocol.Subjects, u User) (*authUser, error) {
	p, err := subj.RolePermissions(u.Role, u.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: user %q: %v", ErrInvalidOptions, u.Name, err)
	}
	acc := a.node
	if u.Role != protocol.RoleAdmin {
		if acc, err = liveUserAccount(srv, a.node, subj, u); err != nil {
			return nil, err
		}
	}
	return &authUser{User: u, hash: []byte(u.PasswordHash), reg: &server.User{
		Username: u.Name,
		Account:  acc,
		Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: p.Publish.Allow, Deny: p.Publish.Deny},
			Subscribe: &server.SubjectPermission{Allow: p.Subscribe.Allow, Deny: p.Subscribe.Deny},
		},
	}}, nil
}

// liveUserAccount is the account of an agent or observer on the running
// server: UserAccount, made with its imports the first time, then
// reused (it is named after the role too, so one of another role gets
// another account and never keeps the first one's imports).
func liveUserAccount(srv *server.Server, node *server.Account, subj protocol.Subjects, u User) (*server.Account, error) {
	name := UserAccount(u.Name, u.Role)
	if acc, err := srv.LookupAccount(name); err == nil {
		return acc, nil
	}
	acc, err := srv.RegisterAccount(name)
	if err != nil {
		return nil, fmt.Errorf("bus: the account of user %q: %w", u.Name, err)
	}
	if err := importForUser(acc, node, subj, u); err != nil {
		return nil, err
	}
	return acc, nil
}

// users are the users in name order.
func (a *authenticator) list() []User {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]User, 0, len(a.users))
	for _, u := range a.users {
		out = append(out, u.User)
	}
	slices.SortFunc(out, func(x, y User) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// user is the user named name, if this server accepts it.
func (b *Bus) user(name string) (User, bool) {
	b.auth.mu.RLock()
	defer b.auth.mu.RUnlock()
	if u := b.auth.users[name]; u != nil {
		return u.User, true
	}
	return User{}, false
}

func (b *Bus) hasUser(name string) bool {
	_, ok := b.user(name)
	return ok
}
