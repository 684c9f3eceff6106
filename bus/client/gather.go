package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// Many nodes, one view: every node answers tabs, status and session list.
// The client gathers the answers (scatter-gather): each answer names the
// live nodes of the node registry (Peers), and the client waits until
// every one of them answered, or until GatherWait (or the caller's
// earlier deadline) passed. A node the registry names that did not answer
// in time is in the reply's Nodes as protocol.NodeUnreachable, never left
// out.

// GatherWait bounds the wait for the nodes' answers to a gathered
// request when the caller's deadline is later: a live node answers those
// at once, from its connection, whatever its tabs are doing.
const GatherWait = 2 * time.Second

// answer is one node's answer to a gathered request.
type answer struct {
	node string
	data []byte
}

// answerHead is what every node's answer to a gathered request has.
type answerHead struct {
	OK    bool          `json:"ok"`
	Error string        `json:"error"`
	Code  protocol.Code `json:"code"`
	Node  string        `json:"node"`
	Peers []string      `json:"peers"`
}

// gather sends one request on subject and collects the nodes' answers
// (see GatherWait), in the order of their names, and which nodes
// answered and which did not.
func (c *Client) gather(ctx context.Context, subject string) ([]answer, []protocol.NodeState, error) {
	for try := 1; ; try++ {
		answers, nodes, err := c.gatherOnce(ctx, subject)
		// A gathered request only reads: one whose connection was lost
		// before any answer is sent again once it is back (another
		// member of a cluster), a few times.
		if !errors.Is(err, errGatherCut) || ctx.Err() != nil || try == gatherTries {
			return answers, nodes, err
		}
	}
}

// gatherTries bounds the tries of a gathered request that lose their
// connection before any answer.
const gatherTries = 3

// errGatherCut: the connection was lost before any node answered.
var errGatherCut = errors.New("the bus connection was lost before any answer")

// gatherOnce is one try of gather.
func (c *Client) gatherOnce(ctx context.Context, subject string) ([]answer, []protocol.NodeState, error) {
	ctx, cancel := context.WithTimeout(ctx, GatherWait)
	defer cancel()
	down, err := c.awaitConnected(ctx, "the request to "+subject)
	if err != nil {
		return nil, nil, err
	}
	refusals, stop := c.perms.watch(c.subjectIs(subject))
	defer stop()
	inbox := c.nc.NewInbox()
	msgs := make(chan *nats.Msg, 64)
	sub, err := c.nc.ChanSubscribe(inbox, msgs)
	if err != nil {
		return nil, nil, &protocol.Error{Code: protocol.CodeUnavailable, Message: "subscribe for the answers on " + subject, Err: err}
	}
	defer sub.Unsubscribe()
	if err := c.nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, nil, &protocol.Error{Code: protocol.CodeUnavailable, Message: "request to " + subject, Err: err}
	}
	var answers []answer
	answered := map[string]bool{}
	expected := map[string]bool{}
	registry := true // every answer so far named its peers
	for {
		select {
		case m := <-msgs:
			if m.Header.Get("Status") == "503" { // no responders
				return nil, nil, &protocol.Error{Code: protocol.CodeUnavailable,
					Message: "nothing on the bus answers " + subject, Err: nats.ErrNoResponders}
			}
			var head answerHead
			if err := json.Unmarshal(m.Data, &head); err != nil {
				return nil, nil, protocol.Errorf(protocol.CodeInternal, "the reply on %s is not JSON: %v", subject, err)
			}
			if !head.OK {
				return nil, nil, &protocol.Error{Code: cmp.Or(head.Code, protocol.CodeInternal), Message: head.Error}
			}
			if answered[head.Node] && head.Node != "" {
				continue // a node's answer arrives once; a repeat adds nothing
			}
			answered[head.Node] = true
			answers = append(answers, answer{node: head.Node, data: m.Data})
			registry = registry && len(head.Peers) > 0
			for _, p := range head.Peers {
				expected[p] = true
			}
			if !registry || allIn(expected, answered) {
				// Without a registry no answer says whom to wait for:
				// the first answer is the reply, as on one node.
				return byNode(answers), nodeStates(answered, expected), nil
			}
		case err := <-refusals:
			return nil, nil, err
		case <-down:
			if len(answers) > 0 {
				return byNode(answers), nodeStates(answered, expected), nil
			}
			return nil, nil, &protocol.Error{Code: protocol.CodeUnavailable, Err: errGatherCut,
				Message: "the bus connection was lost while waiting for the answers on " + subject}
		case <-ctx.Done():
			if len(answers) > 0 {
				return byNode(answers), nodeStates(answered, expected), nil
			}
			return nil, nil, protocol.Errorf(protocol.CodeTimeout, "no answer on %s: %v", subject, ctx.Err())
		}
	}
}

