package protocol

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// DefaultPrefix is the first token of every framebus subject.
const DefaultPrefix = "framebus"

// Subjects names the NATS subjects of one framebus deployment. The scheme:
//
//	<prefix>.tab.<tab>.frame        frames of a tab (publish)
//	<prefix>.history.tab.<tab>.frame the same frames, to the frame stream (the node's account only)
//	<prefix>.tab.<tab>.plan         plans for a tab (request/reply)
//	<prefix>.tab.<tab>.event.<kind> page events of a tab (publish)
//	<prefix>.tab.<tab>.stage        a client's files for a tab's upload (request/reply; see StageRequest)
//	<prefix>.tabs                   list the tabs on the bus (request/reply, every node answers)
//	<prefix>.browser.status         every profile's status (request/reply)
//	<prefix>.browser.<profile>.<op> a profile's lifecycle on any node that has it (request/reply; see Op*)
//	<prefix>.node.<node>.browser.<profile>.<op> a profile's lifecycle on one node (request/reply)
//	<prefix>.session.start          start a domain's session (request/reply, one node of a queue group, which places it)
//	<prefix>.node.<node>.session.start start a domain's session on one node (request/reply)
//	<prefix>.session.list           the sessions (request/reply)
//	<prefix>.session.<id>.stop      stop a session (request/reply)
type Subjects struct {
	Prefix string
}

// DefaultSubjects uses DefaultPrefix.
var DefaultSubjects = Subjects{Prefix: DefaultPrefix}

// NewSubjects checks prefix (dot-separated subject-safe tokens) and returns
// the scheme under it; "" means DefaultPrefix.
func NewSubjects(prefix string) (Subjects, error) {
	if prefix == "" {
		return DefaultSubjects, nil
	}
	if !prefixPattern.MatchString(prefix) {
		return Subjects{}, badRequest("prefix: %q is not a subject prefix (letters, digits, '-' and '_', tokens separated by '.')", prefix)
	}
	return Subjects{Prefix: prefix}, nil
}

var (
	tokenPattern  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	prefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
)

// MaxTabIDLength bounds a tab id: Chromium's are 32 characters, and a
// subject longer than the server's control line ends the connection
// that sends it.
const MaxTabIDLength = 128

// ValidTabID reports whether id can be one token of a subject.
func ValidTabID(id string) bool { return len(id) <= MaxTabIDLength && tokenPattern.MatchString(id) }

// CheckTabID is bad_request for an id that is no tab's.
func CheckTabID(id string) error {
	if !ValidTabID(id) {
		return badRequest("tab: %q is not a tab id (letters, digits, '-' and '_', at most %d)", clip(id), MaxTabIDLength)
	}
	return nil
}

// clip is the start of a value too long to quote whole in an error.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}

func (s Subjects) p() string {
	if s.Prefix == "" {
		return DefaultPrefix
	}
	return s.Prefix
}

// TabFrames is where a tab publishes its frames.
func (s Subjects) TabFrames(tab string) string { return fmt.Sprintf("%s.tab.%s.frame", s.p(), tab) }

// AllFrames matches the frames of every tab.
func (s Subjects) AllFrames() string { return s.p() + ".tab.*.frame" }

// HistoryFrames is where a node hands a tab's frame to the frame stream
// (FrameStream), which stores it under TabFrames: live subscribers, on
// TabFrames, get each frame as the tab makes it, and the stream takes it
// apart from them, so a stream electing its leader delays the history
// only. Only the node's account has this subject; no user imports it.
func (s Subjects) HistoryFrames(tab string) string {
	return fmt.Sprintf("%s.history.tab.%s.frame", s.p(), tab)
}

// AllHistoryFrames matches HistoryFrames of every tab: the frame
// stream's subjects.
func (s Subjects) AllHistoryFrames() string { return s.p() + ".history.tab.*.frame" }

// PersonEvents are the events the frame stream keeps beside the frames:
// every tab's questions (event.ask) and their answers (event.answer).
func (s Subjects) PersonEvents() []string {
	return []string{s.p() + ".tab.*.event.ask", s.p() + ".tab.*.event.answer"}
}

