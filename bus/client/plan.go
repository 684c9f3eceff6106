package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// NewPlanID makes a fresh plan id.
func NewPlanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "p-" + hex.EncodeToString(b[:])
}

// Plan sends plan to tab and returns its result. A plan without an id is
// given one (NewPlanID). While the connection is down the plan waits
// (bounded by ctx); when the connection is lost before the answer came,
// the same plan, same id, is sent again once it is back: the node
// answers an id it has seen with the first run's result (Duplicate), so
// the plan runs once. An unknown tab is tab_not_found.
//
// ctx's deadline is the plan's (see protocol.Plan.Deadline), a moment
// before it so the node's answer has time to come back: the tab starts
// nothing of the plan after it (expired). A plan that carries a deadline
// of its own keeps the earlier of the two, and bounds the wait too. When
// the plan was sent and no answer came (ctx ended, or the connection was
// lost for good), the error is outcome_unknown, naming the plan's id:
// it may have run.
//
// The result's OK false is not an error: the result says what stopped.
func (c *Client) Plan(ctx context.Context, tab string, plan protocol.Plan) (protocol.PlanResult, error) {
	if plan.ID == "" {
		plan.ID = NewPlanID()
	}
	data, err := protocol.Marshal(plan)
	if err != nil {
		return protocol.PlanResult{}, protocol.Errorf(protocol.CodeBadRequest, "plan: %v", err)
	}
	res, _, err := c.PlanData(ctx, tab, data)
	return res, err
}

// PlanData is Plan for a plan already encoded (as a user wrote it: its
// fields are sent as they are, with an id added when it has none). It
// returns the decoded result and the reply as the node sent it.
func (c *Client) PlanData(ctx context.Context, tab string, data []byte) (protocol.PlanResult, []byte, error) {
	if !protocol.ValidTabID(tab) {
		return protocol.PlanResult{}, nil, protocol.Errorf(protocol.CodeBadRequest, "tab: %q is not a tab id (letters, digits, '-' and '_')", tab)
	}
	p, err := preparePlan(ctx, data)
	if err != nil {
		return protocol.PlanResult{}, nil, err
	}
	ctx, cancel := p.bound(ctx)
	defer cancel()
	var out []byte
	sent := 0
	for {
		err = c.reachTab(ctx, tab, func() (err error) {
			out, err = c.planRoundTrip(ctx, tab, p.data, &sent)
			return err
		})
		if !errors.Is(err, errRetake) || sleepCtx(ctx, retakePause) != nil {
			break
		}
	}
	if err != nil {
		return protocol.PlanResult{}, nil, p.unanswered(tab, sent > 0, err)
	}
	res, err := protocol.DecodePlanResult(out)
	if err != nil {
		return protocol.PlanResult{}, nil, err
	}
	p.noteSkew(&res, time.Now())
	return res, out, nil
}

// While a plan waits for its answer, the client checks now and then that
// the tab's node is still live (liveness.go): a plan sent in the moment
// its node died (before the server dropped the dead connection's
// subscriptions), or to a node that froze, would otherwise wait for its
// whole deadline. A node found silent is checked again sooner, so that
// its loss is told within about protocol.NodeTTL plus a second.
const (
	nodeProbeAfter  = 250 * time.Millisecond
	nodeProbeEvery  = 500 * time.Millisecond
	nodeProbeSilent = 250 * time.Millisecond
)

// planRoundTrip sends a plan (resent after a reconnect: the node knows
// its id) and waits for its answer, or until the tab's node is found gone
// (node_unavailable). *sent counts the sends that may have reached the
// tab. A send after the first answered "not taken" (a restarted node's
// tab on its way back) is errRetake: an earlier one may have been taken.
func (c *Client) planRoundTrip(ctx context.Context, tab string, data []byte, sent *int) ([]byte, error) {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go c.probeTabNode(pctx, tab, data, cancel)
	msg, err := c.exchange(pctx, &nats.Msg{Subject: c.subj.TabPlan(tab), Data: data}, true, sent)
	if err != nil && ctx.Err() == nil && pctx.Err() != nil {
		return nil, context.Cause(pctx) // the probe's: the tab's node is not live
	}
	if err != nil {
		return nil, err
	}
	if *sent > 1 && notTaken(msg.Data) {
		return nil, &protocol.Error{Code: protocol.CodeUnavailable, Err: errRetake,
			Message: "the plan was sent, its connection lost, and sent again to a tab on its way back after its node restarted: the first may have been taken"}
	}
	return msg.Data, nil
}

