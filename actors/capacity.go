package actors

import (
	"sync"

	"github.com/framebus/framebus/protocol"
)

// Capacity: a node takes at most NodeOptions.MaxTabs tabs (0: no bound).
// Every tab it opens on request (newtab, and the first tab of a launch)
// holds a place from before it is opened until it is listed, so two
// requests at once cannot both take the last place. Tabs a page opens
// itself (window.open, target=_blank) and those an attached browser
// already has are counted, never refused: refusing them would leave
// pages framebus does not see. The node's registry entry carries its
// count and bound (written again whenever the count changes), and
// placement reads them.

// capacity counts the places taken by tabs on the way.
type capacity struct {
	mu       sync.Mutex
	reserved int // tabs being opened, not listed yet
}

// tabCount is how many tabs the node has and is opening.
func (n *Node) tabCount() int {
	n.capacity.mu.Lock()
	reserved := n.capacity.reserved
	n.capacity.mu.Unlock()
	count := 0
	for _, p := range n.Profiles() {
		count += p.tabCount()
	}
	return count + reserved
}

// reserveTab takes a place for a tab about to be opened: node_full when
// the node has MaxTabs. release gives the place back, once the tab is
// listed or failed to open.
func (n *Node) reserveTab(what string) (release func(), err error) {
	n.capacity.mu.Lock()
	defer n.capacity.mu.Unlock()
	if max := n.opts.MaxTabs; max > 0 {
		count := n.capacity.reserved
		for _, p := range n.Profiles() {
			count += p.tabCount()
		}
		if count >= max {
			return nil, n.full(what, count)
		}
	}
	n.capacity.reserved++
	n.tabsChanged()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.capacity.mu.Lock()
			n.capacity.reserved--
			n.capacity.mu.Unlock()
			n.tabsChanged()
		})
	}, nil
}

// full is the node_full error of this node.
func (n *Node) full(what string, count int) error {
	return protocol.Errorf(protocol.CodeNodeFull, "%s: node %s is full: it has %d tabs and takes at most %d (serve --max-tabs, node.maxTabs); close a tab there, or ask another node",
		what, n.name, count, n.opts.MaxTabs)
}

// tabsChanged has the registry write the node's entry soon (see
// registry.touch).
func (n *Node) tabsChanged() {
	if n.registry != nil {
		n.registry.touch()
	}
	n.saveTabs()
}

// publishEntry writes the node's registry entry now (see
// registry.publish): before a request that opened or closed a tab is
// answered, so the next placement counts it.
func (n *Node) publishEntry() {
	if n.registry != nil {
		n.registry.publish()
	}
}

// tabCount is how many tabs the profile lists.
func (p *Profile) tabCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tabs)
}
