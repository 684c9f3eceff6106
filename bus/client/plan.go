package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"

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
	data, _, err := WithPlanID(data)
	if err != nil {
		return protocol.PlanResult{}, nil, err
	}
	out, err := c.roundTrip(ctx, c.subj.TabPlan(tab), data, true)
	if errors.Is(err, nats.ErrNoResponders) {
		return protocol.PlanResult{}, nil, c.tabNotFound(ctx, tab, err)
	}
	if err != nil {
		return protocol.PlanResult{}, nil, err
	}
	res, err := protocol.DecodePlanResult(out)
	if err != nil {
		return protocol.PlanResult{}, nil, err
	}
	return res, out, nil
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
	err := c.Request(ctx, c.subj.TabCancel(tab), protocol.CancelRequest{PlanID: planID}, &reply)
	if errors.Is(err, nats.ErrNoResponders) {
		return reply, c.tabNotFound(ctx, tab, err)
	}
	return reply, err
}

// tabNotFound is the error for a tab nothing answers for.
func (c *Client) tabNotFound(ctx context.Context, tab string, cause error) error {
	list, err := c.Tabs(ctx)
	if err != nil {
		return &protocol.Error{Code: protocol.CodeTabNotFound, Message: "no tab " + tab + " on the bus", Err: cause}
	}
	ids := ""
	for i, t := range list.Tabs {
		if i > 0 {
			ids += ", "
		}
		ids += t.Tab
	}
	if ids == "" {
		ids = "no tabs"
	}
	return &protocol.Error{Code: protocol.CodeTabNotFound, Message: "no tab " + tab + " on the bus; the node has: " + ids, Err: cause}
}
