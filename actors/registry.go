package actors

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/protocol"
)

// The node registry: the live nodes of a bus, each holding an entry
// (protocol.NodeEntry) under its name in the JetStream key-value bucket
// Subjects.NodesBucket of the node account. The bucket forgets an entry
// protocol.NodeTTL after its last write (the bucket's TTL), and leaves a
// marker when it does (LimitMarkerTTL), so watchers learn of a node that
// died as of one that stopped. A node creates its entry with a
// compare-and-set (KV Create): of two nodes starting with one name, one
// wins and the other refuses to start. It renews it every
// protocol.NodeHeartbeat with an Update on the revision it wrote last, so
// it never overwrites another node's entry, and deletes it as it stops.
//
// Every node watches the bucket: its answers to the requests every node
// answers (tabs, status, session list) name the live nodes it knows
// (Peers), so a client gathering answers knows whom it waits for and
// reports the ones that did not answer as unreachable.

// registryTimeout bounds one call on the bucket, and registryStartWait
// making the bucket at a node's start (a cluster's stream placement, a
// member just joined, take longer under load).
const (
	registryTimeout   = 5 * time.Second
	registryStartWait = 30 * time.Second
)

type registry struct {
	kv    jetstream.KeyValue
	name  string
	entry func() protocol.NodeEntry // the node's entry as of now
	log   zerolog.Logger

	// writing serialises the writes of the node's entry (the beat, a
	// prompt write when its tabs change, the delete as it leaves), so
	// each is an Update on the revision the one before wrote.
	writing sync.Mutex
	mu      sync.Mutex // guards rev, live
	rev     uint64     // the revision of the node's entry it wrote last
	live    map[string]liveNode

	ctx     context.Context // the watch's and the beat's; done once the node leaves
	changed chan struct{}   // a prompt write is due (see touch)

	watcher jetstream.KeyWatcher
	stop    context.CancelFunc // ends the watch and the heartbeat
	done    chan struct{}      // closed when both ended
}

// liveNode is a registry entry as the watch last saw it.
type liveNode struct {
	entry protocol.NodeEntry
	seen  time.Time // when it was written, by this node's clock
}

// joinRegistry makes the bucket if it is missing, creates the node's
// entry (node_name_taken when a live node holds the name) and starts
// renewing it and watching the others.
// replicas is how many servers of a cluster keep the bucket (as many as
// keep the history).
func joinRegistry(ctx context.Context, js jetstream.JetStream, subj protocol.Subjects, replicas int, entry func() protocol.NodeEntry, log zerolog.Logger) (*registry, error) {
	if err := haveJetStream(ctx, js, "node registry", log); err != nil { // the caller's deadline: a cluster may still be starting
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, registryStartWait)
	defer cancel()
	cfg := jetstream.KeyValueConfig{
		Bucket:         subj.NodesBucket(),
		Description:    "framebus live nodes: each renews its entry or the bucket forgets it",
		History:        1,
		TTL:            protocol.NodeTTL,
		LimitMarkerTTL: protocol.NodeTTL,
		Storage:        jetstream.MemoryStorage, // liveness, nothing to keep over a restart
		Replicas:       max(replicas, 1),
	}
	var kv jetstream.KeyValue
	err := retryJetStream(cctx, func(try context.Context) (err error) {
		kv, err = js.CreateOrUpdateKeyValue(try, cfg)
		return err
	})
	if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
		// A server before 2.11 leaves no marker when it forgets an
		// entry: watchers do not see a node that died go, and Peers
		// drops it by the age of its last write instead.
		cfg.LimitMarkerTTL = 0
		kv, err = js.CreateOrUpdateKeyValue(cctx, cfg)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "node registry %s: the bus's JetStream did not answer within %s: %w", subj.NodesBucket(), registryStartWait, err)
	}
	if err != nil {
		return nil, fmt.Errorf("node registry %s: %w", subj.NodesBucket(), err)
	}
	first := entry()
	r := &registry{kv: kv, name: first.Node, entry: entry, log: log, live: map[string]liveNode{}, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	if r.rev, err = r.claim(ctx, first); err != nil {
		return nil, err
	}
	wctx, stop := context.WithCancel(context.Background())
	r.ctx, r.stop = wctx, stop
	if r.watcher, err = kv.WatchAll(wctx); err != nil {
		stop()
		r.remove()
		return nil, fmt.Errorf("node registry: watch: %w", err)
	}
	// The first answers name every live node already.
	r.takeInitial(cctx)
	go r.run(wctx)
	return r, nil
}

