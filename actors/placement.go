package actors

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/protocol"
)

// Placement: a request that creates something (a tab, a browser, a
// session) without naming a node reaches one node of a queue group; that
// node reads the live nodes' registry entries (their heartbeats) and
// hands the request to the node with the most room: under its MaxTabs,
// least tabs, then most memory available. Every node decides from the
// same entries; there is no coordinator. Two placements at once may
// choose the same node: the node itself holds its bound (reserveTab) and
// answers node_full past it, and the placing node then tries the next
// best.
//
// A request on a profile's shared subject that acts on what one node has
// (closetab: a tab; close: a running browser) goes to the node that has
// it: the taker asks the profile's nodes (pages, status: every node that
// has the profile answers those) and hands it there.

// forwardTimeout bounds a request handed to another node: as long as the
// longest thing it may do (launching a browser).
const forwardTimeout = lifecycleTimeout

// askWait bounds the wait for the answers of the nodes that have a
// profile (to find which has a tab or runs its browser): a live node
// answers those from its connection at once.
const askWait = 2 * time.Second

// placeNew names the node that should create a thing of this profile:
// this node when it has no registry (a bus without JetStream) or when no
// other live node has more room. Only the nodes that have the profile are
// candidates, unless none has it (a session's profile, made where the
// session starts).
func (n *Node) placeNew(profile string) string {
	ranked, _ := n.rankNodes(profile)
	if len(ranked) == 0 {
		return n.name
	}
	return ranked[0].Node
}

// rankNodes are the live nodes that may take a new thing of profile,
// best first (least tabs, then most memory available, then by name), and
// those of them that are full (at their MaxTabs). The entries are read
// from the bucket now (registry.Current) over the watch's, this node's as
// of now.
func (n *Node) rankNodes(profile string) (ranked, full []protocol.NodeEntry) {
	entries := map[string]protocol.NodeEntry{}
	if n.registry != nil {
		// The watch's entries, each replaced by the bucket's as of now:
		// the read's end marker may come before an entry rewritten while
		// it was being read (about 1 read in 50 missed a live node so),
		// and on a loaded machine the watch may have taken a live node
		// whose writes came late for gone.
		entries = n.registry.Entries()
		current, err := n.registry.Current(context.Background())
		if err != nil {
			n.log.Warn().Err(err).Msg("placement: the registry's entries as the watch last saw them")
		}
		maps.Copy(entries, current)
	}
	entries[n.name] = n.ownEntry() // as of now
	all := slices.Collect(maps.Values(entries))
	if profile != "" {
		having := slices.DeleteFunc(slices.Clone(all), func(e protocol.NodeEntry) bool { return !slices.Contains(e.Profiles, profile) })
		if len(having) > 0 {
			all = having
		}
	}
	for _, e := range all {
		if e.MaxTabs > 0 && e.Tabs >= e.MaxTabs {
			full = append(full, e)
		} else {
			ranked = append(ranked, e)
		}
	}
	slices.SortFunc(ranked, func(a, b protocol.NodeEntry) int {
		return cmp.Or(cmp.Compare(a.Tabs, b.Tabs), cmp.Compare(b.MemAvailable, a.MemAvailable), cmp.Compare(a.Node, b.Node))
	})
	slices.SortFunc(full, func(a, b protocol.NodeEntry) int { return cmp.Compare(a.Node, b.Node) })
	return ranked, full
}

// place answers a request on the profile's shared subject that opens a
// tab (newtab, launch): the best node by rankNodes does it, this one by
// local or another on its own subject; a node that answers node_full (it
// filled up since its entry was written) or no longer answers at all
// passes it to the next best. When every node is full the answer is
// node_full naming them.
func (p *Profile) place(m micro.Request, op string, local func(data []byte) any) {
	n := p.node
	what := fmt.Sprintf("%s on profile %s", op, p.name)
	ranked, full := n.rankNodes(p.name)
	for _, e := range ranked {
		if e.Node == n.name {
			reply := local(m.Data())
			if er, ok := reply.(protocol.ErrorReply); ok && er.Code == protocol.CodeNodeFull {
				full = append(full, n.ownEntry())
				continue
			}
			respond(m, reply, p.log)
			return
		}
		msg := nats.NewMsg(n.subj.NodeProfile(e.Node, p.name, op))
		msg.Data, msg.Header = m.Data(), nats.Header(m.Headers())
		reply, err := n.nc.RequestMsg(msg, forwardTimeout)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			p.log.Info().Str("to", e.Node).Str("op", op).Msg("placement: the chosen node does not answer (gone); trying the next")
			continue
		case errors.Is(err, nats.ErrTimeout):
			// It may still be doing it: another node must not do it twice.
			respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeTimeout, "%s: node %s took it and did not answer within %s", what, e.Node, forwardTimeout)), p.log)
			return
		case err != nil:
			respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeUnavailable, "%s: handing it to node %s: %v", what, e.Node, err)), p.log)
			return
		}
		var head struct {
			Code protocol.Code `json:"code"`
		}
		if json.Unmarshal(reply.Data, &head) == nil && head.Code == protocol.CodeNodeFull {
			e.Tabs = max(e.Tabs, e.MaxTabs)
			full = append(full, e)
			continue
		}
		if err := m.Respond(reply.Data); err != nil {
			p.log.Warn().Err(err).Msg("send forwarded reply")
		}
		return
	}
	respond(m, protocol.NewErrorReply(allFull(what, p.name, full)), p.log)
}