// A plan sent, then sent again after a reconnect to a tab whose node
// restarted meanwhile, may be answered "not taken" while the tab comes
// back (actors' holdPlans): true of that send, not of the first, which
// the old node may have begun. So it is sent again every retakePause,
// within its deadline, until the tab is back and answers for the id
// (the first run's result, or outcome_unknown: it began before the
// restart); past the deadline it is outcome_unknown. Told "not taken",
// a caller sending it anew under another id could run it twice.
var errRetake = errors.New("an earlier send may have been taken")

const retakePause = 250 * time.Millisecond

// notTaken reports whether a plan's answer is a refusal that took
// nothing: an error reply (no plan id: not the tab's own plan result)
// with code unavailable.
func notTaken(data []byte) bool {
	var head struct {
		OK     bool          `json:"ok"`
		Code   protocol.Code `json:"code"`
		PlanID string        `json:"planId"`
	}
	return json.Unmarshal(data, &head) == nil && !head.OK && head.Code == protocol.CodeUnavailable && head.PlanID == ""
}

// probeTabNode ends a plan's wait (cancel) when the tab's node is gone or
// lost its liveness. For a node that may come back (ErrNodeNotLive), it
// first sends a cancel of the plan (data) the node takes if and when it
// does, so that the plan the client was told failed does not run then;
// the error says so.
func (c *Client) probeTabNode(ctx context.Context, tab string, data []byte, cancel context.CancelCauseFunc) {
	wait := time.NewTimer(nodeProbeAfter)
	defer wait.Stop()
	l := &liveness{what: "tab " + tab}
	for {
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		}
		var state liveState
		var err error
		if state, err = c.learnNode(ctx, l, tab); l.node != "" {
			state, err = c.checkNode(ctx, l)
		}
		switch {
		case state == nodeNotLive && errors.Is(err, ErrNodeNotLive):
			cancel(c.cancelLeftBehind(tab, data, err))
			return
		case state == nodeNotLive:
			cancel(err)
			return
		case state == nodeWaiting:
			wait.Reset(nodeProbeSilent)
		default:
			wait.Reset(nodeProbeEvery)
		}
	}
}

// WithPlanID returns the encoded plan with an id, its own or a new one,
// and that id.
func WithPlanID(data []byte) ([]byte, string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, "", protocol.Errorf(protocol.CodeBadRequest, "plan: invalid JSON: %v", err)
	}
	var id string
	if raw, ok := fields["id"]; ok && json.Unmarshal(raw, &id) == nil && id != "" {
		return data, id, nil
	}
	id = NewPlanID()
	fields["id"], _ = json.Marshal(id)
	out, err := protocol.Marshal(fields)
	return out, id, err
}

// Cancel cancels a tab's plan by id (running or queued).
func (c *Client) Cancel(ctx context.Context, tab, planID string) (protocol.CancelReply, error) {
	var reply protocol.CancelReply
	err := c.reachTab(ctx, tab, func() error {
		return c.Request(ctx, c.subj.TabCancel(tab), protocol.CancelRequest{PlanID: planID}, &reply)
	})
	return reply, err
}

// A tab opened a moment ago on a node at another member of a cluster
// takes requests there at once, but its subscription reaches this
// client's server a moment later (routes carry it, beside the reply that
// told of the tab): until then NATS answers "no responders". So a
// request to a tab that a live node lists, yet that nothing here answers
// for, is sent again (nobody got it) every tabArrivalRetry, for up to
// tabArrival; past that it is unavailable (ErrTabNotHereYet).
const (
	tabArrival      = 3 * time.Second
	tabArrivalRetry = 50 * time.Millisecond
)

// errTabsLate is in the error for a request to a tab nothing answers
// for, when the nodes' tab lists did not come in time to tell whether a
// node has it (a busy bus): asked again within tabArrival, as a tab on
// its way is.
var errTabsLate = errors.New("the nodes' tab lists did not come in time")

// ErrTabNotHereYet is in the error for a request to a tab that a live
// node lists but that nothing at the client's server answers for.
var ErrTabNotHereYet = errors.New("the tab's subscription has not reached this server")

// reachTab runs send, a request to tab, and again while the tab is on
// its way (see tabArrival); a tab nothing answers for is tabNotFound's
// error.
func (c *Client) reachTab(ctx context.Context, tab string, send func() error) error {
	deadline := time.Now().Add(tabArrival)
	for {
		err := send()
		if !errors.Is(err, nats.ErrNoResponders) {
			return err
		}
		err = c.tabNotFound(ctx, tab, err)
		retry := errors.Is(err, ErrTabNotHereYet) || errors.Is(err, errTabsLate)
		if !retry || time.Now().After(deadline) || sleepCtx(ctx, tabArrivalRetry) != nil {
			return err
		}
	}
}