// claim creates the node's entry (see create). A node restarted on the
// same machine right after it died (kill -9, a crash) finds its old entry
// still there, with a process id that no longer runs here: it waits for
// the bucket to forget that entry (at most NodeTTL) instead of refusing.
func (r *registry) claim(ctx context.Context, e protocol.NodeEntry) (uint64, error) {
	deadline := time.Now().Add(protocol.NodeTTL + time.Second)
	settled := time.Now().Add(registryStartWait)
	for {
		cctx, cancel := context.WithTimeout(ctx, registryTimeout)
		rev, other, err := r.create(cctx, e)
		cancel()
		if err != nil && other == nil && ctx.Err() == nil && time.Now().Before(settled) && jetStreamUnsettled(err) {
			// The bucket's stream is electing its leader (a member of
			// the cluster just left or came back): ask again.
			r.log.Debug().Err(err).Msg("node registry: no answer from the bucket yet")
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if err == nil || other == nil || other.Host != e.Host || processRuns(other.PID) || time.Now().After(deadline) {
			return rev, err
		}
		r.log.Info().Int("pid", other.PID).Msg("node registry: this node's name is held by a process of this machine that no longer runs; waiting for its entry to expire")
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(protocol.NodeHeartbeat / 4):
		}
	}
}

// processRuns reports whether a process with this id runs on this
// machine (signal 0 checks without sending anything).
func processRuns(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// create writes the node's entry if no live node holds its name; when one
// does, the error is node_name_taken and other is that node's entry.
func (r *registry) create(ctx context.Context, e protocol.NodeEntry) (rev uint64, other *protocol.NodeEntry, err error) {
	data, _ := json.Marshal(e)
	rev, err = r.kv.Create(ctx, e.Node, data)
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return rev, nil, err
	}
	other = &protocol.NodeEntry{Node: e.Node}
	if got, gerr := r.kv.Get(ctx, e.Node); gerr == nil {
		_ = json.Unmarshal(got.Value(), other)
	}
	return 0, other, protocol.Errorf(protocol.CodeNodeNameTaken,
		"node name %q is taken: a live node on this bus has it (host %s, pid %d, started %s); choose another with --node (or $FRAMEBUS_NODE), or stop that node (a node that died frees its name within %s)",
		e.Node, other.Host, other.PID, other.Started.Format(time.RFC3339), protocol.NodeTTL)
}

// takeInitial reads the watch's first values: every entry, then nil.
func (r *registry) takeInitial(ctx context.Context) {
	for {
		select {
		case kve, ok := <-r.watcher.Updates():
			if !ok || kve == nil {
				return
			}
			r.note(kve)
		case <-ctx.Done():
			return
		}
	}
}

// run renews the node's entry and follows the others' until stop.
func (r *registry) run(ctx context.Context) {
	defer close(r.done)
	beat := time.NewTicker(protocol.NodeHeartbeat)
	defer beat.Stop()
	updates := r.watcher.Updates()
	for {
		select {
		case <-ctx.Done():
			return
		case kve, ok := <-updates:
			if !ok {
				updates = nil // the watch ended: watch again on the next beat
				continue
			}
			if kve != nil {
				r.note(kve)
			}
		case <-r.changed:
			r.renew(ctx)
		case <-beat.C:
			r.renew(ctx)
			if updates == nil {
				if w, err := r.kv.WatchAll(ctx); err == nil {
					_ = r.watcher.Stop()
					r.watcher, updates = w, w.Updates()
				}
			}
		}
	}
}

// touch asks for a prompt write of the node's entry (its tabs changed),
// not waiting for it: placements read the entries.
func (r *registry) touch() {
	select {
	case r.changed <- struct{}{}:
	default: // one is due already, and will read the entry as of then
	}
}

// publish writes the node's entry now, and returns once the bucket has
// it: a placement that starts after it sees this node's tabs as of now.
func (r *registry) publish() { r.renew(r.ctx) }

// renew writes the node's entry again, on the revision it wrote last.
// When the bucket forgot it (the node was cut off longer than NodeTTL),
// the node takes its name again if no other took it meanwhile. Nothing
// is written once the node left (ctx done).
func (r *registry) renew(ctx context.Context) {
	r.writing.Lock()
	defer r.writing.Unlock()
	if ctx.Err() != nil {
		return
	}
	e := r.entry()
	data, _ := json.Marshal(e)
	cctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	r.mu.Lock()
	rev := r.rev
	r.mu.Unlock()
	next, err := r.kv.Update(cctx, r.name, data, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		next, _, err = r.create(cctx, e)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error().Err(err).Str("node", r.name).Msg("node registry: cannot renew this node's entry; other nodes may take it for gone")
		}
		return
	}
	r.mu.Lock()
	r.rev = next
	r.mu.Unlock()
}