// byNode sorts answers by their node's name, so that a reply is the
// same however the answers raced.
func byNode(answers []answer) []answer {
	slices.SortStableFunc(answers, func(a, b answer) int { return cmp.Compare(a.node, b.node) })
	return answers
}

func allIn(expected, answered map[string]bool) bool {
	for name := range expected {
		if !answered[name] {
			return false
		}
	}
	return true
}

// nodeStates lists every node that answered or that the registry names,
// by name.
func nodeStates(answered, expected map[string]bool) []protocol.NodeState {
	var out []protocol.NodeState
	for name := range answered {
		if name != "" {
			out = append(out, protocol.NodeState{Node: name, State: protocol.NodeAnswered})
		}
	}
	for name := range expected {
		if !answered[name] {
			out = append(out, protocol.NodeState{Node: name, State: protocol.NodeUnreachable})
		}
	}
	slices.SortFunc(out, func(a, b protocol.NodeState) int { return cmp.Compare(a.Node, b.Node) })
	return out
}

// gatherAs is gather with each answer decoded into a T.
func gatherAs[T any](ctx context.Context, c *Client, subject string) ([]T, []protocol.NodeState, error) {
	answers, nodes, err := c.gather(ctx, subject)
	if err != nil {
		return nil, nil, err
	}
	out, err := decodeAnswers[T](subject, answers)
	return out, nodes, err
}

// decodeAnswers decodes each answer into a fresh T.
func decodeAnswers[T any](subject string, answers []answer) ([]T, error) {
	out := make([]T, 0, len(answers))
	for _, a := range answers {
		var v T
		if err := json.Unmarshal(a.data, &v); err != nil {
			return nil, protocol.Errorf(protocol.CodeInternal, "the reply on %s: %v", subject, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// tabNodes remembers which node listed each tab last, so that a plan to
// a tab nothing answers for can name the node that is gone.
type tabNodes struct {
	mu     sync.Mutex
	byTab  map[string]string
	byNode map[string]map[string]bool // the tabs each node listed last
}

// listed records a node's tabs (all of them: those it no longer lists
// are forgotten).
func (tn *tabNodes) listed(node string, tabs []protocol.TabInfo) {
	if node == "" {
		return
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if tn.byTab == nil {
		tn.byTab, tn.byNode = map[string]string{}, map[string]map[string]bool{}
	}
	for tab := range tn.byNode[node] {
		if tn.byTab[tab] == node {
			delete(tn.byTab, tab)
		}
	}
	tn.byNode[node] = map[string]bool{}
	for _, t := range tabs {
		tn.add(cmp.Or(t.Node, node), t.Tab)
	}
}

// opened records one tab of a node; tn.mu is held by the caller or not
// needed (see seen).
func (tn *tabNodes) add(node, tab string) {
	if tn.byTab == nil {
		tn.byTab, tn.byNode = map[string]string{}, map[string]map[string]bool{}
	}
	tn.byTab[tab] = node
	if tn.byNode[node] == nil {
		tn.byNode[node] = map[string]bool{}
	}
	tn.byNode[node][tab] = true
}

// seen records a tab a reply named (a new tab, a session's).
func (tn *tabNodes) seen(t protocol.TabInfo) {
	if t.Node == "" || t.Tab == "" {
		return
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	tn.add(t.Node, t.Tab)
}

// nodeOf is the node that listed tab last, "" when none did.
func (tn *tabNodes) nodeOf(tab string) string {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	return tn.byTab[tab]
}

// errNoAnswer reports whether err is a request no one answered.
func errNoAnswer(err error) bool { return errors.Is(err, nats.ErrNoResponders) }
