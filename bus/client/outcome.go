package client

import (
	"bytes"
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
// refuse (bad_request). The fields it adds are put at the end of the
// plan as written; only one it replaces (an id that is not a string, a
// later deadline) costs decoding and encoding the plan.
func preparePlan(ctx context.Context, data []byte) (preparedPlan, error) {
	var head struct {
		ID       json.RawMessage `json:"id"`
		Deadline json.RawMessage `json:"deadline"`
	}
	body := bytes.TrimSpace(data)
	if err := json.Unmarshal(body, &head); err != nil {
		return preparedPlan{}, protocol.Errorf(protocol.CodeBadRequest, "plan: invalid JSON: %v", err)
	}
	if len(body) < 2 || body[0] != '{' {
		return preparedPlan{}, protocol.Errorf(protocol.CodeBadRequest, "plan: expected a JSON object")
	}
	p := preparedPlan{data: data}
	set := map[string]string{}
	if json.Unmarshal(head.ID, &p.id) != nil || p.id == "" {
		p.id = NewPlanID()
		set["id"] = p.id
	}
	var own time.Time
	hasOwn := false
	if head.Deadline != nil {
		var text string
		if json.Unmarshal(head.Deadline, &text) != nil {
			return p.with(body, set, head.ID != nil) // the node refuses it
		}
		var err error
		if own, err = time.Parse(time.RFC3339Nano, text); err != nil {
			return p.with(body, set, head.ID != nil)
		}
		hasOwn = true
	}
	now := time.Now()
	ctxEnd, bounded := ctx.Deadline()
	switch {
	case bounded && (!hasOwn || ctxEnd.Add(-replyMargin(ctxEnd.Sub(now))).Before(own)):
		p.deadline = ctxEnd.Add(-replyMargin(ctxEnd.Sub(now)))
		set["deadline"] = p.deadline.UTC().Format(time.RFC3339Nano)
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
	_, replacesID := set["id"]
	_, replacesDeadline := set["deadline"]
	return p.with(body, set, replacesID && head.ID != nil || replacesDeadline && head.Deadline != nil)
}

// with is p whose data is the plan body with the fields set: added at
// the end of the object, or, when one replaces a field the plan has,
// through a map.
func (p preparedPlan) with(body []byte, set map[string]string, replaces bool) (preparedPlan, error) {
	if len(set) == 0 {
		return p, nil
	}
	if replaces {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			return preparedPlan{}, protocol.Errorf(protocol.CodeBadRequest, "plan: invalid JSON: %v", err)
		}
		for name, value := range set {
			fields[name], _ = json.Marshal(value)
		}
		var err error
		p.data, err = protocol.Marshal(fields)
		return p, err
	}
	out := make([]byte, 0, len(body)+128)
	out = append(out, body[:len(body)-1]...)
	empty := len(bytes.TrimSpace(body[1:len(body)-1])) == 0
	for _, name := range []string{"id", "deadline"} {
		value, ok := set[name]
		if !ok {
			continue
		}
		if !empty {
			out = append(out, ',')
		}
		empty = false
		out = append(out, '"')
		out = append(out, name...)
		out = append(out, '"', ':')
		v, _ := json.Marshal(value)
		out = append(out, v...)
	}
	p.data = append(out, '}')
	return p, nil
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
	case errors.Is(err, ErrNodeNotLive):
		// The node or this client's server lost its liveness and may
		// come back: probeTabNode's error says what becomes of the plan.
		return err
	case code == protocol.CodeNodeUnavailable && sent:
		// Gone while the plan was with it: what ran is not known.
		return &protocol.Error{Code: code, Err: err, Message: fmt.Sprintf(
			"%v; plan %s had been sent to it: it may have run, in whole or in part, before the node went. Its frames name plan %s (framebus frames --tab %s)",
			err, p.id, p.id, tab)}
	case code != protocol.CodeTimeout && code != protocol.CodeUnavailable:
		return err // an answer of sorts: node_unavailable, tab_not_found, permission_denied
	case errors.Is(err, nats.ErrNoResponders) && !sent && bareNoResponders(err):
		// Nothing on the bus answered for the tab, nor listed tabs: this
		// client is connected, so the bus is up; its nodes are down,
		// frozen or restarting. Not sent, so nothing ran.
		return &protocol.Error{Code: protocol.CodeUnavailable, Err: errNothingAnswered, Message: fmt.Sprintf(
			"plan %s was not sent: nothing on the bus answers for tab %s, and no node listed its tabs (a node down, frozen or restarting?): it did not run, and will not; ask again once a node answers",
			p.id, tab)}
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
		"plan %s was sent to tab %s and its answer was lost (%v): it may have run, in whole or in part%s. Its frames name plan %s: look at them (framebus frames --tab %s) before sending it again; sent again under the same id it does not run twice (the tab answers with the first run's result; after its node restarted, outcome_unknown with what is known of it)",
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

// errNothingAnswered is the cause of a plan not sent because nothing on
// a connected bus answered for its tab.
var errNothingAnswered = errors.New("nothing on the bus answered")

// bareNoResponders reports whether err is a bare "no responders" (no node answered at
// all), not one a lookup made into another error (tab_not_found,
// node_unavailable, a tab on its way).
func bareNoResponders(err error) bool {
	var perr *protocol.Error
	return !errors.As(err, &perr)
}
