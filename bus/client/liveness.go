package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/framebus/framebus/protocol"
)

// Node liveness, as a client tells it: is the node that has a tab still
// there? A plan waiting for its answer and a watch ask it now and then.
//
// A node answers its default profile's status from its connection,
// however busy its tabs are: an answer says it is live, and "no
// responders" says at once that it is gone. A frozen node (SIGSTOP, a
// long GC pause, a swapped VM, a partition) is neither: its
// subscriptions stay, so a request to it just gets no answer. Then the
// node registry decides, the same registry the listings use: every node
// renews its entry every protocol.NodeHeartbeat, the bucket forgets an
// entry not renewed for protocol.NodeTTL, and every node's answer to a
// gathered request names the live nodes it knows (Peers, which drop an
// entry unseen for NodeTTL even before the bucket's marker arrives). So
// the client gathers the nodes' status: a live node's answer that does
// not name the silent node says the registry forgot it. Agents and
// observers may not read the registry's bucket themselves (it holds
// hosts, process ids and memory, see protocol.HistoryAPI), and need not:
// the other nodes read it for them.
//
// When no node answers at all (a lone node frozen; its process is often
// the very NATS server this client is connected to, whose connection then
// stalls without a word), nobody can vouch for it: a node that has
// answered nothing for NodeTTL is taken as not live, as the registry
// would take it. Either way the node is reported node_unavailable,
// wrapping ErrNodeNotLive: it may come back (a frozen process resumes),
// unlike one that nothing answers for.

// ErrNodeNotLive is in the error (node_unavailable) for a node that has
// lost its liveness without being gone: the registry forgot it, or it
// answered nothing for protocol.NodeTTL. It may come back.
var ErrNodeNotLive = errors.New("the node lost its liveness")

// Bounds of one liveness check: the node's own answer, then the others'.
const (
	liveProbeWait = 300 * time.Millisecond
	liveVouchWait = 750 * time.Millisecond
	// livePingWait bounds the ping of this client's own server that
	// says, in the message, whether the bus itself still answers.
	livePingWait = 250 * time.Millisecond
)

// liveness follows one node for a plan or a watch, across checks.
type liveness struct {
	node string
	what string // what waits on the node, for messages ("tab T")
	// silentSince is when the first probe the node left unanswered was
	// sent; zero while it answers.
	silentSince time.Time
	// server is the server this client was connected to at the last
	// check: a node whose embedded server it is takes the connection
	// with it when it stops.
	server string
	// judgeCutOff: a connection down for NodeTTL counts as the node's
	// silence (a watch), instead of leaving the node unjudged (a plan).
	judgeCutOff bool
}

// liveState is what one check found.
type liveState int

const (
	nodeAnswered  liveState = iota // it answered
	nodeWaiting                    // silent, but the registry still names it, or this client cannot tell yet
	nodeNotLive                    // the check's error says why
	nodeUnvouched                  // (vouch) silent, and no node answered for it
)

