package protocol

import (
	"strings"
	"time"
)

// Browser lifecycle on the bus (ADR-006): requests on
// <prefix>.browser.<profile>.<op>, answered by the node that runs the
// profile even while its tabs are busy; <prefix>.browser.status answers
// the status of every profile of a node.

// DefaultProfile is the node's managed browser profile.
const DefaultProfile = "default"

// Profile drivers, ProfileStatus.Driver.
const (
	DriverManaged = "managed" // launched and owned by the node
	DriverAttach  = "attach"  // a browser already running, reached by its DevTools URL
)

// ValidProfileName reports whether name can name a profile: letters,
// digits, '-' and '_' in dot-separated labels, so a domain is a name
// (per-domain profiles are named by their domain).
func ValidProfileName(name string) bool {
	return len(name) <= 253 && prefixPattern.MatchString(name)
}

// ProfileToken is a profile's name as one subject token: dots, which
// separate subject tokens, become '_' (a host name has no '_', so two
// domains never share a token).
func ProfileToken(name string) string { return strings.ReplaceAll(name, ".", "_") }

// CheckProfileName is ValidProfileName as a bad_request error.
func CheckProfileName(name string) error {
	if !ValidProfileName(name) {
		return badRequest("profile: %q is not a profile name (letters, digits, '-' and '_', labels separated by '.')", name)
	}
	return nil
}

// ProfileNotFound is the error for a profile a node does not have.
func ProfileNotFound(name string, have []string) error {
	return Errorf(CodeProfileNotFound, "no profile %q on this node (profiles: %s)", name, strings.Join(have, ", "))
}

// Lifecycle operations, the last token of their subject.
const (
	OpStatus   = "status"   // ProfileStatus of the profile; never an error
	OpLaunch   = "launch"   // start the browser; a no-op when it runs; answers the status
	OpClose    = "close"    // stop the browser and its tabs; answers the status
	OpPages    = "pages"    // the tabs (list_pages): a TabList
	OpNewTab   = "newtab"   // NewTabRequest in, TabReply out
	OpCloseTab = "closetab" // CloseTabRequest in, TabReply out
	OpConnect  = "connect"  // connect an attach profile to its browser; answers the status
)

// ProfileStatus says whether a profile's browser runs (ADR-006's status).
type ProfileStatus struct {
	Name      string `json:"name"`
	Node      string `json:"node,omitempty"` // the node that runs the profile
	Driver    string `json:"driver"`         // DriverManaged or DriverAttach
	Running   bool   `json:"running"`
	PageCount int    `json:"pageCount"`
	// Endpoint is the DevTools websocket of an attach profile's
	// browser while connected. A browser the node launched has none: it
	// speaks DevTools on a pipe only the node holds.
	Endpoint string `json:"endpoint,omitempty"`
	// Dir is a managed profile's directory; "" for a temporary one.
	Dir string `json:"dir,omitempty"`
	// Attach is where an attach profile finds its browser.
	Attach string `json:"attach,omitempty"`
	// Session is the id of the session running on this profile, if any.
	Session string `json:"session,omitempty"`
}

// StatusReply answers status, launch and close.
type StatusReply struct {
	OK       bool            `json:"ok"`
	Node     string          `json:"node,omitempty"`
	Profiles []ProfileStatus `json:"profiles"`
	// Peers and Nodes: see TabList.
	Peers []string    `json:"peers,omitempty"`
	Nodes []NodeState `json:"nodes,omitempty"`
	// Limits are the answering node's bounds, in a node's answer to
	// status (a gathered reply has each node's in Nodes).
	Limits *NodeLimits `json:"limits,omitempty"`
}

// NodeLimits are a node's bounds and how much of them is taken: past
// one, the node refuses with node_full.
type NodeLimits struct {
	Tabs    int `json:"tabs"`    // open and opening
	MaxTabs int `json:"maxTabs"` // 0: no bound
	// MaxStagedBytes bounds the files staged for upload, all tabs
	// together; 0: no bound.
	MaxStagedBytes int64 `json:"maxStagedBytes"`
}

// NewTabRequest opens a tab at URL (about:blank when empty).
type NewTabRequest struct {
	URL string `json:"url,omitempty"`
}

// CloseTabRequest closes a tab.
type CloseTabRequest struct {
	Tab string `json:"tab"`
}

// TabReply answers newtab and closetab with the tab concerned.
type TabReply struct {
	OK  bool    `json:"ok"`
	Tab TabInfo `json:"tab"`
	// Error and Code: a tab that opened, but whose page could not be
	// loaded (ok is false; the tab is open at Chromium's error page).
	Error string `json:"error,omitempty"`
	Code  Code   `json:"code,omitempty"`
}

// Sessions (the spec's browser sessions): a session runs the persistent
// profile of one domain, <profileDir>/<domain>/, created on first use.

// SessionStartRequest starts a session for Domain; its first tab opens at
// URL (about:blank when empty).
type SessionStartRequest struct {
	Domain string `json:"domain"`
	URL    string `json:"url,omitempty"`
}

// SessionStopRequest stops a session, saving its state.
type SessionStopRequest struct {
	Session string `json:"session"`
}

// SessionInfo describes a session.
type SessionInfo struct {
	Session string        `json:"session"`
	Node    string        `json:"node,omitempty"` // the node that runs it
	Domain  string        `json:"domain"`
	Profile ProfileStatus `json:"profile"`
	Tabs    []TabInfo     `json:"tabs"`
	// State is NodeUnreachable for a session whose node is not live (it
	// stopped or died): registered (SessionEntry), not running; it runs
	// again when its node comes back, or on another node that takes it
	// over at the next start of its domain. "" for a running session.
	State string `json:"state,omitempty"`
}

// SessionEntry is a session's value in Subjects.SessionsBucket, under its
// domain: the one session of that domain on the bus and the node that
// runs it. The node that starts the session creates it (a
// compare-and-set: of two nodes starting one domain at once, one wins
// and the other hands the start to it); stop deletes it; a node that
// stops or dies leaves it, so the session comes back when the node
// starts again.
type SessionEntry struct {
	Session string    `json:"session"`
	Domain  string    `json:"domain"`
	Node    string    `json:"node"`
	URL     string    `json:"url,omitempty"` // where its first tab opened; a restart opens it there again
	Started time.Time `json:"started"`
}

// SessionReply answers session start and stop.
type SessionReply struct {
	OK bool `json:"ok"`
	SessionInfo
	// Created: this start made the domain's profile directory (first use).
	Created bool `json:"created,omitempty"`
	// TakenFrom names the node that ran the session before, when this
	// start took it over because that node is gone: same id, but the
	// profile is this node's (the cookies stayed on the other's disk,
	// unless both share the profile directory).
	TakenFrom string `json:"takenFrom,omitempty"`
}

// SessionList answers session list.
type SessionList struct {
	OK       bool          `json:"ok"`
	Node     string        `json:"node,omitempty"`
	Sessions []SessionInfo `json:"sessions"`
	// Peers and Nodes: see TabList.
	Peers []string    `json:"peers,omitempty"`
	Nodes []NodeState `json:"nodes,omitempty"`
}
