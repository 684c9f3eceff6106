package protocol

// Roles: what a user of the bus may do. Each is a set of NATS subject
// permissions (see Subjects.RolePermissions).
const (
	// RoleAgent sends plans, cancels, drives lifecycle, sessions and
	// tabs, and reads frames, history and content.
	RoleAgent = "agent"
	// RoleObserver reads frames, frame history, content and tab lists;
	// it changes nothing in a browser.
	RoleObserver = "observer"
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
}

// InboxPrefix is a user's inbox prefix: _INBOX_<user>.
func InboxPrefix(user string) string { return "_INBOX_" + user }
