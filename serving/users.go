package serving

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/smallfile"
	"github.com/framebus/framebus/protocol"
)

// localUsers are the node's own credentials: an agent for client
// commands, an operator for a person's (view, takeover, answer) and an
// admin for creds. They are kept beside the state file
// and used again at the next start, so the clients a node had before it
// restarted (watchers, agents, MCP servers) log in again by themselves;
// serve --rotate-credentials makes new ones.
type localUsers struct {
	dir   string
	files []localFile // the agent's, the operator's, the admin's
	// kept: each user's password is the one its file held (not rotated).
	kept map[string]bool
	// lastURL and lastWebSocket are where the last start's bus listened,
	// by its agent file ("" when none): a start on a free port takes that
	// port again when it is free, so clients find the bus where it was.
	lastURL, lastWebSocket string
	// replaced are the users the files of a start before named that this
	// start's do not (the node's name changed in a cluster).
	replaced []string
}

// localFile is one of the node's own users and the file of its
// credentials beside the state file.
type localFile struct {
	creds protocol.Credentials
	name  string
}

// localRole is one of the node's own users: its name, role and file.
type localRole struct{ user, role, file string }

// localRoles are the node's own users.
var localRoles = []localRole{
	{LocalAgentUser, protocol.RoleAgent, AgentCredsFile},
	{LocalOperatorUser, protocol.RoleOperator, OperatorCredsFile},
	{LocalAdminUser, protocol.RoleAdmin, AdminCredsFile},
}

// IsLocalUser reports whether name is one of the node's own users'
// (which no configured user may take).
func IsLocalUser(name string) bool {
	return slices.ContainsFunc(localRoles, func(r localRole) bool { return r.user == name })
}

// credsOf are the credentials of the own user whose file is file.
func (lu *localUsers) credsOf(file string) protocol.Credentials {
	for _, f := range lu.files {
		if f.name == file {
			return f.creds
		}
	}
	return protocol.Credentials{}
}

// allKept reports whether every own user's password is its last start's.
func (lu *localUsers) allKept() bool {
	for _, f := range lu.files {
		if !lu.kept[f.creds.User] {
			return false
		}
	}
	return true
}

// passwords are the own users' passwords by name.
func (lu *localUsers) passwords() map[string]string {
	m := map[string]string{}
	for _, f := range lu.files {
		m[f.creds.User] = f.creds.Password
	}
	return m
}

// localUserSuffix is what the node's own users' names end with: nothing
// alone, "-<node>" on a cluster, whose members share their users (each
// node's agent and admin are its own).
func localUserSuffix(cluster *bus.ClusterOptions, node string) string {
	if cluster == nil {
		return ""
	}
	return clusterUserSuffix(node)
}

// clusterUserSuffix ends the names of node's own users in a cluster:
// agent-<node>, admin-<node>.
func clusterUserSuffix(node string) string { return "-" + node }

// makeLocalUsers makes the agent and admin users (their names with
// suffix): with the passwords of the files a start before wrote in dir,
// unless rotate or those files are no longer fit to keep (see
// keptPassword); else with new ones.
func makeLocalUsers(dir, suffix string, rotate bool) (*localUsers, []bus.User, error) {
	lu := &localUsers{dir: dir, kept: map[string]bool{}}
	if last, err := ReadCredentials(filepath.Join(dir, AgentCredsFile)); err == nil {
		lu.lastURL, lu.lastWebSocket = last.URL, last.WebSocket
	}
	var users []bus.User
	uid := os.Geteuid() // the bus's account, for clients to check
	for _, r := range localRoles {
		name, path := r.user+suffix, filepath.Join(dir, r.file)
		if last, err := ReadCredentials(path); err == nil && last.User != name {
			lu.replaced = append(lu.replaced, last.User)
		}
		password := ""
		if !rotate {
			password = keptPassword(path, name, r.role)
		}
		lu.kept[name] = password != ""
		if password == "" {
			password = NewPassword()
		}
		hash, err := bus.HashPassword(password)
		if err != nil {
			return nil, nil, err
		}
		lu.files = append(lu.files, localFile{name: r.file,
			creds: protocol.Credentials{User: name, Password: password, Role: r.role, InboxPrefix: protocol.InboxPrefix(name), BusUID: &uid}})
		users = append(users, bus.User{Name: name, PasswordHash: hash, Role: r.role})
	}
	return lu, users, nil
}

// keptPassword is the password of the credentials file a start before
// wrote at path for user name with role, or "" when there is none to
// keep: no file, another user (the node's name changed in a cluster),
// or a file others could read or that is not the user's own (its
// password may have been read: a new one is safer).
func keptPassword(path, name, role string) string {
	data, err := smallfile.ReadSecret(path)
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(path); err != nil || !ownFile(fi) {
		return ""
	}
	var creds protocol.Credentials
	if json.Unmarshal(data, &creds) != nil || creds.User != name || creds.Role != role || len(creds.Password) < 16 {
		return ""
	}
	return creds.Password
}

