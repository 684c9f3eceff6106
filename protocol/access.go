package protocol

import (
	"regexp"
	"strings"
)

// Roles: what a user of the bus may do. Each is a set of NATS subject
// permissions (see Subjects.RolePermissions).
const (
	// RoleAgent sends plans, cancels, drives lifecycle, sessions and
	// tabs, and reads frames, history and content.
	RoleAgent = "agent"
	// RoleObserver reads frames, frame history, content and tab lists;
	// it changes nothing in a browser.
	RoleObserver = "observer"
	// RoleOperator is a person beside the agents: it reads what an
	// observer reads, takes a tab over, acts in it, hands it back and
	// answers agents' questions (docs/people.md); it sends no plans.
	RoleOperator = "operator"
	// RoleAdmin may do everything, JetStream management included.
	RoleAdmin = "admin"
)

// Credentials are what a client needs to use a node's bus: the file serve
// writes next to its state file (0600), and `framebus creds add` prints.
type Credentials struct {
	URL       string `json:"url"`                 // nats://host:port of the bus
	WebSocket string `json:"websocket,omitempty"` // ws://host:port, when the node listens for WebSockets
	User      string `json:"user"`
	Password  string `json:"password"`
	Role      string `json:"role"`
	Prefix    string `json:"prefix"`
	// InboxPrefix is where this user's replies arrive: each user may
	// subscribe to its own inboxes only, so no one reads another's
	// replies. Pass it to the NATS client (nats.CustomInboxPrefix, the
	// nats CLI's --inbox-prefix, nats.js's inboxPrefix).
	InboxPrefix string `json:"inboxPrefix"`
	// JSAPIPrefix is where this user reaches the frame history's
	// JetStream API: agents and observers live in accounts of their own,
	// which import a read-only part of the node's API under
	// Subjects.JSAPIPrefix ("" for admin, who uses $JS.API itself). Pass it
	// to the NATS client (jetstream.NewWithAPIPrefix, the nats CLI's
	// --js-api-prefix, nats.js's jetstream({apiPrefix})).
	JSAPIPrefix string `json:"jsApiPrefix,omitempty"`
	// BusUID is the account the node runs as on its machine: when it is
	// given, framebus's clients there send the password to a listener of
	// that account (or their own, or root's) only, never to another
	// local user's that holds the bus's port while the node is down.
	BusUID *int `json:"busUid,omitempty"`
}

// JSAPIPrefixFor is the JetStream API prefix a role uses: "" (the
// server's own $JS.API) for admin, Subjects.JSAPIPrefix for the others.
func (s Subjects) JSAPIPrefixFor(role string) string {
	if role == RoleAdmin {
		return ""
	}
	return s.JSAPIPrefix()
}

// Sender is the bus user a request came from, as the bus server says
// (bus.SenderOf): a client cannot name it. The zero Sender is the node's
// own account: its admin users, and the node itself.
type Sender struct {
	User string `json:"user,omitempty"`
	Role string `json:"role,omitempty"`
}

// Known reports whether the sender is a user of an agent's, observer's
// or operator's account (not the node's own).
func (s Sender) Known() bool { return s.User != "" }

// InboxPrefix is a user's inbox prefix: _INBOX_<user>.
func InboxPrefix(user string) string { return "_INBOX_" + user }

// Permissions are the NATS subjects a user may publish and subscribe to:
// allow lists (wildcards as NATS has them), and deny lists that carve
// exceptions out of them.
type Permissions struct {
	Publish   SubjectPermission `json:"publish"`
	Subscribe SubjectPermission `json:"subscribe"`
}

// SubjectPermission is one direction's allow and deny lists. An empty
// Allow list with a non-empty Deny list allows everything else.
type SubjectPermission struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Roles lists the roles, for help and validation.
var Roles = []string{RoleAgent, RoleObserver, RoleOperator, RoleAdmin}