// TabPlan is where a tab takes plans (request/reply).
func (s Subjects) TabPlan(tab string) string { return fmt.Sprintf("%s.tab.%s.plan", s.p(), tab) }

// TabCancel is where a tab takes CancelRequests (request/reply).
func (s Subjects) TabCancel(tab string) string { return fmt.Sprintf("%s.tab.%s.cancel", s.p(), tab) }

// TabContent is where a tab answers ContentRequests for frame content
// too large for one message.
func (s Subjects) TabContent(tab string) string { return fmt.Sprintf("%s.tab.%s.content", s.p(), tab) }

// TabStage is where a tab takes StageRequests: files sent for upload.
func (s Subjects) TabStage(tab string) string { return fmt.Sprintf("%s.tab.%s.stage", s.p(), tab) }

// TabControl is where a person takes a tab over or hands it back
// (ControlRequest).
func (s Subjects) TabControl(tab string) string { return fmt.Sprintf("%s.tab.%s.control", s.p(), tab) }

// TabInput is where a person who has a tab sends their input
// (InputRequest).
func (s Subjects) TabInput(tab string) string { return fmt.Sprintf("%s.tab.%s.input", s.p(), tab) }

// TabAnswer is where a person answers a tab's question (AnswerRequest).
func (s Subjects) TabAnswer(tab string) string { return fmt.Sprintf("%s.tab.%s.answer", s.p(), tab) }

// TabWatch is where a viewer asks for a tab's screencast (WatchRequest):
// its pictures go to TabEvents(tab, "screen") while a lease lasts.
func (s Subjects) TabWatch(tab string) string { return fmt.Sprintf("%s.tab.%s.watch", s.p(), tab) }

// TabEvents is where a tab publishes page events of one kind (dialog, console, ...).
func (s Subjects) TabEvents(tab, kind string) string {
	return fmt.Sprintf("%s.tab.%s.event.%s", s.p(), tab, kind)
}

// HTTPFetch is the http resource's subject: one HTTP request
// (FetchRequest), answered by any node (a queue group).
func (s Subjects) HTTPFetch() string { return s.p() + ".http.fetch" }

// SearchQuery is the search resource's subject: one web search
// (SearchRequest), answered by any node (a queue group).
func (s Subjects) SearchQuery() string { return s.p() + ".search.query" }

// Tabs is the request subject every node answers with its tabs.
func (s Subjects) Tabs() string { return s.p() + ".tabs" }

// Browser is where a profile's browser takes lifecycle requests (OpStatus,
// OpLaunch, ...).
func (s Subjects) Browser(profile, op string) string {
	return fmt.Sprintf("%s.browser.%s.%s", s.p(), profile, op)
}

// NodeBrowser is where one node's profile takes lifecycle requests:
// Browser on the node called node (see ValidNodeName).
func (s Subjects) NodeBrowser(node, profile, op string) string {
	return fmt.Sprintf("%s.node.%s.browser.%s.%s", s.p(), node, profile, op)
}

// NodeProfile is NodeBrowser of a profile by name (see ProfileToken).
func (s Subjects) NodeProfile(node, name, op string) string {
	return s.NodeBrowser(node, ProfileToken(name), op)
}

// NodesBucket is the JetStream key-value bucket where the live nodes hold
// their entries (NodeEntry): FRAMEBUS_NODES for the default prefix.
func (s Subjects) NodesBucket() string { return streamToken(s.p()) + "_NODES" }

// BrowserStatus is where a node answers the status of all its profiles.
func (s Subjects) BrowserStatus() string { return s.p() + ".browser.status" }

// Profile returns the lifecycle subject of a profile by name (see
// ProfileToken).
func (s Subjects) Profile(name, op string) string { return s.Browser(ProfileToken(name), op) }

// SessionStart is where a node (one of a queue group) starts sessions.
func (s Subjects) SessionStart() string { return s.p() + ".session.start" }

// NodeSessionStart is where one node starts sessions itself: a start
// pinned to it, or placed on it by the node that took SessionStart. A
// domain whose session runs on another live node is handed to that node.
func (s Subjects) NodeSessionStart(node string) string {
	return fmt.Sprintf("%s.node.%s.session.start", s.p(), node)
}

