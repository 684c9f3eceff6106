package protocol

import (
	"time"
)

// Nodes: every node has a name, unique among the live nodes of a bus
// (one subject token), which every tab listing, status, session and frame
// carries. A node holds an entry in the JetStream key-value bucket
// Subjects.NodesBucket under its name while it runs: it creates it (a
// compare-and-set, so of two nodes starting with one name only one wins),
// renews it every NodeHeartbeat, and deletes it when it stops; the bucket
// forgets an entry not renewed for NodeTTL, so a node that died without
// stopping (kill -9, a lost machine) is gone from it within NodeTTL.

// Liveness timing of the nodes' registry entries.
const (
	NodeHeartbeat = time.Second
	NodeTTL       = 3 * time.Second
)

// MaxNodeName is the longest node name.
const MaxNodeName = 64

// ValidNodeName reports whether name can name a node: one subject token
// (letters, digits, '-' and '_'), at most MaxNodeName long.
func ValidNodeName(name string) bool {
	return len(name) <= MaxNodeName && tokenPattern.MatchString(name)
}

// CheckNodeName is ValidNodeName as a bad_request error.
func CheckNodeName(name string) error {
	if !ValidNodeName(name) {
		return badRequest("node: %q is not a node name (letters, digits, '-' and '_', at most %d)", name, MaxNodeName)
	}
	return nil
}

// NodeEntry is a node's value in the registry (Subjects.NodesBucket): who
// it is, and what it has room for (for placement).
type NodeEntry struct {
	Node    string    `json:"node"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Prefix  string    `json:"prefix"`
	Started time.Time `json:"started"`
	// Tabs is how many tabs the node has, in all its profiles; MaxTabs
	// how many it takes (0: no bound).
	Tabs    int `json:"tabs"`
	MaxTabs int `json:"maxTabs,omitempty"`
	// Profiles are the node's profiles by name (placement takes a tab
	// of a profile only to a node that has it).
	Profiles []string `json:"profiles,omitempty"`
	// MemAvailable is the memory the node's machine has available, in
	// bytes (Linux's MemAvailable; 0 when unknown).
	MemAvailable int64 `json:"memAvailable,omitempty"`
}

// States of a node in an answer gathered from every node (NodeState).
const (
	NodeAnswered    = "answered"    // its answer is in the reply
	NodeUnreachable = "unreachable" // it is in the registry but did not answer in time
)

// NodeState says whether a node answered a request every node answers
// (tabs, status, session list). Every node the registry names is in the
// reply: one that did not answer is there as NodeUnreachable, never left
// out.
type NodeState struct {
	Node  string `json:"node"`
	State string `json:"state"`
	Host  string `json:"host,omitempty"`
	PID   int    `json:"pid,omitempty"`
	// Limits are the node's bounds, in a gathered status.
	Limits *NodeLimits `json:"limits,omitempty"`
}

// NodeUnavailable is the error for a request to a node that does not
// answer (it died or stopped): node_unavailable, naming it.
func NodeUnavailable(node, what string) *Error {
	return Errorf(CodeNodeUnavailable, "%s: node %s is not answering (it stopped or died); its tabs and sessions are gone with it", what, node)
}
