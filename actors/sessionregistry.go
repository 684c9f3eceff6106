package actors

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/protocol"
)

// The session registry: one entry (protocol.SessionEntry) per domain in
// the JetStream key-value bucket Subjects.SessionsBucket, naming the
// session and the node that runs it, so a domain has one session on the
// whole bus however many nodes share it. The key is the canonical domain
// itself (sessionDomain: lowercase letters, digits, '-', '_' and dots,
// all of which KV keys allow).
//
// A node starting a session claims the entry: it creates it with a
// compare-and-set (KV Create), so of two nodes starting one domain at
// once exactly one wins and the other hands the start to it. An entry
// whose node is not live (not in the node registry) is taken over with an
// Update on the revision read: the session moves, same id, to the node
// that was asked. That keeps a domain usable while its node is down,
// which a client asked for; the cost is that the profile used is the new
// node's (the cookies stay on the old node's disk unless the nodes share
// their profile directory), and the reply says so (TakenFrom).
//
// The bucket is on file: a node that stops, cleanly or not, leaves its
// entries, and starts the sessions that still name it when it starts
// again with the same name, same ids. Only session stop deletes an entry
// (on the revision read, so it never deletes another node's): the node
// running the session answers it, and for a session whose node is gone
// one of the live nodes does (a queue group on every session's stop
// subject), so a session listed as unreachable can be forgotten.

// sessionElsewhere is StartSession's error when the domain's session runs
// on another live node: the start belongs there.
type sessionElsewhere struct{ entry protocol.SessionEntry }

func (e *sessionElsewhere) Error() string {
	return fmt.Sprintf("the session of %s (%s) runs on node %s", e.entry.Domain, e.entry.Session, e.entry.Node)
}

// sessionClaim is the entry a start holds and how it came by it.
type sessionClaim struct {
	entry protocol.SessionEntry
	// made: this start created the entry or took it over, and deletes
	// it again if the session does not start.
	made bool
	// takenFrom is the node that is gone, when this start took over its
	// entry.
	takenFrom string
}

// openSessionRegistry makes the sessions bucket if it is missing. A bus
// without JetStream (no node registry either) has none: sessions are then
// each node's own, as before clustering.
func (n *Node) openSessionRegistry(ctx context.Context) error {
	if n.registry == nil {
		return nil
	}
	js, err := jetstream.New(n.nc)
	if err != nil {
		return err
	}
	cfg := jetstream.KeyValueConfig{
		Bucket:      n.subj.SessionsBucket(),
		Description: "framebus sessions: one per domain on the bus, and the node that runs it",
		History:     1,
		Storage:     jetstream.FileStorage, // sessions outlive their nodes
		Replicas:    max(n.opts.History.Replicas, 1),
	}
	cctx, cancel := context.WithTimeout(ctx, registryStartWait)
	defer cancel()
	var kv jetstream.KeyValue
	create := func() error {
		return retryJetStream(cctx, func(try context.Context) (err error) {
			kv, err = js.CreateOrUpdateKeyValue(try, cfg)
			return err
		})
	}
	err = create()
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// A JetStream without file storage (max_file_store 0, no room)
		// or a bucket made in memory before: the sessions are kept as
		// long as the servers run, rather than the node not starting.
		n.log.Warn().Err(err).Msg("session registry: no file storage; keeping it in memory, so sessions come back after a node's restart only while the bus's servers keep running")
		cfg.Storage = jetstream.MemoryStorage
		err = create()
	}
	if err != nil {
		return fmt.Errorf("session registry %s: %w", n.subj.SessionsBucket(), err)
	}
	n.sessions.kv = kv
	return nil
}

// claimSession finds or makes the entry of domain naming this node; a
// *sessionElsewhere error when a live node holds it. url is where a new
// session's first tab opens.
func (n *Node) claimSession(ctx context.Context, domain, url string) (sessionClaim, error) {
	kv := n.sessions.kv
	if kv == nil {
		return sessionClaim{entry: protocol.SessionEntry{Session: newSessionID(), Domain: domain, Node: n.name, URL: url}}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	// Each lost compare-and-set means another node wrote the entry; a
	// read sees it soon (a replica that answers a read may lag behind the
	// write for a moment), so this ends unless nodes keep taking it from
	// one another until the deadline.
	for try := 0; ; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return sessionClaim{}, protocol.Errorf(protocol.CodeUnavailable, "session %s: nodes keep changing its registry entry; try again", domain)
			case <-time.After(min(time.Duration(try)*10*time.Millisecond, 200*time.Millisecond)):
			}
		}
		e, rev, err := n.sessionEntry(ctx, domain)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			e = protocol.SessionEntry{Session: newSessionID(), Domain: domain, Node: n.name, URL: url, Started: time.Now().UTC()}
			data, _ := json.Marshal(e)
			_, err = kv.Create(ctx, domain, data)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			return sessionClaim{entry: e, made: true}, registryError(domain, err)
		case err != nil:
			return sessionClaim{}, registryError(domain, err)
		case e.Node == n.name:
			return sessionClaim{entry: e}, nil
		case slices.Contains(n.Peers(), e.Node):
			return sessionClaim{}, &sessionElsewhere{entry: e}
		}
		gone := e.Node
		e.Node, e.Started = n.name, time.Now().UTC()
		if url != "" {
			e.URL = url
		}
		data, _ := json.Marshal(e)
		_, err = kv.Update(ctx, domain, data, rev)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err == nil {
			n.log.Info().Str("domain", domain).Str("session", e.Session).Str("from", gone).Msg("took over the session of a node that is gone")
		}
		return sessionClaim{entry: e, made: true, takenFrom: gone}, registryError(domain, err)
	}
}

