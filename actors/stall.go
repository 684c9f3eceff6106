package actors

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/framebus/framebus/protocol"
)

// Stalls: this process stood still (SIGSTOP, a swapped VM, a machine too
// loaded to schedule it) long enough that its node may have lost its
// liveness: its registry entry was not renewed, and clients waiting for
// its tabs gave up and were told node_unavailable (bus/client's liveness
// check). The plans they sent meanwhile sit in socket buffers and reach
// the tabs the moment the process runs again. None of them may run: a
// client told "failed" must be able to trust that nothing ran. So a plan
// delivered while a stall is ending, or within stallGrace after, is
// refused with node_unavailable; the client, if it still waits, sends it
// again. A plan sent right after the stall by a client that saw the node
// live again is refused too: safe, and said.
//
// One watcher per process (a stall stops every node in it): a ticker that
// notices the time between its ticks.
const (
	stallTick  = 100 * time.Millisecond
	stallLimit = protocol.NodeTTL - protocol.NodeHeartbeat // a client may give up on the node past this
	stallGrace = time.Second                               // the backlog reaches the tabs within it
)

var stalls struct {
	once    sync.Once
	base    time.Time    // the monotonic clock's origin for the fields below
	last    atomic.Int64 // the last tick, since base
	ended   atomic.Int64 // when the last stall ended (0: none)
	lasted  atomic.Int64 // how long it lasted
	started atomic.Bool
}

// watchStalls starts the process's stall watcher once.
func watchStalls() {
	stalls.once.Do(func() {
		stalls.base = time.Now()
		stalls.started.Store(true)
		go func() {
			tick := time.NewTicker(stallTick)
			defer tick.Stop()
			for range tick.C {
				now := int64(time.Since(stalls.base))
				if gap := now - stalls.last.Load(); gap >= int64(stallLimit) {
					stalls.lasted.Store(gap)
					stalls.ended.Store(now)
				}
				stalls.last.Store(now)
			}
		}()
	})
}

// stalledSince is the error for an action of a plan that came at since,
// about to start now, when the process has stood still since (a stall
// under way, or one that ended after since) long enough that the node
// may have lost its liveness; nil otherwise. Such a plan waited in the
// tab's mailbox, or ran an action, across the stall: its client may have
// been told node_unavailable meanwhile, and the cancel it sent races the
// tab on the way back (a queued plan's turn comes the moment the action
// before it returns from the browser, which kept running).
func stalledSince(node string, plan protocol.Plan, i int, a protocol.Action, since time.Time) error {
	if !stalls.started.Load() {
		return nil
	}
	now := int64(time.Since(stalls.base))
	lasted := time.Duration(now - stalls.last.Load())
	if lasted < stallLimit {
		ended := stalls.ended.Load()
		if ended == 0 || ended <= int64(since.Sub(stalls.base)) {
			return nil
		}
		lasted = time.Duration(stalls.lasted.Load())
	}
	return protocol.Errorf(protocol.CodeNodeUnavailable,
		"node %s stood still for %s (frozen, paused or starved) while plan %s was with it, long enough to lose its liveness: its client may have given up, so action %d (%s) and those after it did not start; to run them, send them again under a new plan id (this one answers with this result)",
		node, fmt.Sprint(lasted.Round(100*time.Millisecond)), plan.ID, i, a.Type)
}

// stallRefusal is the error for a plan delivered now, when a stall that
// may have cost node its liveness is ending or ended within stallGrace;
// nil otherwise.
func stallRefusal(node string) error {
	if !stalls.started.Load() {
		return nil
	}
	now := int64(time.Since(stalls.base))
	lasted := time.Duration(now - stalls.last.Load())
	if lasted < stallLimit { // the watcher ticked since: did a stall end just now?
		ended := stalls.ended.Load()
		if ended == 0 || now-ended >= int64(stallGrace) {
			return nil
		}
		lasted = time.Duration(stalls.lasted.Load())
	}
	return protocol.Errorf(protocol.CodeNodeUnavailable,
		"node %s stood still for %s (frozen, paused or starved), long enough to lose its liveness: clients waiting for it may have given up, so the plans that reached it as it came back did not run; send it again",
		node, fmt.Sprint(lasted.Round(100*time.Millisecond)))
}
