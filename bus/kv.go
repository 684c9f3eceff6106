package bus

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KVEntries are the live entries of kv (deleted keys left out), in key
// order: every entry its stream's leader had when the read began. A KV
// watch's consumer may be placed on any replica of the bucket, one still
// catching up included (a server just restarted with an empty store),
// and its initial values end with what that replica has; so the read
// goes on until it has seen the leader's last revision, or ctx ends.
// It is for buckets whose entries do not expire (no TTL): there the
// leader's last revision may be a marker already gone, and the read
// would wait out ctx.
func KVEntries(ctx context.Context, kv jetstream.KeyValue) ([]jetstream.KeyValueEntry, error) {
	last, err := lastRevision(ctx, kv)
	if err != nil {
		return nil, err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	live := map[string]jetstream.KeyValueEntry{}
	initialDone, seen := false, uint64(0)
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("bus: the watch of %s stopped", kv.Bucket())
			}
			if e == nil {
				initialDone = true
			} else {
				seen = max(seen, e.Revision())
				if e.Operation() == jetstream.KeyValuePut {
					live[e.Key()] = e
				} else {
					delete(live, e.Key())
				}
			}
			if initialDone && seen >= last {
				out := slices.Collect(func(yield func(jetstream.KeyValueEntry) bool) {
					for _, e := range live {
						if !yield(e) {
							return
						}
					}
				})
				slices.SortFunc(out, func(a, b jetstream.KeyValueEntry) int { return strings.Compare(a.Key(), b.Key()) })
				return out, nil
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("bus: %s: %d of its leader's %d revisions seen: %w", kv.Bucket(), seen, last, ctx.Err())
		}
	}
}

// lastRevision is kv's last revision as its stream's leader has it. A
// stream info request is meant to be answered by the leader, but a
// member just restarted may answer too (as the group's preferred peer
// while it elects), with what its replica has so far; an answer is the
// leader's when the leader it names is not among the replicas it lists
// (an answer lists every peer but its own server). Another is asked for
// until ctx ends.
func lastRevision(ctx context.Context, kv jetstream.KeyValue) (uint64, error) {
	for {
		st, err := kv.Status(ctx)
		if err != nil {
			return 0, err
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok {
			return 0, fmt.Errorf("bus: %s: a bucket status without its stream", kv.Bucket())
		}
		info := bs.StreamInfo()
		if fromLeader(info.Cluster) {
			return info.State.LastSeq, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("bus: %s: no answer from its stream's leader: %w", kv.Bucket(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fromLeader reports whether a stream info with this cluster part was
// answered by the stream's leader (or by the only server there is).
func fromLeader(c *jetstream.ClusterInfo) bool {
	if c == nil || len(c.Replicas) == 0 {
		return c == nil || c.Leader != ""
	}
	return c.Leader != "" && !slices.ContainsFunc(c.Replicas, func(p *jetstream.PeerInfo) bool { return p.Name == c.Leader })
}