// sessionEntry reads the entry of domain and its revision.
func (n *Node) sessionEntry(ctx context.Context, domain string) (protocol.SessionEntry, uint64, error) {
	var e protocol.SessionEntry
	got, err := n.sessions.kv.Get(ctx, domain)
	if err != nil {
		return e, 0, err
	}
	if err := json.Unmarshal(got.Value(), &e); err != nil {
		return e, 0, fmt.Errorf("entry %s: %w", domain, err)
	}
	return e, got.Revision(), nil
}

// sessionOwner is the live node whose entry holds domain, "" when there
// is none (no entry, a node that is gone, no registry, or it cannot be
// read now: the node the start is placed on reads it again).
func (n *Node) sessionOwner(ctx context.Context, domain string) string {
	if n.sessions.kv == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	e, _, err := n.sessionEntry(ctx, domain)
	if err != nil || !slices.Contains(n.Peers(), e.Node) {
		return ""
	}
	return e.Node
}

// releaseSession deletes the entry of domain if it still names session on
// this node (never another node's).
func (n *Node) releaseSession(domain, session string) {
	n.forgetSession(protocol.SessionEntry{Session: session, Domain: domain, Node: n.name})
}

// forgetSession deletes the entry of want.Domain if it still names
// want.Session on want.Node, on the revision read; it reports whether it
// did.
func (n *Node) forgetSession(want protocol.SessionEntry) bool {
	if n.sessions.kv == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	e, rev, err := n.sessionEntry(ctx, want.Domain)
	if err != nil || e.Session != want.Session || e.Node != want.Node {
		return false
	}
	if err := n.sessions.kv.Delete(ctx, want.Domain, jetstream.LastRevision(rev)); err != nil {
		n.log.Warn().Err(err).Str("domain", want.Domain).Msg("session registry: entry not deleted")
		return false
	}
	return true
}

// sessionEntries are every entry of the registry, all of those its
// stream's leader has (bus.KVEntries): a watch's initial values alone may
// come from a replica still catching up, a node's own just restarted
// with an empty store among them, and miss entries.
func (n *Node) sessionEntries(ctx context.Context) ([]protocol.SessionEntry, error) {
	if n.sessions.kv == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	kves, err := bus.KVEntries(ctx, n.sessions.kv)
	if err != nil {
		return nil, err
	}
	var out []protocol.SessionEntry
	for _, kve := range kves {
		var e protocol.SessionEntry
		if json.Unmarshal(kve.Value(), &e) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// restoreSessions starts again the sessions whose entries name this node:
// the node stopped or died with them and starts again under its name.
// It runs beside the node's start (a browser takes seconds) until ctx
// ends; a registry that does not answer yet (its stream electing a
// leader) is asked again; a session that cannot start keeps its entry,
// for the next start.
func (n *Node) restoreSessions(ctx context.Context) {
	var entries []protocol.SessionEntry
	for {
		var err error
		if entries, err = n.sessionEntries(ctx); err == nil {
			break
		}
		n.log.Warn().Err(err).Msg("session registry: cannot read the sessions to start again; asking again")
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	mine := 0
	for _, e := range entries {
		n.log.Debug().Str("domain", e.Domain).Str("session", e.Session).Str("node", e.Node).Msg("session registry: entry")
		if e.Node == n.name {
			mine++
		}
	}
	n.log.Info().Int("entries", len(entries)).Int("this_node", mine).Msg("session registry: sessions to start again")
	for _, e := range entries {
		if e.Node != n.name || ctx.Err() != nil {
			continue
		}
		reply, err := n.StartSession(ctx, protocol.SessionStartRequest{Domain: e.Domain, URL: e.URL})
		if err != nil {
			n.log.Warn().Err(err).Str("domain", e.Domain).Str("session", e.Session).Msg("session not started again")
			continue
		}
		n.log.Info().Str("domain", e.Domain).Str("session", reply.Session).Msg("session started again")
	}
}

// registryError is err of a call on the registry as a client sees it.
func registryError(domain string, err error) error {
	if err == nil {
		return nil
	}
	return protocol.Errorf(protocol.CodeUnavailable, "session %s: the session registry does not answer: %v", domain, err)
}

func newSessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "s" + hex.EncodeToString(b[:])
}