// SessionsBucket is the JetStream key-value bucket where the sessions are
// registered, one entry (SessionEntry) per domain, so that a domain has
// one session on the whole bus: FRAMEBUS_SESSIONS for the default prefix.
func (s Subjects) SessionsBucket() string { return streamToken(s.p()) + "_SESSIONS" }

// SessionList is where a node answers its sessions.
func (s Subjects) SessionList() string { return s.p() + ".session.list" }

// SessionStop is where the node running a session stops it.
func (s Subjects) SessionStop(id string) string { return fmt.Sprintf("%s.session.%s.stop", s.p(), id) }

// FrameStream is the JetStream stream that keeps the frames of every tab
// (it takes AllHistoryFrames and stores each under the tab's TabFrames):
// FRAMEBUS_FRAMES for the default prefix.
func (s Subjects) FrameStream() string { return streamToken(s.p()) + "_FRAMES" }

// ContentBucket is the JetStream object store bucket that keeps frame
// content too large for one message (see ContentRef).
func (s Subjects) ContentBucket() string { return streamToken(s.p()) + "_CONTENT" }

// UsersBucket is the JetStream KV bucket where the members of a cluster
// share their users (names, roles, bcrypt hashes): FRAMEBUS_USERS.
func (s Subjects) UsersBucket() string { return streamToken(s.p()) + "_USERS" }

// JSAPIPrefix is where agents and observers, each in an account of its
// own, reach the read-only part of the node account's JetStream API
// ($JS.API.<rest> is JSAPIPrefix().<rest>): framebus.js.API.
func (s Subjects) JSAPIPrefix() string { return s.p() + ".js.API" }

// FrameMsgID is a frame's Nats-Msg-Id: the stream stores a frame once
// however often it is published.
func FrameMsgID(tab string, seq int64) string { return fmt.Sprintf("%s.%d", tab, seq) }

// NodeFrameSeq is the sequence of the frame a message on tab's frame
// subject carries, read from its Nats-Msg-Id (msgID): ok only when the
// id is FrameMsgID(tab, seq), as the node publishes it. Whoever may read
// the history can have JetStream send any stored message to any subject,
// a frame subject too (a direct get's reply subject, a consumer's
// delivery subject), and a stored message may be a web page's own bytes
// (a chunk of its content in ContentBucket): such a message lacks the id,
// or has another tab's, and is no frame. A reader also checks that the
// frame it decodes has this tab and sequence.
func NodeFrameSeq(tab, msgID string) (seq int64, ok bool) {
	rest, found := strings.CutPrefix(msgID, tab+".")
	if !found || rest == "" || rest[0] == '0' || rest[0] == '+' {
		return 0, false
	}
	seq, err := strconv.ParseInt(rest, 10, 64)
	return seq, err == nil && seq > 0
}

// ContentObject is the object store name of a frame's large content.
func ContentObject(tab string, seq int64) string { return fmt.Sprintf("%s/%d", tab, seq) }

// streamToken makes a prefix a stream name: upper case, '.' and '-' as '_'.
func streamToken(prefix string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(prefix))
}

// AllTabPlans matches the plan subject of every tab.
func (s Subjects) AllTabPlans() string { return s.p() + ".tab.*.plan" }

// ReadOnly reports whether a request on subject only reads, so that one
// whose answer was lost may be sent again: a frame's content (or the
// tab's latest frame), the tab listing, a profile's status or pages.
func (s Subjects) ReadOnly(subject string) bool {
	rest, ok := strings.CutPrefix(subject, s.p()+".")
	if !ok {
		return false
	}
	t := strings.Split(rest, ".")
	op := t[len(t)-1]
	switch {
	case len(t) == 1:
		return rest == "tabs"
	case len(t) == 2:
		return rest == "browser.status" || rest == "session.list"
	case len(t) == 3 && t[0] == "tab":
		return op == "content"
	case len(t) == 3 && t[0] == "browser", len(t) == 5 && t[0] == "node" && t[2] == "browser":
		return op == OpStatus || op == OpPages
	}
	return false
}