// allFull is the node_full error when no node that has the profile has
// room: each with its tabs and its bound.
func allFull(what, profile string, full []protocol.NodeEntry) error {
	var each []string
	for _, e := range full {
		each = append(each, fmt.Sprintf("%s %d/%d", e.Node, e.Tabs, e.MaxTabs))
	}
	slices.Sort(each)
	each = slices.Compact(each)
	return protocol.Errorf(protocol.CodeNodeFull, "%s: every node that has profile %q is full (tabs/max: %s); close a tab, or start a node with room (serve --max-tabs N, node.maxTabs; -1: no bound)",
		what, profile, strings.Join(each, ", "))
}

// forward hands a request to another node's subject and answers with its
// reply: node_unavailable when nothing answers there.
func (n *Node) forward(m micro.Request, subject, node, what string) {
	n.forwardOr(m, subject, node, what, nil)
}

// forwardOr is forward, but when nothing answers at node (no
// responders: a node the registry still lists that is gone) instead runs
// here, unless here is nil.
func (n *Node) forwardOr(m micro.Request, subject, node, what string, here func()) {
	msg := nats.NewMsg(subject)
	msg.Data = m.Data()
	msg.Header = nats.Header(m.Headers())
	reply, err := n.nc.RequestMsg(msg, forwardTimeout)
	switch {
	case here != nil && errors.Is(err, nats.ErrNoResponders):
		n.log.Info().Str("node", node).Msg(what + ": the node placement chose is gone; carried out here")
		here()
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, nats.ErrTimeout):
		respond(m, protocol.NewErrorReply(protocol.NodeUnavailable(node, what)), n.log)
	case err != nil:
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeUnavailable, "%s: handing it to node %s: %v", what, node, err)), n.log)
	default:
		if err := m.Respond(reply.Data); err != nil {
			n.log.Warn().Err(err).Msg("send forwarded reply")
		}
	}
}

// askProfileNodes sends a request on the profile's shared subject op
// (one every node that has the profile answers: pages, status) and hands
// each answer but this node's to each until it returns true, or every
// other live node that has the profile answered, or askWait passed.
func (p *Profile) askProfileNodes(op string, each func(node string, data []byte) bool) error {
	n := p.node
	expected := map[string]bool{}
	if n.registry != nil {
		for name, e := range n.registry.Entries() {
			if name != n.name && slices.Contains(e.Profiles, p.name) {
				expected[name] = true
			}
		}
	}
	if len(expected) == 0 {
		return nil
	}
	inbox := n.nc.NewInbox()
	answers := make(chan *nats.Msg, 16)
	sub, err := n.nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := n.nc.PublishRequest(n.subj.Profile(p.name, op), inbox, nil); err != nil {
		return err
	}
	deadline := time.After(askWait)
	for len(expected) > 0 {
		select {
		case a := <-answers:
			var head struct {
				Node string `json:"node"`
			}
			if json.Unmarshal(a.Data, &head) != nil || head.Node == n.name || head.Node == "" {
				continue
			}
			delete(expected, head.Node)
			if each(head.Node, a.Data) {
				return nil
			}
		case <-deadline:
			return nil
		}
	}
	return nil
}

// closeTabWhereItIs answers closetab on the profile's shared subject: this
// node closes its own tab; another node's is handed to that node (the one
// whose pages list it); a tab no node lists is tab_not_found.
func (p *Profile) closeTabWhereItIs(m micro.Request) {
	var req protocol.CloseTabRequest
	if err := protocol.DecodeRequest(m.Data(), "closetab", &req); err != nil || req.Tab == "" || p.Tab(req.Tab) != nil {
		respond(m, p.closeTab(m.Data()), p.log) // its error, or this node's tab
		return
	}
	holder := ""
	err := p.askProfileNodes(protocol.OpPages, func(node string, data []byte) bool {
		var list protocol.TabList
		if json.Unmarshal(data, &list) == nil && slices.ContainsFunc(list.Tabs, func(t protocol.TabInfo) bool { return t.Tab == req.Tab }) {
			holder = node
			return true
		}
		return false
	})
	switch {
	case err != nil:
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeUnavailable, "closetab: ask the nodes of profile %s: %v", p.name, err)), p.log)
	case holder == "":
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeTabNotFound, "no tab %s in profile %s on any node (%s)", req.Tab, p.name, strings.Join(p.node.Peers(), ", "))), p.log)
	default:
		p.node.forward(m, p.node.subj.NodeProfile(holder, p.name, protocol.OpCloseTab), holder, "tab "+req.Tab)
	}
}

// closeWhereRunning answers close on the profile's shared subject: the
// node that runs the profile's browser closes it. When several run it the
// request is ambiguous (bad_request naming them: say which with --node);
// when none does, closing is a no-op here.
func (p *Profile) closeWhereRunning(m micro.Request) {
	var running []string
	if p.Browser() != nil {
		running = append(running, p.node.name)
	}
	err := p.askProfileNodes(protocol.OpStatus, func(node string, data []byte) bool {
		var st protocol.StatusReply
		if json.Unmarshal(data, &st) == nil && slices.ContainsFunc(st.Profiles, func(ps protocol.ProfileStatus) bool { return ps.Name == p.name && ps.Running }) {
			running = append(running, node)
		}
		return false
	})
	switch {
	case err != nil:
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeUnavailable, "close: ask the nodes of profile %s: %v", p.name, err)), p.log)
	case len(running) > 1:
		slices.Sort(running)
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeBadRequest, "close: profile %s runs on nodes %s: say which to close with --node NAME (node.<node>.browser.%s.close)",
			p.name, strings.Join(running, ", "), protocol.ProfileToken(p.name))), p.log)
	case len(running) == 1 && running[0] != p.node.name:
		p.node.forward(m, p.node.subj.NodeProfile(running[0], p.name, protocol.OpClose), running[0], "profile "+p.name)
	default:
		p.answerClose(m)
	}
}
