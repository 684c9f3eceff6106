package actors

import (
	"slices"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/protocol"
)

// A plan waits in the tab's mailbox while the tab runs the plans before
// it. One with a deadline is answered expired at its deadline if it is
// still waiting then, rather than when its turn comes: its client, which
// stops waiting a moment after the deadline, learns that it did not run
// instead of not knowing. Not so a repeat of a plan id the tab is running
// or remembers: its answer is that run's result, given when its turn
// comes. A plan answered expired is remembered under its id at once, and
// nothing of it runs when its turn comes.

// queueState is where a queued plan is; guarded by Tab.queueMu.
type queueState int

const (
	waiting  queueState = iota
	taken               // the actor has it
	answered            // refused while it waited (expired, tab closed)
)

// queuedPlan is a plan in the tab's mailbox.
type queuedPlan struct {
	m     micro.Request
	plan  protocol.Plan
	at    time.Time   // when it came
	timer *time.Timer // its deadline's; nil without one
	state queueState
}

// queue makes the queued plan for m, and its deadline's timer.
func (t *Tab) queue(m micro.Request, plan protocol.Plan) *queuedPlan {
	q := &queuedPlan{m: m, plan: plan, at: time.Now()}
	if !plan.Deadline.IsZero() {
		q.timer = time.AfterFunc(time.Until(plan.Deadline), func() { t.expireQueued(q) })
	}
	return q
}

// expireQueued answers q at its deadline, if it still waits: with the
// result of the earlier run of its id when the tab remembers one, else
// expired, which the tab remembers under its id. A repeat of the plan
// in flight waits for that plan's result.
func (t *Tab) expireQueued(q *queuedPlan) {
	now := time.Now()
	t.queueMu.Lock()
	id := q.plan.ID
	if q.state != waiting || id != "" && slices.Contains(t.inFlight, id) {
		t.queueMu.Unlock()
		return
	}
	q.state = answered
	res, ok := t.planIDs.result(id, now)
	if !ok {
		seq := t.Info().Sequence
		res = protocol.PlanResult{Version: protocol.Version, Tab: t.id, PlanID: id, Results: []protocol.ActionResult{}, Sequence: seq}
		stop(&res, 0, expiredError(q.plan, 0, q.plan.Actions[0], q.at, now), nil, seq)
		t.planIDs.remember(id, res, now)
	}
	t.queueMu.Unlock()
	t.respondPlan(q.m, res)
}

// refuseQueued answers q with err, unless it was answered already.
func (t *Tab) refuseQueued(q *queuedPlan, err error) {
	if q.timer != nil {
		q.timer.Stop()
	}
	t.queueMu.Lock()
	mine := q.state == waiting
	q.state = answered
	t.queueMu.Unlock()
	if mine {
		respond(q.m, protocol.NewErrorReply(err), t.log)
	}
}

// take gives q to the actor. It reports whether q was answered
// already (at its deadline, or now with the earlier run of its id); else
// it marks q's id in flight.
func (t *Tab) take(q *queuedPlan) bool {
	if q.timer != nil {
		q.timer.Stop()
	}
	t.queueMu.Lock()
	if q.state == answered {
		t.queueMu.Unlock()
		return true
	}
	q.state = taken
	if q.plan.ID != "" {
		if res, ok := t.planIDs.result(q.plan.ID, time.Now()); ok {
			t.queueMu.Unlock()
			t.respondPlan(q.m, res)
			return true
		}
	}
	t.inFlight = append(t.inFlight, q.plan.ID)
	t.queueMu.Unlock()
	t.journalPlan(q.plan.ID) // before its first action (planjournal.go)
	return false
}

// ran remembers the result of the plan in flight, the last taken.
func (t *Tab) ran(id string, res protocol.PlanResult) {
	t.queueMu.Lock()
	t.planIDs.remember(id, res, time.Now())
	t.inFlight = t.inFlight[:max(len(t.inFlight)-1, 0)]
	t.queueMu.Unlock()
}

// inFlightPlan reports whether plan id is taken and not yet answered
// (a plan waiting for a person, whose tab runs others meanwhile).
func (t *Tab) inFlightPlan(id string) bool {
	t.queueMu.Lock()
	defer t.queueMu.Unlock()
	return id != "" && slices.Contains(t.inFlight, id)
}
