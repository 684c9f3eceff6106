package actors

import (
	"cmp"
	"errors"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/protocol"
)

// Placement: a request that creates something (a tab, a browser, a
// session) without naming a node reaches one node of a queue group; that
// node reads the live nodes' registry entries (their heartbeats) and
// hands the request to the node with the most room: under its MaxTabs,
// least tabs, then most memory available. Every node decides from the
// same entries; there is no coordinator.

// forwardTimeout bounds a request handed to another node: as long as the
// longest thing it may do (launching a browser).
const forwardTimeout = lifecycleTimeout

// placeNew names the node that should create a thing of this profile:
// this node when it has no registry (a bus without JetStream) or when no
// other live node has more room.
func (n *Node) placeNew(profile string) string {
	if n.registry == nil {
		return n.name
	}
	entries := n.registry.Entries()
	entries[n.name] = n.registry.entry() // its own, as of now
	var candidates []protocol.NodeEntry
	for _, e := range entries {
		if e.MaxTabs > 0 && e.Tabs >= e.MaxTabs {
			continue
		}
		candidates = append(candidates, e)
	}
	if len(candidates) == 0 {
		return n.name
	}
	best := slices.MinFunc(candidates, func(a, b protocol.NodeEntry) int {
		return cmp.Or(cmp.Compare(a.Tabs, b.Tabs), cmp.Compare(b.MemAvailable, a.MemAvailable), cmp.Compare(a.Node, b.Node))
	})
	return best.Node
}

// forward hands a request to another node's subject and answers with its
// reply: node_unavailable when nothing answers there.
func (n *Node) forward(m micro.Request, subject, node, what string) {
	msg := nats.NewMsg(subject)
	msg.Data = m.Data()
	msg.Header = nats.Header(m.Headers())
	reply, err := n.nc.RequestMsg(msg, forwardTimeout)
	switch {
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
