package actors

import (
	"sync"

	"github.com/framebus/framebus/protocol"
)

// Capacity: a node takes at most NodeOptions.MaxTabs tabs; 0 takes what
// its machine holds (DefaultMaxTabs), a negative number sets no bound.
// Every tab it opens on request (newtab, and the first tab of a launch)
// holds a place from before it is opened until it is listed, so two
// requests at once cannot both take the last place. Tabs a page opens
// itself (window.open, target=_blank) and those an attached browser
// already has are counted, never refused: refusing them would leave
// pages framebus does not see. The node's registry entry carries its
// count and bound (written again whenever the count changes), and
// placement reads them.

// Without a bound given, a node takes the tabs its machine holds: an
// agent that opened 25 tabs took Chromium from 1.45 GB to 5.4 GB (about
// 160 MB a tab), and nothing stopped it.
const (
	// TabMemory is the memory budgeted for a tab: above the 160 MB
	// measured on about:blank, for heavier pages.
	TabMemory = 256 << 20
	// TabsPerCore bounds the tabs by the CPUs their renderers share.
	TabsPerCore = 8
	// MinDefaultTabs is the least a node takes by default, whatever its
	// machine.
	MinDefaultTabs = 2
)

// DefaultMaxTabs is how many tabs a node on m takes when it is given no
// bound: half the available memory at TabMemory a tab, at most
// TabsPerCore a core, at least MinDefaultTabs.
func (m Machine) DefaultMaxTabs() int {
	n := TabsPerCore * max(1, m.Cores)
	if m.MemAvailable > 0 {
		n = min(n, int(m.MemAvailable/2/TabMemory))
	}
	return max(MinDefaultTabs, n)
}

// maxTabs is the bound of a node given asked (NodeOptions.MaxTabs) on m:
// 0 for none.
func maxTabs(asked int, m Machine) int {
	switch {
	case asked < 0:
		return 0
	case asked == 0:
		return m.DefaultMaxTabs()
	}
	return asked
}

// MaxTabs is how many tabs the node takes, 0 for no bound.
func (n *Node) MaxTabs() int { return n.opts.MaxTabs }

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
	return protocol.Errorf(protocol.CodeNodeFull, "%s: node %s is full: it has %d tabs and takes at most %d (serve --max-tabs, node.maxTabs; the default is derived from the machine's memory and cores); close a tab there, or ask another node",
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
