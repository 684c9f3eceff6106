package client

import (
	"context"
	"time"
)

// A watch of one tab checks its node's liveness (liveness.go) as a
// waiting plan does, less often while the node answers: a watch may run
// for days. A check runs off the watch's goroutine, one at a time, so
// frames keep coming while it waits for its answers.
const watchProbeEvery = time.Second

// nodeWatch checks the liveness of a watched tab's node for its follower.
// Only the follower's goroutine uses it; a running check owns l until
// its result is taken.
type nodeWatch struct {
	f        *follower
	ctx      context.Context
	l        *liveness
	timer    *time.Timer // nil: nothing to check (a watch of every tab)
	results  chan liveResult
	checking bool
	lost     bool // EventNodeLost was reported, and no answer since
}

// liveResult is one check's result.
type liveResult struct {
	state liveState
	err   error
}

func (f *follower) newNodeWatch(ctx context.Context) *nodeWatch {
	nw := &nodeWatch{f: f, ctx: ctx, results: make(chan liveResult, 1),
		l: &liveness{what: "the watch of tab " + f.spec.tab, server: f.c.nc.ConnectedServerName(), judgeCutOff: true}}
	if f.spec.tab != "" {
		nw.timer = time.NewTimer(watchProbeEvery)
	}
	return nw
}

func (nw *nodeWatch) stop() {
	if nw.timer != nil {
		nw.timer.Stop()
	}
}

// due is when the next check is due; nil while one runs or for none.
func (nw *nodeWatch) due() <-chan time.Time {
	if nw.timer == nil || nw.checking {
		return nil
	}
	return nw.timer.C
}

// start checks node (the tab's, as its frames name it; "": as a listing
// named it last), unless no node is known yet.
func (nw *nodeWatch) start(node string) {
	if node == "" {
		node = nw.f.c.tabNodes.nodeOf(nw.f.spec.tab)
	}
	if node == "" {
		nw.timer.Reset(watchProbeEvery)
		return
	}
	if node != nw.l.node {
		nw.l = &liveness{node: node, what: nw.l.what, server: nw.l.server, judgeCutOff: true}
	}
	nw.checking = true
	c, ctx, l := nw.f.c, nw.ctx, nw.l
	go func() {
		state, err := c.checkNode(ctx, l)
		nw.results <- liveResult{state, err} // room for one: never blocks
	}()
}

// took handles a check's result: the error that ends the watch (its node
// is not live and it does not keep waiting), or back when a node that was
// lost answers again.
func (nw *nodeWatch) took(r liveResult) (back bool, err error) {
	nw.checking = false
	next := watchProbeEvery
	tab, node := nw.f.spec.tab, nw.l.node
	switch r.state {
	case nodeNotLive:
		if !nw.lost {
			nw.lost = true
			nw.f.c.emit(Event{Kind: EventNodeLost, Tab: tab, Node: node, Err: r.err})
		}
		if !nw.f.spec.keepWaiting {
			return false, r.err
		}
	case nodeAnswered:
		if nw.lost {
			nw.lost, back = false, true
			nw.f.c.emit(Event{Kind: EventNodeBack, Tab: tab, Node: node})
		}
	case nodeWaiting:
		next = nodeProbeSilent
	}
	nw.timer.Reset(next)
	return back, nil
}