// ValidUserName reports whether name can be a user: one subject token
// (it names the user's inboxes, _INBOX_<name>).
func ValidUserName(name string) bool { return tokenPattern.MatchString(name) }

// CheckUser is ValidUserName and a known role, as a bad_request error.
func CheckUser(name, role string) error {
	if !ValidUserName(name) {
		return badRequest("user: %q is not a user name (letters, digits, '-' and '_')", name)
	}
	return checkRole(role)
}

func checkRole(role string) error {
	switch role {
	case RoleAgent, RoleObserver, RoleOperator, RoleAdmin:
		return nil
	}
	return badRequest("role: %q is not a role (agent, observer, operator or admin)", role)
}

// Service is a request subject a node answers, as agents and observers
// reach it: their accounts import it from the node's account. Streamed
// when one request may get more than one answer (every node answers, or
// a batch of stored messages); a request otherwise gets one.
type Service struct {
	Subject  string
	Streamed bool
}

// RoleServices are the requests a user of role (agent, observer or
// operator) may send, as the node account names them. An observer's
// change nothing in a browser; an operator's are a person's (control,
// input, answers), never plans. The subjects do not overlap, so each is
// imported once.
func (s Subjects) RoleServices(role string) []Service {
	p := s.p()
	services := []Service{
		{Subject: p + ".tabs", Streamed: true},       // every node answers
		{Subject: s.BrowserStatus(), Streamed: true}, // every node answers
		{Subject: s.SessionList(), Streamed: true},   // every node answers
		{Subject: "$SRV.>", Streamed: true},          // micro discovery: ping, info, stats
		{Subject: p + ".tab.*.content"},              // frame content too large for one message
		{Subject: p + ".tab.*.watch"},                // a tab's screencast, while watched
	}
	if role != RoleAgent {
		services = append(services,
			Service{Subject: p + ".browser.*." + OpStatus, Streamed: true}, // one profile's status, from every node that has it
			Service{Subject: p + ".browser.*." + OpPages, Streamed: true},  // a profile's tabs, from every node that has it
			Service{Subject: p + ".node.*.browser.*." + OpStatus},          // the same on one node
			Service{Subject: p + ".node.*.browser.*." + OpPages},
		)
		if role == RoleOperator {
			services = append(services,
				Service{Subject: p + ".tab.*.control"}, // a person takes a tab over, hands it back
				Service{Subject: p + ".tab.*.input"},   // and acts in it
				Service{Subject: p + ".tab.*.answer"},  // answers an agent's question
			)
		}
		return services
	}
	return append(services,
		Service{Subject: p + ".browser.*.*", Streamed: true}, // a profile's lifecycle: launch, close, newtab, closetab, connect, status, pages (status and pages from every node that has it)
		Service{Subject: p + ".node.*.browser.*.*"},          // the same on one node
		Service{Subject: p + ".tab.*.plan"},
		Service{Subject: p + ".tab.*.cancel"},
		Service{Subject: p + ".tab.*.stage"},
		// An agent hands back its own handoff and answers its own
		// question, for the person it asked itself (the MCP server's
		// elicitation); the tab refuses it the rest (see Sender).
		Service{Subject: p + ".tab.*.control"},
		Service{Subject: p + ".tab.*.answer"},
		Service{Subject: s.SessionStart()},
		Service{Subject: p + ".node.*.session.start"}, // a session start on one node
		Service{Subject: p + ".session.*.stop"},
		Service{Subject: s.HTTPFetch()},   // the http resource: an observer makes no requests to the web
		Service{Subject: s.SearchQuery()}, // the search resource
	)
}

