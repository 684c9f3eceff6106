package bus

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/framebus/framebus/protocol"
)

// NodeAccount is the NATS account of the node itself: its connections,
// its streams, and admin users. Every agent and observer is in an account
// of its own (UserAccount) that imports from it only what its role may
// use. Subject permissions alone cannot keep a user's messages in their
// place: a user names the reply subject of every request it makes, and the
// servers (the node, micro, JetStream) publish their answer there, in the
// account the request arrived in. Across accounts, that answer goes back
// to the asker's account only, where nobody else reads (docs/security.md).
const NodeAccount = "FRAMEBUS"

// UserAccount is the account of an agent, observer or operator named user:
// U_<role>_<user>. A user removed and added again with its role comes back
// to the same account; with another role, to another.
func UserAccount(user, role string) string { return "U_" + role + "_" + user }

// nodeAccount makes the node's account, and puts it in opts: through the
// configuration parser, the only way to give one account JetStream (a
// reload without it would turn JetStream off for the account).
func nodeAccount(opts *server.Options, jetStream bool) (*server.Account, error) {
	conf := "accounts { " + NodeAccount + " {} }"
	if jetStream {
		conf = "accounts { " + NodeAccount + " { jetstream: enabled } }"
	}
	if err := opts.ProcessConfigString(conf); err != nil {
		return nil, fmt.Errorf("%w: node account: %w", ErrServerStart, err)
	}
	if len(opts.Accounts) != 1 || opts.Accounts[0].Name != NodeAccount {
		return nil, fmt.Errorf("%w: node account: the configuration made %d accounts", ErrServerStart, len(opts.Accounts))
	}
	return opts.Accounts[0], nil
}

// exportToUsers has the node account offer what any role may import:
// every role's requests and the read-only history API as services, and
// frames and events as streams. Public exports: every account on this
// server is one the node made, and each imports only its role's part.
func exportToUsers(node *server.Account, subj protocol.Subjects) error {
	seen := map[string]bool{}
	for _, role := range []string{protocol.RoleAgent, protocol.RoleObserver, protocol.RoleOperator} {
		for _, svc := range subj.RoleServices(role) {
			if seen[svc.Subject] {
				continue
			}
			seen[svc.Subject] = true
			if err := node.AddServiceExportWithResponse(svc.Subject, responseType(svc), nil); err != nil {
				return fmt.Errorf("%w: export %s: %w", ErrServerStart, svc.Subject, err)
			}
		}
	}
	for _, api := range subj.HistoryAPI() {
		if err := node.AddServiceExportWithResponse("$JS.API."+api.Subject, responseType(api), nil); err != nil {
			return fmt.Errorf("%w: export $JS.API.%s: %w", ErrServerStart, api.Subject, err)
		}
	}
	for _, s := range subj.UserStreams() {
		if err := node.AddStreamExport(s, nil); err != nil {
			return fmt.Errorf("%w: export %s: %w", ErrServerStart, s, err)
		}
	}
	return nil
}

func responseType(svc protocol.Service) server.ServiceRespType {
	if svc.Streamed {
		return server.Streamed
	}
	return server.Singleton
}

// importForUser has an agent's or observer's account import its role's
// requests (under their own names), the history API (under
// Subjects.JSAPIPrefix) and the frames and events.
func importForUser(acc, node *server.Account, subj protocol.Subjects, u User) error {
	for _, svc := range subj.RoleServices(u.Role) {
		if err := acc.AddServiceImport(node, svc.Subject, svc.Subject); err != nil {
			return fmt.Errorf("bus: user %q: import %s: %w", u.Name, svc.Subject, err)
		}
	}
	for _, api := range subj.HistoryAPI() {
		if err := acc.AddServiceImport(node, subj.JSAPIPrefix()+"."+api.Subject, "$JS.API."+api.Subject); err != nil {
			return fmt.Errorf("bus: user %q: import $JS.API.%s: %w", u.Name, api.Subject, err)
		}
	}
	for _, s := range subj.UserStreams() {
		if err := acc.AddStreamImport(node, s, ""); err != nil {
			return fmt.Errorf("bus: user %q: import %s: %w", u.Name, s, err)
		}
	}
	return nil
}