// checkNode asks once whether l.node is live (see above). It returns
// nodeNotLive with a node_unavailable error when it is gone or lost its
// liveness.
func (c *Client) checkNode(ctx context.Context, l *liveness) (liveState, error) {
	up, _, closed := c.state()
	if closed {
		return nodeWaiting, nil // the caller's own wait ends with the connection
	}
	select {
	case <-up:
		if name := c.nc.ConnectedServerName(); name != "" {
			l.server = name
		}
	default:
		// Disconnected: nothing can be asked. A plan waits for the
		// connection (it is sent again once it is back); a watch
		// (judgeCutOff) counts the time without one as the node's
		// silence: a client of a cluster reconnects to another member
		// within a moment, so a connection down for NodeTTL is a bus
		// gone from here, often with the node that served it.
		if !l.judgeCutOff {
			return nodeWaiting, nil
		}
		l.silent(time.Now())
		d := time.Since(l.silentSince)
		switch {
		case d < protocol.NodeTTL:
			return nodeWaiting, nil
		case l.server == l.node:
			return nodeNotLive, c.notLive(l, fmt.Sprintf("this client's connection to its bus server, the node's own, has been down for %s", d.Round(100*time.Millisecond)))
		}
		return nodeNotLive, c.notLive(l, fmt.Sprintf("this client has been cut off from the bus for %s (its server was %s): it cannot tell whether the node is live", d.Round(100*time.Millisecond), l.server))
	}
	sent := time.Now()
	pctx, cancel := context.WithTimeout(ctx, liveProbeWait)
	err := c.Request(pctx, c.subj.NodeProfile(l.node, protocol.DefaultProfile, protocol.OpStatus), nil, nil)
	cancel()
	switch {
	case ctx.Err() != nil:
		return nodeWaiting, nil
	case errNoAnswer(err):
		return nodeNotLive, c.nodeGone(l.node, l.what, err)
	case answered(err):
		l.silentSince = time.Time{}
		return nodeAnswered, nil
	}
	l.silent(sent)
	// Through a server that answers not even a ping, no node can vouch
	// for it: the silence decides, sooner.
	serverSilent := c.serverSilent(ctx)
	if !serverSilent {
		if state, err := c.vouch(ctx, l); state != nodeUnvouched {
			return state, err
		}
	}
	if d := time.Since(l.silentSince); d >= protocol.NodeTTL {
		why := fmt.Sprintf("it has answered nothing for %s, and no node answered for it", d.Round(100*time.Millisecond))
		switch {
		case serverSilent && l.server == l.node:
			why += "; nor does this client's bus server, the node's own process"
		case serverSilent:
			why += fmt.Sprintf("; nor does this client's bus server (%s)", l.server)
		}
		return nodeNotLive, c.notLive(l, why)
	}
	return nodeWaiting, nil
}

// learnNode finds tab's node for l when it is not known yet: as a
// listing named it last, else as its last frame in the history does
// (bounded: the history may be served by the silent node's own process).
// While it is unknown, only the bus can be judged: a server that answers
// not even a ping for NodeTTL (a lone node's frozen process is often this
// client's server) is unavailable.
func (c *Client) learnNode(ctx context.Context, l *liveness, tab string) (liveState, error) {
	if l.node != "" {
		return nodeAnswered, nil
	}
	if l.node = c.tabNodes.nodeOf(tab); l.node != "" {
		return nodeAnswered, nil
	}
	if _, down, closed := c.state(); closed || isClosed(down) {
		return nodeWaiting, nil // a plan waits for the connection
	}
	sent := time.Now()
	pctx, cancel := context.WithTimeout(ctx, liveProbeWait)
	err := c.nc.FlushWithContext(pctx)
	cancel()
	if err == nil {
		l.silentSince = time.Time{}
		lctx, cancel := context.WithTimeout(ctx, goneLookup)
		l.node = c.historyNodeOf(lctx, tab)
		cancel()
		return nodeAnswered, nil
	}
	if ctx.Err() != nil {
		return nodeWaiting, nil
	}
	l.silent(sent)
	d := time.Since(l.silentSince)
	if d < protocol.NodeTTL {
		return nodeWaiting, nil
	}
	return nodeNotLive, &protocol.Error{Code: protocol.CodeUnavailable, Err: ErrNodeNotLive,
		Message: fmt.Sprintf("%s: this client's bus server (%s) has answered nothing, not even a ping, for %s: it stopped, froze or is cut off, and so is the tab's node if it is that server's own process (a lone node's is). If it comes back, so do its tabs", l.what, c.nc.ConnectedServerName(), d.Round(100*time.Millisecond))}
}

// answered reports whether a request's error is the node's own answer
// (none, or an error it replied), not its silence.
func answered(err error) bool {
	switch protocol.CodeOf(err) {
	case "":
		return err == nil
	case protocol.CodeTimeout, protocol.CodeUnavailable:
		return false
	}
	return true
}

