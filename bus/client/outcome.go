package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// A plan's fate, as its client can know it. The plan carries its
// deadline (absolute, by this client's clock), and the tab starts none
// of its actions from then on, so once the deadline has passed nothing
// more of it will run. The client waits a little longer than the
// deadline it sends (replyMargin), so the tab's answer, expired
// included, has time to come back. When no answer comes although the
// plan was sent, the client cannot know what ran: it says so
// (outcome_unknown, naming the plan's id), never "timeout" or "no node".

// maxReplyMargin bounds the part of a call's time kept for the plan's
// answer to come back after the plan's deadline; a tenth of the call's
// time when that is less.
const maxReplyMargin = time.Second

func replyMargin(budget time.Duration) time.Duration {
	if budget <= 0 {
		return 0
	}
	return min(budget/10, maxReplyMargin)
}

// pastDeadlineWait bounds the wait for the answer to a plan sent past
// its own deadline, with no deadline of the call's: the tab answers it at
// once (its first fate, or expired), unless it is busy or frozen.
const pastDeadlineWait = 10 * time.Second

// preparedPlan is an encoded plan with its id and deadline set.
type preparedPlan struct {
	data     []byte
	id       string
	deadline time.Time // the plan's, as sent; zero: none
	wait     time.Time // when the client stops waiting, if earlier than ctx's deadline
}

// preparePlan gives an encoded plan an id (its own or NewPlanID) and the
// deadline ctx sets (its deadline less the reply margin), unless the plan
// has an earlier one of its own, which then bounds the wait instead. A
// deadline the plan gives that is not a time is left for the node to
// refuse (bad_request).
func preparePlan(ctx context.Context, data []byte) (preparedPlan, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return preparedPlan{}, protocol.Errorf(protocol.CodeBadRequest, "plan: invalid JSON: %v", err)
	}
	if fields == nil {
		return preparedPlan{}, protocol.Errorf(protocol.CodeBadRequest, "plan: expected a JSON object, got null")
	}
	p := preparedPlan{data: data}
	changed := false
	if raw, ok := fields["id"]; !ok || json.Unmarshal(raw, &p.id) != nil || p.id == "" {
		p.id = NewPlanID()
		fields["id"], _ = json.Marshal(p.id)
		changed = true
	}
	var own time.Time
	raw, hasOwn := fields["deadline"]
	if hasOwn {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return p.encode(fields, changed)
		}
		var err error
		if own, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return p.encode(fields, changed)
		}
	}
	now := time.Now()
	ctxEnd, bounded := ctx.Deadline()
	switch {
	case bounded && (!hasOwn || ctxEnd.Add(-replyMargin(ctxEnd.Sub(now))).Before(own)):
		p.deadline = ctxEnd.Add(-replyMargin(ctxEnd.Sub(now)))
		fields["deadline"], _ = json.Marshal(p.deadline.UTC().Format(time.RFC3339Nano))
		changed = true
	case hasOwn && own.After(now):
		p.deadline = own
		p.wait = own.Add(replyMargin(own.Sub(now)))
	case hasOwn:
		// Nothing of it will start; sent all the same, it learns the
		// fate of an earlier send under its id (or expired), within
		// ctx's deadline, else pastDeadlineWait.
		p.deadline = own
		if !bounded {
			p.wait = now.Add(pastDeadlineWait)
		}
	}
	return p.encode(fields, changed)
}

func (p preparedPlan) encode(fields map[string]json.RawMessage, changed bool) (preparedPlan, error) {
	if !changed {
		return p, nil
	}
	var err error
	p.data, err = protocol.Marshal(fields)
	return p, err
}

// bound is ctx, ended when the client stops waiting for the plan.
func (p preparedPlan) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.wait.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, p.wait)
}

// unanswered is the error of a plan that got no answer (err): as it is
// when a node or the server said why, saying that the plan was not sent
// when it never left, else outcome_unknown.
func (p preparedPlan) unanswered(tab string, sent bool, err error) error {
	code := protocol.CodeOf(err)
	switch {
	case code != protocol.CodeTimeout && code != protocol.CodeUnavailable:
		return err // an answer of sorts: node_unavailable, tab_not_found, permission_denied
	case errors.Is(err, nats.ErrNoResponders):
		return err // nobody took it: what reachTab made of that
	case !sent:
		return &protocol.Error{Code: code, Err: err,
			Message: fmt.Sprintf("plan %s was not sent to tab %s (%v): it did not run, and will not", p.id, tab, err)}
	}
	after := ""
	if !p.deadline.IsZero() {
		after = fmt.Sprintf("; no action of it starts after its deadline, %s", p.deadline.UTC().Format(time.RFC3339Nano))
	}
	return &protocol.Error{Code: protocol.CodeOutcomeUnknown, Err: err, Message: fmt.Sprintf(
		"plan %s was sent to tab %s and its answer was lost (%v): it may have run, in whole or in part%s. Its frames name plan %s: look at them (framebus frames --tab %s) before sending it again; sent again under the same id it does not run twice (the tab answers with the first run's result)",
		p.id, tab, err, after, p.id, tab)}
}

// noteSkew adds to an expired result what this client's clock says: when
// by it the deadline has not passed yet, the node's clock is ahead.
func (p preparedPlan) noteSkew(res *protocol.PlanResult, now time.Time) {
	if res.Code != protocol.CodeExpired || p.deadline.IsZero() || !now.Before(p.deadline) {
		return
	}
	res.Error += fmt.Sprintf(" [by this client's clock the deadline is still %s away: the node's clock is ahead of this client's; nodes and clients need synchronised clocks]",
		p.deadline.Sub(now).Round(time.Millisecond))
}
