package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/protocol"
)

// usersRegistry shares the users of a cluster's members: a JetStream KV
// bucket (Subjects.UsersBucket, replicated) that holds every user's
// name, role and bcrypt hash, and that every member watches, so a user
// added on one member logs in on every member, and one removed is cut
// off everywhere. The members' own Options.Users go in too (the first
// member to put a name keeps it).
type usersRegistry struct {
	b      *Bus
	ready  chan struct{} // closed once kv is set and the members' users are in
	kv     jetstream.KeyValue
	cancel context.CancelFunc
	done   chan struct{}
	// applied is the revision of the last entry this member followed, so
	// ClaimUsers can wait for its own put to be the one in force.
	applied atomic.Uint64
	// adding are the names AddUser has added here and is putting in the
	// registry: reconcile must not take one for a user the registry
	// dropped in the moment before its put lands.
	mu     sync.Mutex
	adding map[string]int
}

// addingUser marks name as being added by this member until the returned
// func is called.
func (r *usersRegistry) addingUser(name string) (done func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.adding == nil {
		r.adding = map[string]int{}
	}
	r.adding[name]++
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.adding[name]--; r.adding[name] == 0 {
			delete(r.adding, name)
		}
	}
}

func (r *usersRegistry) isAdding(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.adding[name] > 0
}

// registryWait bounds how long AddUser and RemoveUser wait for the
// registry (a cluster's JetStream elects its leader first). Past it they
// fail with unavailable, having changed nothing: the caller may ask
// again (a cluster forming on a busy machine can take longer).
const registryWait = 10 * time.Second

