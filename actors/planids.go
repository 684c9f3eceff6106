package actors

import (
	"fmt"
	"time"

	"github.com/framebus/framebus/protocol"
)

// A tab remembers the ids of the plans it ran recently, with their
// results: a plan sent again with the same id (a client that resends
// after a reconnect, not knowing whether the first got through) is
// answered with the first run's result marked duplicate, and does not run
// again. Plans reach the actor one at a time, so a repeat queued behind
// the first (even one sent at the same moment) is taken only once the
// first has finished and its result is here. A plan without an id is not
// remembered.

// Bounds of the memory: ids are kept for planIDsAge, planIDsKept at most;
// results' values planIDsValueBytes in all, past which the oldest results
// lose their values (a repeat still learns what ran, and is still not
// run again).
const (
	planIDsKept       = 1000
	planIDsAge        = 10 * time.Minute
	planIDsValueBytes = 16 << 20
)

type planRun struct {
	id  string
	at  time.Time
	res protocol.PlanResult
}

// planIDs is the memory; the tab's goroutine changes it, under
// Tab.queueMu, which a queued plan's deadline timer takes to read it.
type planIDs struct {
	runs        map[string]*planRun
	order       []*planRun // oldest first
	valueBytes  int
	trimmedUpTo int // order[:trimmedUpTo] have lost their values
}

// result is the earlier run of plan id, if it is remembered: its result,
// marked duplicate.
func (p *planIDs) result(id string, now time.Time) (protocol.PlanResult, bool) {
	p.expire(now)
	r, ok := p.runs[id]
	if !ok {
		return protocol.PlanResult{}, false
	}
	res := r.res
	res.Duplicate = true
	return res, true
}

// known reports whether plan id's result is remembered (expired or not).
func (p *planIDs) known(id string) bool {
	_, ok := p.runs[id]
	return ok
}

// remember records plan id's result, as of now (when it ran).
func (p *planIDs) remember(id string, res protocol.PlanResult, now time.Time) {
	if id == "" {
		return
	}
	if p.runs == nil {
		p.runs = map[string]*planRun{}
	}
	r := &planRun{id: id, at: now, res: res}
	p.runs[id] = r
	p.order = append(p.order, r)
	p.valueBytes += valueBytes(res)
	for len(p.order) > planIDsKept {
		p.forget()
	}
	for p.valueBytes > planIDsValueBytes && p.trimmedUpTo < len(p.order) {
		p.trim(p.order[p.trimmedUpTo])
		p.trimmedUpTo++
	}
}

// expire forgets the runs older than planIDsAge.
func (p *planIDs) expire(now time.Time) {
	for len(p.order) > 0 && now.Sub(p.order[0].at) > planIDsAge {
		p.forget()
	}
}

// forget drops the oldest run.
func (p *planIDs) forget() {
	r := p.order[0]
	p.order[0] = nil
	p.order = p.order[1:]
	if p.trimmedUpTo > 0 {
		p.trimmedUpTo--
	} else {
		p.valueBytes -= valueBytes(r.res)
	}
	if p.runs[r.id] == r {
		delete(p.runs, r.id)
	}
}

// trim drops a remembered result's values, and says so in each action's
// result.
func (p *planIDs) trim(r *planRun) {
	p.valueBytes -= valueBytes(r.res)
	results := make([]protocol.ActionResult, len(r.res.Results))
	copy(results, r.res.Results)
	for i := range results {
		if a := &results[i]; len(a.Value) > 0 {
			a.OK, a.Code, a.Error = false, protocol.CodeTooLarge, fmt.Sprintf("value of %d bytes no longer kept for repeats of plan %s", len(a.Value), r.id)
			a.Value = nil
		}
	}
	r.res.Results = results
}

func valueBytes(res protocol.PlanResult) int {
	n := 0
	for _, a := range res.Results {
		n += len(a.Value)
	}
	return n
}
