package protocol

import (
	"encoding/json"
)

// PlanResult answers a plan. OK is true only when every action ran and
// succeeded. When the plan stopped early, Stopped says where and why;
// Results holds what the actions before it returned.
type PlanResult struct {
	OK       bool           `json:"ok"`
	Error    string         `json:"error,omitempty"`
	Code     Code           `json:"code,omitempty"`
	Version  int            `json:"version"`
	Tab      string         `json:"tab,omitempty"`
	PlanID   string         `json:"planId,omitempty"`
	Executed int            `json:"executed"`
	Sequence int64          `json:"sequence"` // the tab's current sequence when the plan finished
	Results  []ActionResult `json:"results"`
	Stopped  *Stop          `json:"stopped,omitempty"`
	// Duplicate: a plan with this id ran before (or is running); this is
	// its result, and it did not run again.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Stop describes the action a plan stopped at.
type Stop struct {
	Index    int    `json:"index"`
	Code     Code   `json:"code"`
	Expected *int64 `json:"expected,omitempty"` // the action's basedOnSequence (stale_frame)
	Current  int64  `json:"current"`            // the tab's sequence when the action was checked
}

// ActionResult is what one action returned. Sequence is the frame the
// action produced (0 for read-only actions and actions that failed before
// changing anything).
type ActionResult struct {
	Index    int             `json:"index"`
	Type     string          `json:"type"`
	OK       bool            `json:"ok"`
	Error    string          `json:"error,omitempty"`
	Code     Code            `json:"code,omitempty"`
	Sequence int64           `json:"sequence,omitempty"`
	URL      string          `json:"url,omitempty"`
	Title    string          `json:"title,omitempty"`
	Status   int             `json:"status,omitempty"` // the frame's (see Frame)
	Value    json.RawMessage `json:"value,omitempty"`
}

// ErrorReply is the reply to a request that failed as a whole (bad JSON,
// unknown tab, ...): {"ok": false, "error": ..., "code": ...}.
type ErrorReply struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Code    Code   `json:"code"`
	Version int    `json:"version"`
}

// NewErrorReply builds the reply for err.
func NewErrorReply(err error) ErrorReply {
	return ErrorReply{Error: err.Error(), Code: CodeOf(err), Version: Version}
}

// Err returns the plan's failure as an *Error, or nil when it succeeded.
func (r PlanResult) Err() error {
	if r.OK {
		return nil
	}
	return &Error{Code: r.Code, Message: r.Error}
}

// DecodePlanResult parses a plan reply (a PlanResult or an ErrorReply).
func DecodePlanResult(data []byte) (PlanResult, error) {
	var r PlanResult
	if err := json.Unmarshal(data, &r); err != nil {
		return PlanResult{}, Errorf(CodeInternal, "plan result: invalid JSON: %v", err)
	}
	return r, nil
}

// TabInfo describes a tab: its id, where it is and its current frame.
type TabInfo struct {
	Tab      string `json:"tab"`
	URL      string `json:"url"`
	Title    string `json:"title"`
	Sequence int64  `json:"sequence"`
	Node     string `json:"node,omitempty"`
	// Profile is the browser profile the tab runs in.
	Profile string `json:"profile,omitempty"`
	// Control: a person has the tab (see Control); absent while the
	// agents have it. Questions are its agents' open asks.
	Control   *Control   `json:"control,omitempty"`
	Questions []Question `json:"questions,omitempty"`
}

// TabList is a node's answer on the tabs subject (Node and Peers set),
// or the answers of every node gathered (Nodes set).
type TabList struct {
	OK   bool      `json:"ok"`
	Node string    `json:"node,omitempty"`
	Tabs []TabInfo `json:"tabs"`
	// Peers are the live nodes the answering node's registry names
	// (itself included), so a client gathering answers knows whom to
	// wait for and whom to report unreachable.
	Peers []string `json:"peers,omitempty"`
	// Nodes say which nodes answered, in a gathered reply.
	Nodes []NodeState `json:"nodes,omitempty"`
}