// silent notes a probe sent at sent that the node left unanswered.
func (l *liveness) silent(sent time.Time) {
	if l.silentSince.IsZero() {
		l.silentSince = sent
	}
}

// vouch gathers the nodes' status: the node's own answer, a live node
// naming it among its peers (the registry still has it), or live nodes
// that do not (the registry forgot it). With no answer at all, or none
// naming peers (a bus without a registry), it is up to the silence.
func (c *Client) vouch(ctx context.Context, l *liveness) (liveState, error) {
	vctx, cancel := context.WithTimeout(ctx, liveVouchWait)
	answers, _, err := c.gather(vctx, c.subj.BrowserStatus())
	cancel()
	switch {
	case ctx.Err() != nil:
		return nodeWaiting, nil
	case errNoAnswer(err):
		return nodeNotLive, c.nodeGone(l.node, l.what, err) // no node at all
	case protocol.CodeOf(err) == protocol.CodeTimeout:
		return nodeUnvouched, nil
	case err != nil:
		return nodeWaiting, nil // this client cannot tell
	}
	registry := false
	var live []string
	for _, a := range answers {
		if a.node == l.node {
			l.silentSince = time.Time{}
			return nodeAnswered, nil
		}
		var head answerHead
		if json.Unmarshal(a.data, &head) != nil || len(head.Peers) == 0 {
			continue
		}
		registry = true
		if slices.Contains(head.Peers, l.node) {
			return nodeWaiting, nil
		}
		live = append(live, a.node)
	}
	if !registry {
		return nodeUnvouched, nil
	}
	return nodeNotLive, c.notLive(l, fmt.Sprintf("the node registry no longer has it (not renewed for %s), say the live nodes %v", protocol.NodeTTL, live))
}

// serverSilent reports whether this client's own server leaves a ping
// unanswered: then the bus itself (often the node's own process) is what
// is silent.
func (c *Client) serverSilent(ctx context.Context) bool {
	pctx, cancel := context.WithTimeout(ctx, livePingWait)
	defer cancel()
	return c.nc.FlushWithContext(pctx) != nil && ctx.Err() == nil
}

// notLive is node_unavailable for a node that lost its liveness (why).
func (c *Client) notLive(l *liveness, why string) error {
	return &protocol.Error{Code: protocol.CodeNodeUnavailable, Err: ErrNodeNotLive,
		Message: fmt.Sprintf("%s: node %s lost its liveness: %s. It stopped, died, froze or is cut off; if it comes back, so do its tabs", l.what, l.node, why)}
}

// cancelLeftBehind sends a cancel of the plan in data to tab, without
// waiting for an answer, and returns err saying so. A node that lost its
// liveness may come back (a frozen process resumes) and take the plan
// the client was told failed: it takes the cancel after it, which makes
// the plan answer cancelled when its turn comes, or cuts it short if it
// has just started (and the node refuses what a stall held back, see
// actors/stall.go). A plan the tab was running when the node went silent
// may have run all the same (the browser does not freeze with the
// node): the error says so, as it does for a node that died.
func (c *Client) cancelLeftBehind(tab string, data []byte, err error) error {
	var plan struct {
		ID string `json:"id"`
	}
	var perr *protocol.Error
	if json.Unmarshal(data, &plan) != nil || plan.ID == "" || !errors.As(err, &perr) {
		return err
	}
	req, _ := protocol.Marshal(protocol.CancelRequest{PlanID: plan.ID})
	if c.nc.PublishRequest(c.subj.TabCancel(tab), c.nc.NewInbox(), req) != nil {
		return err
	}
	out := *perr
	out.Message += fmt.Sprintf(". Plan %s may have run, in whole or in part, if it reached the tab before the node went silent: its frames name plan %s (framebus frames --tab %s). A cancel of it waits for the node, so nothing more of it starts if it comes back", plan.ID, plan.ID, tab)
	return &out
}