// HistoryAPI is the read-only part of the node account's JetStream API
// that agents and observers may call (each subject after "$JS.API."; a
// user sends it under JSAPIPrefix): account and stream info, and getting
// stored messages of the frame stream and the content bucket. No consumer
// API: a consumer lives in the stream's account, where a push consumer
// would deliver the history to any subject its maker names (docs/security.md).
func (s Subjects) HistoryAPI() []Service {
	api := []Service{{Subject: "INFO"}}
	for _, stream := range []string{s.FrameStream(), "OBJ_" + s.ContentBucket()} {
		api = append(api,
			Service{Subject: "STREAM.INFO." + stream},
			Service{Subject: "STREAM.MSG.GET." + stream},
			Service{Subject: "DIRECT.GET." + stream, Streamed: true}, // a batch get answers with many messages
			Service{Subject: "DIRECT.GET." + stream + ".>"},          // the last message of a subject
		)
	}
	return api
}

// UserStreams are what the node publishes to its users: every tab's
// frames and events. Agents' and observers' accounts import them.
func (s Subjects) UserStreams() []string { return []string{s.AllFrames(), s.p() + ".tab.*.event.>"} }

// RolePermissions are the subjects a user of role may use under this
// prefix. Think of a user as an attacker: only the node publishes frames
// and events and subscribes to request subjects (a subscriber there could
// answer plans in a tab's name), a user reads its own inboxes only, and
// JetStream is read-only on the frame history (no stream may be deleted or
// purged) except for admin. An agent or observer may publish its
// RoleServices and the HistoryAPI under JSAPIPrefix, and subscribe to the
// UserStreams and its inboxes. The lists are short, with wildcards, so the
// server's check on each message stays cheap.
func (s Subjects) RolePermissions(role, user string) (Permissions, error) {
	if err := CheckUser(user, role); err != nil {
		return Permissions{}, err
	}
	if role == RoleAdmin {
		// Everything: admin manages users, JetStream and the node.
		return Permissions{Publish: SubjectPermission{Allow: []string{">"}}, Subscribe: SubjectPermission{Allow: []string{">"}}}, nil
	}
	var publish []string
	for _, svc := range s.RoleServices(role) {
		publish = append(publish, svc.Subject)
	}
	for _, api := range s.HistoryAPI() {
		publish = append(publish, s.JSAPIPrefix()+"."+api.Subject)
	}
	return Permissions{
		Publish:   SubjectPermission{Allow: publish},
		Subscribe: SubjectPermission{Allow: append(s.UserStreams(), InboxPrefix(user)+".>")},
	}, nil
}

// PermissionDenied is the error of a message the server refused: "publish"
// or "subscribe", the subject, and the role of the user who tried.
func PermissionDenied(role, verb, subject string) *Error {
	who := role
	if who == "" {
		who = "this user"
	}
	return Errorf(CodePermissionDenied, "permission denied: %s may not %s to %s", who, verb, subject)
}

// User management operations (admin only), the last token of AdminUsers.
const (
	UsersAdd    = "add"    // UserRequest in (Name, Role, PasswordHash); UsersReply out
	UsersRemove = "remove" // UserRequest in (Name); UsersReply out
	UsersList   = "list"   // nothing in; UsersReply out
)

// AdminUsers is where a node takes user management requests: only admin
// may publish there.
func (s Subjects) AdminUsers(op string) string { return s.p() + ".admin.users." + op }

// UserRequest adds or removes a user of the bus. The password travels
// only as its bcrypt hash: the node never sees it.
type UserRequest struct {
	Name         string `json:"name"`
	Role         string `json:"role,omitempty"`
	PasswordHash string `json:"passwordHash,omitempty"`
}

// UserInfo is a user as listed: never its password or hash.
type UserInfo struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// UsersReply answers a user management request with the users after it.
type UsersReply struct {
	OK    bool       `json:"ok"`
	Users []UserInfo `json:"users"`
}

// permissionViolation matches the NATS server's error for a refused
// message: Permissions Violation for Publish to "X" (using Reply "Y"), or
// for Subscription to "X".
var permissionViolation = regexp.MustCompile(`(?i)permissions violation for (publish|subscription) to "([^"]+)"`)