func (b *Bus) startRegistry(replicas int) error {
	nc, err := b.Connect("users")
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &usersRegistry{b: b, ready: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	b.registry = r
	go r.run(ctx, js, replicas)
	return nil
}

// run makes the bucket (retrying while the cluster forms), puts this
// member's users, then applies every change to this member's server.
func (r *usersRegistry) run(ctx context.Context, js jetstream.JetStream, replicas int) {
	defer close(r.done)
	cfg := jetstream.KeyValueConfig{Bucket: r.b.subjects.UsersBucket(), History: 1, Storage: jetstream.MemoryStorage, Replicas: replicas}
	for r.kv == nil {
		try, cancel := context.WithTimeout(ctx, 3*time.Second)
		kv, err := js.CreateOrUpdateKeyValue(try, cfg)
		cancel()
		if err == nil {
			r.kv = kv
			break
		}
		r.b.log.Debug().Err(err).Msg("users registry: not ready yet")
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
	// This member's own users only: the ones it kept from the registry
	// over a restart are the registry's to say (it may have removed them).
	for _, u := range r.b.opts.Users {
		err := r.putOwn(u)
		switch {
		case errors.Is(err, errRemovedMeanwhile):
			if r.b.removeLocal(u.Name) == nil {
				r.b.log.Info().Str("user", u.Name).Msg("users registry: removed from the cluster while this member was down; removed here too")
				r.b.tellUsersChanged()
			}
		case err != nil && !errors.Is(err, ErrInvalidOptions):
			r.b.log.Warn().Err(err).Str("user", u.Name).Msg("users registry: put")
		}
	}
	close(r.ready)
	for ctx.Err() == nil {
		r.follow(ctx)
		select { // the watch failed (the cluster forming, a member gone): again
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// follow applies the registry's entries, then its changes, until ctx ends
// or the watch fails. Once it has every entry the registry had when the
// watch began, the registry is the truth: a user this member has that it
// does not hold (one removed while this member was down, kept over the
// restart) is removed.
func (r *usersRegistry) follow(ctx context.Context) {
	// The stream leader's last revision: the watch's consumer may sit on
	// a replica still catching up (a member just restarted, its memory
	// replica empty), whose initial values end before the registry's do.
	last, lastErr := r.lastRevision(ctx)
	w, err := r.kv.WatchAll(ctx)
	if err != nil {
		r.b.log.Warn().Err(err).Msg("users registry: watch")
		return
	}
	defer w.Stop()
	held := map[string]bool{} // the names the registry holds, until reconciled
	initialDone, seen := false, uint64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				initialDone = true
			} else {
				if held != nil {
					held[e.Key()] = e.Operation() == jetstream.KeyValuePut
				}
				r.apply(e)
				r.applied.Store(e.Revision())
				seen = max(seen, e.Revision())
			}
			if held != nil && initialDone && lastErr != nil {
				last, lastErr = r.lastRevision(ctx)
				if lastErr != nil {
					r.b.log.Debug().Err(lastErr).Msg("users registry: no last revision yet; not reconciling")
				}
			}
			if held != nil && initialDone && lastErr == nil && seen >= last {
				r.reconcile(ctx, held)
				held = nil
			}
			if held == nil {
				r.keep()
			}
		}
	}
}

// lastRevision is the registry's last revision as its stream's leader
// has it.
func (r *usersRegistry) lastRevision(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return lastRevision(ctx, r.kv)
}

// reconcile removes the users this member has that the registry does not
// hold (held: every name the registry had when the watch began), but for
// this member's own: users removed while this member was down, or all of
// them gone with the registry's memory when the whole cluster stopped.
func (r *usersRegistry) reconcile(ctx context.Context, held map[string]bool) {
	removed := 0
	for _, u := range r.b.Users() {
		if held[u.Name] || r.isAdding(u.Name) || slices.ContainsFunc(r.b.opts.Users, func(o User) bool { return o.Name == u.Name }) {
			continue
		}
		// A user added since the watch began is in the registry now.
		get, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := r.kv.Get(get, u.Name)
		cancel()
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if r.b.removeLocal(u.Name) == nil {
			removed++
			r.b.log.Info().Str("user", u.Name).Msg("users registry: a user the registry no longer holds, removed")
		}
	}
	if removed > 0 {
		r.b.tellUsersChanged()
	}
}

// apply makes this member's users follow one registry change.
func (r *usersRegistry) apply(e jetstream.KeyValueEntry) {
	name := e.Key()
	if e.Operation() != jetstream.KeyValuePut {
		if r.b.hasUser(name) && r.b.removeLocal(name) == nil {
			r.b.tellUsersChanged()
		}
		return
	}
	var u User
	if err := json.Unmarshal(e.Value(), &u); err != nil || u.Name != name || checkUser(u) != nil {
		r.b.log.Warn().Str("user", name).Msg("users registry: an entry that is no user, ignored")
		return
	}
	if have, ok := r.b.user(name); ok {
		if have == u {
			return
		}
		_ = r.b.removeLocal(name) // another role or password: the registry's wins
	}
	if err := r.b.addLocal(u); err != nil {
		r.b.log.Warn().Err(err).Str("user", name).Msg("users registry: add")
		return
	}
	r.b.tellUsersChanged()
}

// OnUsersChanged sets f to be called (on a goroutine of the bus) after
// this member followed a change of a cluster's users made elsewhere:
// whoever keeps a list of users learns that one of them went.
func (b *Bus) OnUsersChanged(f func()) { b.usersChanged.Store(&f) }

func (b *Bus) tellUsersChanged() {
	if f := b.usersChanged.Load(); f != nil {
		(*f)()
	}
}

// create puts a new user in the registry: ErrInvalidOptions when a user
// of that name is there already.
func (r *usersRegistry) create(u User) error {
	if err := r.wait(); err != nil {
		return err
	}
	return r.put(u)
}

// put is create once the registry's bucket is there.
func (r *usersRegistry) put(u User) error {
	data, _ := json.Marshal(u)
	ctx, cancel := context.WithTimeout(context.Background(), registryWait)
	defer cancel()
	if err := whileElecting(ctx, func() error { _, err := r.kv.Create(ctx, u.Name, data); return err }); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			if r.holds(ctx, u.Name, data) {
				return nil // this very user, put by this member already
			}
			return fmt.Errorf("%w: user %q exists in the cluster", ErrInvalidOptions, u.Name)
		}
		return fmt.Errorf("bus: the cluster's users: %w", err)
	}
	return nil
}