// note records an entry the watch delivered: a put of a live node, or
// its deletion (a node that stopped, or one the bucket forgot).
func (r *registry) note(kve jetstream.KeyValueEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kve.Operation() != jetstream.KeyValuePut {
		delete(r.live, kve.Key())
		return
	}
	var e protocol.NodeEntry
	if err := json.Unmarshal(kve.Value(), &e); err != nil {
		return
	}
	r.live[kve.Key()] = liveNode{entry: e, seen: time.Now()}
}

// Peers are the names of the live nodes, this one included, sorted. An
// entry the watch saw no write of for NodeTTL is gone too, even before
// its marker arrives.
func (r *registry) Peers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := []string{r.name}
	for name, n := range r.live {
		if name != r.name && time.Since(n.seen) <= protocol.NodeTTL {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Entries are the live nodes' entries, by name.
func (r *registry) Entries() map[string]protocol.NodeEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]protocol.NodeEntry{}
	for name, n := range maps.All(r.live) {
		if name == r.name || time.Since(n.seen) <= protocol.NodeTTL {
			out[name] = n.entry
		}
	}
	return out
}

// Current reads the live nodes' entries from the bucket now, not from
// the watch, which may lag behind a write that another node made just
// before it answered: what a placement reads, so two placements in a row
// see the first one's tab. Every entry there is live (the bucket forgets
// the others), but an entry rewritten while it is read may be missing:
// the watch's end marker can come before it.
func (r *registry) Current(ctx context.Context) (map[string]protocol.NodeEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	w, err := r.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	out := map[string]protocol.NodeEntry{}
	for {
		select {
		case kve, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("node registry: the read of the entries ended early")
			}
			if kve == nil { // every entry came
				return out, nil
			}
			var e protocol.NodeEntry
			if json.Unmarshal(kve.Value(), &e) == nil {
				out[kve.Key()] = e
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("node registry: read the entries: %w", ctx.Err())
		}
	}
}

// leave stops renewing and watching, and deletes the node's entry.
func (r *registry) leave() {
	r.stop()
	<-r.done
	_ = r.watcher.Stop()
	r.remove()
}

// remove deletes the node's entry, unless another node holds it now.
func (r *registry) remove() {
	r.writing.Lock()
	defer r.writing.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	r.mu.Lock()
	rev := r.rev
	r.mu.Unlock()
	err := r.kv.Delete(ctx, r.name, jetstream.LastRevision(rev))
	if err != nil && ctx.Err() == nil {
		// A write whose answer was lost (a timeout on a busy machine)
		// moved the entry past the revision this node knows: the entry
		// is still this node's when it names this process as started.
		if kve, gerr := r.kv.Get(ctx, r.name); gerr == nil && r.ownEntry(kve.Value()) {
			err = r.kv.Delete(ctx, r.name, jetstream.LastRevision(kve.Revision()))
		}
	}
	if err != nil {
		r.log.Warn().Err(err).Str("node", r.name).Msg("node registry: entry not deleted; it expires by itself")
	}
}

// ownEntry reports whether data is an entry this node wrote: its host,
// process and start.
func (r *registry) ownEntry(data []byte) bool {
	var e protocol.NodeEntry
	if json.Unmarshal(data, &e) != nil {
		return false
	}
	me := r.entry()
	return e.Node == me.Node && e.Host == me.Host && e.PID == me.PID && e.Started.Equal(me.Started)
}

// DefaultNodeName is the host name (as one subject token) and a short
// random suffix, e.g. "myhost-3f9a": unique enough that two nodes started
// without a name do not collide.
func DefaultNodeName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	host, _, _ = strings.Cut(host, ".")
	token := []byte(host)
	for i, c := range token {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			token[i] = '-'
		}
	}
	var b [2]byte
	_, _ = rand.Read(b[:])
	suffix := "-" + hex.EncodeToString(b[:])
	return string(token[:min(len(token), protocol.MaxNodeName-len(suffix))]) + suffix
}

// memAvailable is the machine's available memory in bytes (Linux's
// MemAvailable), 0 when unknown.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
