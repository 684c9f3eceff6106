package bus

import (
	"fmt"
	"strings"

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

func (iu *internalUser) option() nats.Option { return nats.Nkey(iu.pub, iu.kp.Sign) }

// Users are the users the embedded server accepts now (without the
// node's internal one), in name order.
func (b *Bus) Users() []User {
	if b.auth == nil {
		return nil
	}
	return b.auth.list()
}

// AddUser makes the running embedded server accept a new user at once. A
// user of that name must not exist. Nobody else's connection notices. On
// a cluster member the user is shared: every member takes it
// (usersRegistry).
func (b *Bus) AddUser(u User) error {
	if err := checkUser(u); err != nil {
		return err
	}
	if b.auth == nil {
		return b.externalUsers()
	}
	if b.registry != nil {
		defer b.registry.addingUser(u.Name)()
	}
	if err := b.addLocal(u); err != nil {
		return err
	}
	if b.registry != nil {
		if err := b.registry.create(u); err != nil {
			_ = b.removeLocal(u.Name)
			return err
		}
	}
	return nil
}

// RemoveUser makes the running embedded server refuse a user from now
// on, and closes that user's open connections (on every cluster member).
func (b *Bus) RemoveUser(name string) error {
	if b.auth == nil {
		return b.externalUsers()
	}
	if err := b.removeLocal(name); err != nil {
		return err
	}
	if b.registry != nil {
		return b.registry.remove(name)
	}
	return nil
}

// addLocal makes this server accept u.
func (b *Bus) addLocal(u User) error {
	a := b.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.users[u.Name] != nil {
		return fmt.Errorf("%w: user %q exists", ErrInvalidOptions, u.Name)
	}
	au, err := a.register(b.srv, b.subjects, u)
	if err != nil {
		return err
	}
	a.users[u.Name] = au
	b.log.Info().Str("user", u.Name).Str("role", u.Role).Msg("user added")
	return nil
}

// takeHash makes this server check u's password against u's hash, a
// hash of the same password as the one it has (ClaimUsers): its
// connections stay, and the registry's entry is what this server has.
func (b *Bus) takeHash(u User) {
	a := b.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	if have := a.users[u.Name]; have != nil && have.Role == u.Role {
		have.PasswordHash, have.hash = u.PasswordHash, []byte(u.PasswordHash)
	}
}

// removeLocal makes this server refuse name and closes its connections.
func (b *Bus) removeLocal(name string) error {
	a := b.auth
	a.mu.Lock()
	if a.users[name] == nil {
		a.mu.Unlock()
		return fmt.Errorf("%w: no user %q", ErrInvalidOptions, name)
	}
	delete(a.users, name)
	a.mu.Unlock()
	// Every connection that logged in as name did so before the lock
	// above was taken (Check holds it until the client is registered).
	conns, err := b.srv.Connz(&server.ConnzOptions{Username: true, User: name, Limit: 1 << 20})
	if err != nil {
		return fmt.Errorf("bus: the connections of removed user %q: %w", name, err)
	}
	for _, c := range conns.Conns {
		_ = b.srv.DisconnectClientByID(c.Cid) // gone already is fine
	}
	b.log.Info().Str("user", name).Int("closed", len(conns.Conns)).Msg("user removed")
	return nil
}

func (b *Bus) externalUsers() error {
	return fmt.Errorf("%w: users are the embedded server's; an external server (%s) has its own", ErrInvalidOptions, redactURL(b.opts.URL))
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
