package bus

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// requestInfoHeader is where the NATS server says which account a
// request came from, as it crosses an import into the node's account
// (nats-server's ClientInfoHdr). It sets it on every such request and
// replaces any a client wrote, so no client can name another.
const requestInfoHeader = "Nats-Request-Info"

// SenderOf is the user a request to the node came from: every agent,
// observer and operator has an account of its own (UserAccount), which
// the server names in the request's header. A request from the node's
// own account (its admin users, the node itself) carries no account of
// a user: the zero Sender.
func SenderOf(h nats.Header) protocol.Sender {
	var info struct {
		Account string `json:"acc"`
	}
	if json.Unmarshal([]byte(h.Get(requestInfoHeader)), &info) != nil {
		return protocol.Sender{}
	}
	rest, ok := strings.CutPrefix(info.Account, "U_")
	if !ok {
		return protocol.Sender{}
	}
	role, user, ok := strings.Cut(rest, "_")
	if !ok || user == "" || role == protocol.RoleAdmin || !slices.Contains(protocol.Roles, role) {
		return protocol.Sender{}
	}
	return protocol.Sender{User: user, Role: role}
}