// errRemovedMeanwhile is putOwn's error for a user whose entry the
// registry holds deleted.
var errRemovedMeanwhile = errors.New("bus: the cluster's users: removed while this member was down")

// putOwn puts one of this member's configured users as it starts, like
// put, but not over a deletion: a user removed from the cluster while this
// member was down (its file of users still names it) stays removed, where
// KV Create would bring it back. A registry that starts empty (the whole
// cluster stopped) takes it.
func (r *usersRegistry) putOwn(u User) error {
	data, _ := json.Marshal(u)
	ctx, cancel := context.WithTimeout(context.Background(), registryWait)
	defer cancel()
	// Revision 0: only where the key never was (the stream's leader says).
	if _, err := r.kv.Update(ctx, u.Name, data, 0); err == nil {
		return nil
	}
	for range 20 {
		// The history of one key is its last entry, a deletion included;
		// a replica still catching up may have none yet: asked again.
		h, err := r.kv.History(ctx, u.Name)
		if err == nil && len(h) > 0 {
			last := h[len(h)-1]
			switch {
			case last.Operation() != jetstream.KeyValuePut:
				return errRemovedMeanwhile
			case string(last.Value()) == string(data):
				return nil
			}
			return fmt.Errorf("%w: user %q exists in the cluster", ErrInvalidOptions, u.Name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bus: the cluster's users: %s: %w", u.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("bus: the cluster's users: %s: its entry cannot be read", u.Name)
}

// holds reports whether the registry's entry for name is data. A
// replica may answer before it has the entry: it asks again, briefly.
func (r *usersRegistry) holds(ctx context.Context, name string, data []byte) bool {
	for range 20 {
		e, err := r.kv.Get(ctx, name)
		if err == nil {
			return string(e.Value()) == string(data)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// ClaimUsers puts this member's own users (of Options.Users), each named
// with the password it logs in with, in the cluster's registry as this
// member has them, over what is there: a member of the same name that
// died (kill -9 takes no user out) left its users, whose entries would
// otherwise win over the fresh passwords of the member that starts again
// under its name, and keep the dead one's passwords working everywhere.
// An entry that is this user already, its role and a hash of its
// password (a member that kept its passwords over a restart: its users
// stay in the cluster while it is down), stays, and this member takes
// its hash: a new hash of the same password would make every member
// close the user's connections for nothing. Call it only once the name
// is known to be this member's alone (the node registry's
// compare-and-set), never before: a second node under a live one's name
// would take its users. It returns once this member follows its own
// entries again. Without a cluster (no registry) it does nothing.
func (b *Bus) ClaimUsers(passwords map[string]string) error {
	r := b.registry
	if r == nil {
		return nil
	}
	if err := r.wait(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryWait)
	defer cancel()
	var last uint64
	for name, password := range passwords {
		i := slices.IndexFunc(b.opts.Users, func(u User) bool { return u.Name == name })
		if i < 0 {
			return fmt.Errorf("%w: ClaimUsers: %q is not one of this member's users", ErrInvalidOptions, name)
		}
		if have, rev, ok := r.holdsPassword(ctx, b.opts.Users[i], password); ok {
			b.takeHash(have)
			last = max(last, rev)
			continue
		}
		data, _ := json.Marshal(b.opts.Users[i])
		var rev uint64
		err := whileElecting(ctx, func() (err error) { rev, err = r.kv.Put(ctx, name, data); return err })
		if err != nil {
			return fmt.Errorf("bus: the cluster's users: claim %s: %w", name, err)
		}
		last = max(last, rev)
	}
	for r.applied.Load() < last {
		select {
		case <-ctx.Done():
			return protocol.Errorf(protocol.CodeUnavailable, "bus: the cluster's users: this member did not follow its own users within %s", registryWait)
		case <-r.done:
			return fmt.Errorf("bus: the cluster's users: the registry stopped")
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// holdsPassword returns the registry's entry for own, and its revision,
// when it is own's name and role with a hash of password.
func (r *usersRegistry) holdsPassword(ctx context.Context, own User, password string) (User, uint64, bool) {
	e, err := r.kv.Get(ctx, own.Name)
	if err != nil {
		return User{}, 0, false
	}
	var u User
	if json.Unmarshal(e.Value(), &u) != nil || u.Name != own.Name || u.Role != own.Role || checkUser(u) != nil ||
		bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return User{}, 0, false
	}
	return u, e.Revision(), true
}

// remove takes a user out of the registry.
func (r *usersRegistry) remove(name string) error {
	if err := r.wait(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryWait)
	defer cancel()
	if err := whileElecting(ctx, func() error { return r.kv.Delete(ctx, name) }); err != nil {
		return fmt.Errorf("bus: the cluster's users: %w", err)
	}
	return nil
}

// whileElecting runs op again while the registry's stream has no leader
// to answer it (a member of the cluster was lost a moment ago: "no
// response from stream"), until ctx ends. op is one that may be sent
// again: a put of the same entry, a deletion.
func whileElecting(ctx context.Context, op func() error) error {
	for {
		err := op()
		if !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(electionPause):
		}
	}
}

// electionPause is the pause between tries while a stream elects its
// leader.
const electionPause = 100 * time.Millisecond

// wait waits for the registry to be ready, up to registryWait.
func (r *usersRegistry) wait() error {
	select {
	case <-r.ready:
		return nil
	case <-r.done:
		return fmt.Errorf("bus: the cluster's users: the registry stopped")
	case <-time.After(registryWait):
		return protocol.Errorf(protocol.CodeUnavailable, "bus: the cluster's users: no registry after %s (the cluster's JetStream has no leader yet, or is not up); nothing was changed: try again", registryWait)
	}
}

func (r *usersRegistry) stop() {
	r.cancel()
	<-r.done
}

// keptUsersFile is where a cluster member whose JetStream store is a
// directory of its own keeps the users it last followed, so that after a
// restart it lets them in before the registry answers (which waits for
// the cluster's JetStream to elect its leaders: seconds, or as long as a
// quorum is missing). The trade-off: a user removed while the member was
// down logs in there until the member follows the registry again.
const keptUsersFile = "framebus-cluster-users.json"

// keptUsersPath is the kept users' file, "" when this member keeps none
// (no cluster registry, or a temporary store).
func (b *Bus) keptUsersPath() string {
	if b.opts.Cluster == nil || b.opts.JetStream == nil || b.opts.JetStream.StoreDir == "" {
		return ""
	}
	return filepath.Join(b.opts.JetStream.StoreDir, keptUsersFile)
}

// keptUsers are the users of the kept file that are not this member's
// own (Options.Users win), each checked; a file that cannot be read is
// logged and ignored: the registry brings its users again.
func (b *Bus) keptUsers() []User {
	path := b.keptUsersPath()
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var kept []User
	if err == nil {
		err = json.Unmarshal(data, &kept)
	}
	if err != nil {
		b.log.Warn().Err(err).Str("file", path).Msg("users registry: the kept users cannot be read; waiting for the registry")
		return nil
	}
	var out []User
	for _, u := range kept {
		if checkUser(u) != nil || slices.ContainsFunc(b.opts.Users, func(o User) bool { return o.Name == u.Name }) {
			continue
		}
		out = append(out, u)
	}
	return out
}

// keep writes the users this member follows to its kept file (0600: it
// holds bcrypt hashes, never a password), replacing it whole.
func (r *usersRegistry) keep() {
	path := r.b.keptUsersPath()
	if path == "" {
		return
	}
	data, _ := json.MarshalIndent(r.b.Users(), "", "  ")
	tmp, err := os.CreateTemp(filepath.Dir(path), keptUsersFile+".*")
	if err == nil {
		_, err = tmp.Write(append(data, '\n'))
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path) // CreateTemp made it 0600
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
	}
	if err != nil {
		r.b.log.Warn().Err(err).Str("file", path).Msg("users registry: the users not kept")
	}
}
