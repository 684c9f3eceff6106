package actors

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/framebus/framebus/protocol"
)

// Resources carry out the requests of the resources beside the browser
// (ADR-006): http fetches and web searches, under the node's whitelist.
// The node's answer them on the bus (any node: a queue group); a tab
// runs a plan's fetch and search actions with its node's, in the plan's
// order, and they touch neither the page nor the tab's frames.
type Resources interface {
	Fetch(ctx context.Context, req protocol.FetchRequest) (protocol.FetchReply, error)
	Search(ctx context.Context, req protocol.SearchRequest) (protocol.SearchReply, error)
}

// runResourceAction carries out a plan's fetch or search: its value is
// the resource's reply.
func (t *Tab) runResourceAction(ctx context.Context, index int, a protocol.Action) protocol.ActionResult {
	r := protocol.ActionResult{Index: index, Type: a.Type}
	if t.resources == nil {
		r.Code, r.Error = protocol.CodeBadRequest, fmt.Sprintf("%s: this node has no %s resource", a.Type, resourceOf(a))
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, a.EffectiveTimeout())
	defer cancel()
	var reply any
	var err error
	switch a.Type {
	case "fetch":
		reply, err = t.resources.Fetch(ctx, a.FetchRequest())
	case "search":
		reply, err = t.resources.Search(ctx, a.SearchRequest())
	default:
		err = protocol.Errorf(protocol.CodeInternal, "%s: no resource carries it out", a.Type)
	}
	if err != nil {
		r.Code, r.Error = protocol.CodeOf(err), err.Error()
		return r
	}
	value, err := json.Marshal(reply)
	if err != nil {
		r.Code, r.Error = protocol.CodeInternal, err.Error()
		return r
	}
	r.OK, r.Value = true, value
	return r
}

func resourceOf(a protocol.Action) string {
	spec, _ := protocol.LookupAction(a.Type)
	return spec.Resource
}