// goneLookup bounds the look at the nodes' tabs that tells a tab whose
// node is gone (node_unavailable) from one that is not there
// (tab_not_found): a plan to either fails within a second.
const goneLookup = 700 * time.Millisecond

// tabNotFound is the error for a tab nothing answers for: node_unavailable
// when the node that had it (the one that listed it last to this client,
// else the one its last frame in the history names) is no longer among
// those that answer, naming it; tab_not_found otherwise, with the tabs
// the nodes have and the nodes that did not answer.
func (c *Client) tabNotFound(ctx context.Context, tab string, cause error) error {
	return c.TabNotFound(ctx, tab, cause)
}

// TabNotFound is the error for a request to tab that no one answers
// (cause, e.g. nats.ErrNoResponders): node_unavailable naming the node
// that had the tab when it is gone, unavailable when no node answers at
// all or (wrapping ErrTabNotHereYet) when a live node lists the tab,
// else tab_not_found. It takes at most a second.
func (c *Client) TabNotFound(ctx context.Context, tab string, cause error) error {
	ctx, cancel := context.WithTimeout(ctx, goneLookup)
	defer cancel()
	last := c.tabNodes.nodeOf(tab)
	if last == "" {
		last = c.historyNodeOf(ctx, tab)
	}
	if last != "" {
		// Every node answers its default profile's status: nothing
		// answering there says at once that the node is gone.
		err := c.Request(ctx, c.subj.NodeProfile(last, protocol.DefaultProfile, protocol.OpStatus), nil, nil)
		if errNoAnswer(err) {
			return c.nodeGone(last, "tab "+tab, cause)
		}
	}
	list, err := c.Tabs(ctx)
	switch {
	case err != nil && last != "":
		return c.nodeGone(last, "tab "+tab, cause)
	case errNoAnswer(err):
		return err // no node at all: unavailable
	case protocol.CodeOf(err) == protocol.CodeTimeout:
		// Not knowing is no "not found".
		return &protocol.Error{Code: protocol.CodeUnavailable, Err: errors.Join(errTabsLate, cause),
			Message: "nothing at this server answers for tab " + tab + ", and the nodes did not list their tabs within " + goneLookup.String() + " to tell whether one has it (a busy bus?); nothing ran: ask again"}
	case err != nil:
		return &protocol.Error{Code: protocol.CodeTabNotFound, Message: "no tab " + tab + " on the bus", Err: cause}
	}
	var unreachable []string
	for _, n := range list.Nodes {
		if n.State == protocol.NodeUnreachable {
			unreachable = append(unreachable, n.Node)
		}
	}
	answered := slices.ContainsFunc(list.Nodes, func(n protocol.NodeState) bool { return n.Node == last && n.State == protocol.NodeAnswered })
	if last != "" && !answered {
		return c.nodeGone(last, "tab "+tab, cause)
	}
	var ids []string
	for _, t := range list.Tabs {
		if t.Tab == tab && slices.Contains(list.Nodes, protocol.NodeState{Node: t.Node, State: protocol.NodeAnswered}) {
			return &protocol.Error{Code: protocol.CodeUnavailable, Err: errors.Join(ErrTabNotHereYet, cause),
				Message: "tab " + tab + " is on node " + t.Node + ", which answers, but nothing at this server takes its requests yet (a tab opened a moment ago at another member of a cluster); ask again"}
		}
		ids = append(ids, t.Tab)
	}
	has := strings.Join(ids, ", ")
	if has == "" {
		has = "no tabs"
	}
	msg := "no tab " + tab + " on the bus; the nodes have: " + has
	if len(unreachable) > 0 {
		msg += "; not answering: " + strings.Join(unreachable, ", ")
	}
	return &protocol.Error{Code: protocol.CodeTabNotFound, Message: msg, Err: cause}
}

// historyNodeOf is the node that tab's last frame in the frame history
// names (frames carry their node), "" when there is none or no history.
func (c *Client) historyNodeOf(ctx context.Context, tab string) string {
	m, err := c.lastStored(ctx, c.subj.TabFrames(tab))
	if err != nil || m == nil {
		return ""
	}
	var head struct {
		Node string `json:"node"`
	}
	if json.Unmarshal(m.Data, &head) != nil || !protocol.ValidNodeName(head.Node) {
		return ""
	}
	return head.Node
}

// nodeGone is node_unavailable for a node that does not answer about
// what.
func (c *Client) nodeGone(node, what string, cause error) error {
	err := protocol.NodeUnavailable(node, what)
	err.Err = cause
	return err
}