// ParsePermissionViolation reads a NATS permissions violation error (the
// server's -ERR, as a client library reports it): what was refused,
// "publish" or "subscribe", and the subject.
func ParsePermissionViolation(msg string) (verb, subject string, ok bool) {
	m := permissionViolation.FindStringSubmatch(msg)
	if m == nil {
		return "", "", false
	}
	verb = "publish"
	if strings.EqualFold(m[1], "subscription") {
		verb = "subscribe"
	}
	return verb, m[2], true
}

// Answerable reports whether a request with this reply subject is one a
// client sent and waits for. Whoever may publish to a subject may name
// any reply subject, even one it may not publish to itself, and servers
// answer there: the node answering a tab list request, JetStream answering
// a direct get (the stored message itself, a page's content included) or
// delivering a consumer's messages. Such answers arrive with no reply
// subject, or with JetStream's own ($JS.ACK..., which no client may set),
// so a node takes neither as a request: an observer could otherwise aim
// them at a plan or user-management subject it may not use.
//
// And a node answers only into an inbox (_INBOX., or a user's own
// _INBOX_<user>., the only replies a user can read): a request naming a
// frame or event subject as its reply would otherwise have the node
// publish its answer there, where observers take it for the tab's. A
// request from an agent's or observer's account arrives with the reply
// the server made for it (_R_.), which answers into the asker's account
// only; no user can name one in the node's account.
func Answerable(reply string) bool {
	return strings.HasPrefix(reply, "_INBOX.") || strings.HasPrefix(reply, "_INBOX_") || strings.HasPrefix(reply, "_R_.")
}

// NodeFrame checks that a frame message is one a node published: its
// subject is a tab's frame subject, it carries the node's Nats-Msg-Id
// (FrameMsgID of that tab and the frame's sequence) and no header of a
// JetStream answer (Nats-Stream), and the frame is that tab's. header
// reads the message's headers (nats.Header's Get).
//
// Readers of frames, live or from the history, need this: a user may name
// a frame subject as the reply of a request it may make (a direct get of a
// stored content chunk, which a page shapes) or as a consumer's deliver
// subject, and the server then publishes there itself, where live
// subscribers get it and the frame stream stores it.
func (s Subjects) NodeFrame(subject string, header func(string) string, f Frame) error {
	tab, seq, err := s.NodeFrameHeader(subject, header)
	switch {
	case err != nil:
		return err
	case f.Tab != tab || f.Sequence != seq:
		return badRequest("a message on %s with message id %s is frame %d of tab %q", subject, FrameMsgID(tab, seq), f.Sequence, f.Tab)
	}
	return nil
}

// NodeFrameHeader is NodeFrame's check of the subject and headers alone,
// for a reader that has not decoded the frame yet: the tab and sequence
// the node's message id names. The servers' own publishes that a user can
// aim at a frame subject fail it: a JetStream answer carries Nats-Stream,
// a content chunk or a node's answer no message id, and a consumer of the
// frame stream cannot deliver onto the stream's own subjects.
func (s Subjects) NodeFrameHeader(subject string, header func(string) string) (tab string, seq int64, err error) {
	rest, ok := strings.CutPrefix(subject, s.p()+".tab.")
	tab, ok2 := strings.CutSuffix(rest, ".frame")
	if !ok || !ok2 || !ValidTabID(tab) {
		return "", 0, badRequest("%s is not a frame subject", subject)
	}
	if from := header("Nats-Stream"); from != "" {
		return "", 0, badRequest("a message on %s is a JetStream answer (from %s), not a node's frame", subject, from)
	}
	id := header("Nats-Msg-Id")
	n, ok := NodeFrameSeq(tab, id)
	if !ok {
		return "", 0, badRequest("a message on %s carries message id %q, not a node's frame's (%s.<sequence>)", subject, id, tab)
	}
	return tab, n, nil
}
