package actors

import (
	"context"
	"errors"
	"sync"

	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/protocol"
)

// Cancelling a plan: a request on the tab's cancel subject, answered from
// the connection's goroutine while the actor is busy, cuts the running
// plan's context, or marks a queued plan to be answered cancelled.

// errCancelled is the cause a cancelled plan's context ends with.
var errCancelled = errors.New("cancelled")

// cancelState is what a cancel request can reach: the running plans and
// the ids of plans cancelled before they ran. Plans run one at a time,
// but while one waits for a person (handoff, ask) the tab runs others:
// the running ones are a stack.
type cancelState struct {
	mu      sync.Mutex
	running []runningPlan
	early   map[string]bool
}

// runningPlan is a plan the tab runs, and what cancels it. sender is
// who sent it, known for a plan that asks a person (Plan.Sender): such a
// plan is only its sender's to cancel, so another agent cannot end a
// person's handoff by cancelling the plan that waits for it.
type runningPlan struct {
	id     string
	sender protocol.Sender
	cancel context.CancelCauseFunc
}

// maxEarlyCancels bounds the ids of plans cancelled before they ran (a
// cancel for a plan that never comes would otherwise be kept for ever).
const maxEarlyCancels = 1024

// start registers the plan about to run and returns its context, or
// false when it was cancelled while queued.
func (c *cancelState) start(id string, sender protocol.Sender) (context.Context, bool) {
	ctx, cancel := context.WithCancelCause(context.Background())
	c.mu.Lock()
	defer c.mu.Unlock()
	if id != "" && c.early[id] {
		delete(c.early, id)
		cancel(errCancelled)
		return ctx, false
	}
	c.running = append(c.running, runningPlan{id, sender, cancel})
	return ctx, true
}

// done unregisters the plan that ran, the last started.
func (c *cancelState) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.running); n > 0 {
		c.running[n-1].cancel(nil)
		c.running = c.running[:n-1]
	}
}

// request cancels plan id for from: the running one, at once (it reports
// true), or one still queued, when its turn comes (false: which plans are
// queued is not known before they are taken). Another user's cancel of a
// running plan that asks a person is refused.
func (c *cancelState) request(id string, from protocol.Sender) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.running {
		if r.id == id {
			if r.sender.Known() && from.Known() && r.sender != from {
				return false, protocol.Errorf(protocol.CodePermissionDenied, "permission denied: plan %s waits for a person (a handoff or a question) and is its sender's to cancel", id)
			}
			r.cancel(errCancelled)
			return true, nil
		}
	}
	if c.early == nil {
		c.early = map[string]bool{}
	}
	if len(c.early) >= maxEarlyCancels {
		clear(c.early)
	}
	c.early[id] = true
	return false, nil
}

// answerCancel serves the tab's cancel subject.
func (t *Tab) answerCancel(m micro.Request) {
	var req protocol.CancelRequest
	if err := protocol.DecodeRequest(m.Data(), "cancel", &req); err != nil {
		respond(m, protocol.CancelReply{Code: protocol.CodeBadRequest, Error: err.Error()}, t.log)
		return
	}
	if req.PlanID == "" {
		respond(m, protocol.CancelReply{Code: protocol.CodeBadRequest, Error: `cancel: want {"planId": "ID"}, the id of the plan to cancel`}, t.log)
		return
	}
	cancelled, err := t.cancels.request(req.PlanID, senderOf(m))
	if err != nil {
		respond(m, protocol.CancelReply{Code: protocol.CodeOf(err), Error: err.Error()}, t.log)
		return
	}
	respond(m, protocol.CancelReply{OK: true, Cancelled: cancelled}, t.log)
}

// runningID is the id of the plan running last ("" when none, or it
// has none).
func (c *cancelState) runningID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.running); n > 0 {
		return c.running[n-1].id
	}
	return ""
}