// ownFile reports whether fi is a file of this process's user.
func ownFile(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// leaveReplaced takes the users of the files a start under another name
// wrote (lu.replaced) out of the cluster: their files are replaced, and
// no node logs them in again, where they would stay in the cluster's
// users for as long as it runs. A live node's own are left alone (live:
// the cluster's live nodes).
func (lu *localUsers) leaveReplaced(b *bus.Bus, live []string, log zerolog.Logger) {
	for _, name := range lu.replaced {
		if slices.ContainsFunc(live, func(node string) bool { return ownUserOf(name, node) }) {
			continue
		}
		switch err := b.RemoveUser(name); {
		case err == nil:
			log.Info().Str("user", name).Msg("the node's own user under its former name, removed from the cluster")
		case !errors.Is(err, bus.ErrInvalidOptions): // not in the cluster: nothing to remove
			log.Warn().Err(err).Str("user", name).Msg("remove the node's own user under its former name from the cluster")
		}
	}
}

// ownUserOf reports whether name is node's own user in a cluster.
func ownUserOf(name, node string) bool {
	return slices.ContainsFunc(localRoles, func(r localRole) bool { return name == r.user+clusterUserSuffix(node) })
}

// write puts the credentials files beside the state file, 0600, once
// the bus's URLs are known.
func (lu *localUsers) write(b *bus.Bus, prefix string) error {
	for i := range lu.files {
		f := &lu.files[i]
		f.creds.URL, f.creds.WebSocket, f.creds.Prefix = b.ClientURL(), b.WebSocketURL(), prefix
		f.creds.JSAPIPrefix = protocol.Subjects{Prefix: prefix}.JSAPIPrefixFor(f.creds.Role)
		if err := WriteCredentials(filepath.Join(lu.dir, f.name), f.creds); err != nil {
			return err
		}
	}
	return nil
}

// remove removes the credentials files that are still this node's (a
// node started since may have replaced them): when its start failed
// with passwords no file held before.
func (lu *localUsers) remove() {
	if lu == nil {
		return // an external bus: none written
	}
	for _, f := range lu.files {
		if lu.kept[f.creds.User] {
			continue // as it was before this start
		}
		path := filepath.Join(lu.dir, f.name)
		if have, err := ReadCredentials(path); err == nil && have.Password == f.creds.Password {
			os.Remove(path)
		}
	}
}

// configuredUsers are the users of the configuration (users) and of
// users.json, checked: none may take a local user's name.
func configuredUsers(users []bus.User, dir string) ([]bus.User, error) {
	users = slices.Clone(users)
	added, err := ReadUsersFile(filepath.Join(dir, UsersFile))
	if err != nil {
		return nil, err
	}
	for _, u := range append(users, added...) {
		if IsLocalUser(u.Name) {
			return nil, usagef("bus.users: %q is the name of the node's own %s user; choose another", u.Name, u.Name)
		}
	}
	return append(users, added...), nil
}

// ReadUsersFile reads users.json: the users creds add made, hashes only.
func ReadUsersFile(path string) ([]bus.User, error) {
	data, err := smallfile.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var users []bus.User
	if err := json.Unmarshal(data, &users); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return users, nil
}

// userAdmin answers the admin's user requests on the bus: only admin may
// publish to their subjects. Users it adds are kept in users.json.
// usersQueue is the queue group of the user requests.
const usersQueue = "framebus-users"

type userAdmin struct {
	bus  *bus.Bus
	path string   // users.json
	keep []string // the users not in users.json (configured, local)
	// mine are the users this node's creds add made (users.json): in a
	// cluster the bus also knows the other nodes' users, which are
	// theirs to keep.
	mine map[string]bool
	// liveNodes are the nodes of the cluster's registry now: their own
	// users (agent-<node>, admin-<node>) are theirs, whichever node takes
	// a request (keep knows only those there when this node started).
	liveNodes func() []string
	log       zerolog.Logger
	mu        sync.Mutex // guards mine and users.json
}

// serve registers the user requests as an instance of the node's micro
// service (metadata {"admin": "users"}), so `nats micro info framebus`
// lists them with their request counts like every other endpoint.
func (ua *userAdmin) serve(nc *nats.Conn, subj protocol.Subjects) error {
	svc, err := micro.AddService(nc, micro.Config{
		Name: actors.ServiceName, Version: actors.ServiceVersion,
		Description: "framebus user administration (admin only)",
		Metadata:    map[string]string{"admin": "users"},
	})
	if err != nil {
		return err
	}
	for _, op := range []string{protocol.UsersAdd, protocol.UsersRemove, protocol.UsersList} {
		h := map[string]func(protocol.UserRequest) error{
			protocol.UsersAdd:    ua.add,
			protocol.UsersRemove: ua.remove,
			protocol.UsersList:   func(protocol.UserRequest) error { return nil },
		}[op]
		handle := func(r micro.Request) {
			if !protocol.Answerable(r.Reply()) {
				return // a server's answer aimed here, not an admin's request
			}
			var req protocol.UserRequest
			var err error
			if op != protocol.UsersList {
				err = json.Unmarshal(r.Data(), &req)
			}
			if err != nil {
				err = protocol.Errorf(protocol.CodeBadRequest, "users %s: %v", op, err)
			} else {
				err = h(req)
			}
			var reply any = ua.list()
			if err != nil {
				reply = errorReply{Error: err.Error(), Code: protocol.CodeOf(err)}
			}
			data, _ := json.Marshal(reply)
			_ = r.Respond(data)
		}
		// One node takes each request (in a cluster every node serves
		// them, and the users are the cluster's): the one that keeps
		// the user it adds.
		if err := svc.AddEndpoint("users-"+op, micro.HandlerFunc(handle),
			micro.WithEndpointSubject(subj.AdminUsers(op)), micro.WithEndpointQueueGroup(usersQueue)); err != nil {
			_ = svc.Stop()
			return err
		}
	}
	return nc.Flush()
}

func (ua *userAdmin) add(req protocol.UserRequest) error {
	if err := protocol.CheckUser(req.Name, req.Role); err != nil {
		return err
	}
	ua.mu.Lock()
	defer ua.mu.Unlock()
	if slices.Contains(ua.keep, req.Name) || slices.ContainsFunc(ua.bus.Users(), func(u bus.User) bool { return u.Name == req.Name }) {
		return protocol.Errorf(protocol.CodeBadRequest, "user %q exists; remove it first (creds remove %s) or choose another name", req.Name, req.Name)
	}
	if err := ua.bus.AddUser(bus.User{Name: req.Name, PasswordHash: req.PasswordHash, Role: req.Role}); err != nil {
		return protocol.Errorf(protocol.CodeBadRequest, "%v", err)
	}
	ua.mine[req.Name] = true
	if err := ua.save(); err != nil {
		delete(ua.mine, req.Name)
		_ = ua.bus.RemoveUser(req.Name)
		return protocol.Errorf(protocol.CodeInternal, "keep user %s: %v", req.Name, err)
	}
	ua.log.Info().Str("user", req.Name).Str("role", req.Role).Msg("user added")
	return nil
}

func (ua *userAdmin) remove(req protocol.UserRequest) error {
	ua.mu.Lock()
	defer ua.mu.Unlock()
	if slices.Contains(ua.keep, req.Name) || ua.aLiveNodesOwn(req.Name) {
		return protocol.Errorf(protocol.CodeBadRequest, "user %q is the node's own or configured (bus.users), not one creds add made", req.Name)
	}
	if err := ua.bus.RemoveUser(req.Name); err != nil {
		return protocol.Errorf(protocol.CodeBadRequest, "%v", err)
	}
	ua.log.Info().Str("user", req.Name).Msg("user removed")
	delete(ua.mine, req.Name)
	if err := ua.save(); err != nil {
		return protocol.Errorf(protocol.CodeInternal, "user %s is removed until the node stops, but %s still names it: %v", req.Name, ua.path, err)
	}
	return nil
}

// aLiveNodesOwn reports whether name is a live node's own user.
func (ua *userAdmin) aLiveNodesOwn(name string) bool {
	if ua.liveNodes == nil {
		return false
	}
	return slices.ContainsFunc(ua.liveNodes(), func(node string) bool { return ownUserOf(name, node) })
}

// forgetRemoved drops from users.json the users of this node's creds add
// that another member removed from the cluster.
func (ua *userAdmin) forgetRemoved() {
	ua.mu.Lock()
	defer ua.mu.Unlock()
	gone := false
	for name := range ua.mine {
		if !slices.ContainsFunc(ua.bus.Users(), func(u bus.User) bool { return u.Name == name }) {
			delete(ua.mine, name)
			gone = true
		}
	}
	if !gone {
		return
	}
	if err := ua.save(); err != nil {
		ua.log.Error().Err(err).Str("file", ua.path).Msg("a user removed elsewhere in the cluster is still in the file")
	}
}

// save writes users.json: the users this node's creds add made that the
// bus still has (another member may have removed one), hashes only.
func (ua *userAdmin) save() error {
	added := []bus.User{}
	for _, u := range ua.bus.Users() {
		if ua.mine[u.Name] {
			added = append(added, u)
		}
	}
	data, _ := json.MarshalIndent(added, "", "  ")
	return smallfile.WritePrivate(ua.path, append(data, '\n'))
}

// list is the reply to every request that succeeded: every user the bus
// accepts now.
func (ua *userAdmin) list() protocol.UsersReply {
	reply := protocol.UsersReply{OK: true, Users: []protocol.UserInfo{}}
	for _, u := range ua.bus.Users() {
		reply.Users = append(reply.Users, protocol.UserInfo{Name: u.Name, Role: u.Role})
	}
	return reply
}
