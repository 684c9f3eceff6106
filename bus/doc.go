// Package bus runs the NATS server that carries framebus traffic, or connects
// to one that already runs, and hands out client connections to it.
//
// It knows nothing about browsers, tabs or frames: it moves bytes between
// subjects. Subject names and message formats live in package protocol; the
// actors that publish and answer live in package actors.
//
// # Embedded or external
//
// By default Start embeds a nats-server in this process, listening on
// 127.0.0.1 on a random port:
//
//	b, err := bus.Start(bus.Options{Logger: log})
//	if err != nil {
//		return err // e.g. the port you asked for is taken: errors.Is(err, bus.ErrServerStart)
//	}
//	defer b.Close()
//
//	nc, err := b.Connect("tab-7") // in-process: no socket, no port
//	...
//	fmt.Println("other processes connect to", b.ClientURL()) // nats://127.0.0.1:41303
//
// Connections from Connect go through an in-process pipe (nats.InProcessServer)
// when embedded, which needs no listener at all and, in BenchmarkRequestReply,
// is about three times faster than loopback TCP for a small request/reply.
// With Options.NoListen the server opens no port and ClientURL is "".
//
// To use a NATS server that already runs (a shared deployment, a cluster),
// set Options.URL. Start then connects once to check the server answers and
// to read its payload limit, and Connect dials that URL:
//
//	b, err := bus.Start(bus.Options{URL: "nats://nats.internal:4222"})
//	// errors.Is(err, bus.ErrConnect): "bus: cannot connect to NATS at nats://nats.internal:4222: ..."
//
// The rest of the program does not care which kind it got; Embedded says.
//
// # Authentication
//
// An embedded bus lets no one in without logging in, on TCP and on the
// optional WebSocket listener (Options.WebSocket) alike. Options.Users
// are the users, each with the bcrypt hash of its password and a role
// whose subject permissions come from protocol.Subjects.RolePermissions
// under Options.Prefix:
//
//	hash, _ := bus.HashPassword(password)
//	b, err := bus.Start(bus.Options{Prefix: "framebus", WebSocket: "127.0.0.1:0",
//		Users: []bus.User{{Name: "dashboard", PasswordHash: hash, Role: protocol.RoleObserver}}})
//	...
//	err = b.AddUser(bus.User{Name: "bot", PasswordHash: botHash, Role: protocol.RoleAgent}) // at once
//
// Another process logs in with the name and password and sets its inbox
// prefix to protocol.InboxPrefix(name), the only inboxes it may read:
//
//	nc, err := nats.Connect(b.ClientURL(), nats.UserInfo("dashboard", password),
//		nats.CustomInboxPrefix(protocol.InboxPrefix("dashboard")))
//
// Connect needs none of that: the server accepts an nkey made up at
// Start, with every permission, on in-process connections only. Admins
// are in the node's account (NodeAccount); every agent and observer is in
// an account of its own (UserAccount) that imports only what its role
// may use, so that no server's answer to it lands anywhere else. AddUser
// and RemoveUser change the users of the running server at once, without
// a configuration reload (the bus logs users in itself, as nats-server's
// CustomClientAuthentication); a removed user's connections are closed. An
// external bus (Options.URL) has the users its server has: put them in
// the URL.
//
// The listeners are on loopback unless Options.AllowRemote: there is no
// TLS, so a password would cross the network in clear text (LoopbackOnly).
//
// # Clusters
//
// Options.Cluster makes the embedded server a member of a NATS cluster:
// every member lists every member's route (ClusterURL; JetStream's
// cluster wants them configured), and routes log in with a secret that is
// the same on every member (a route sees every account's messages, so
// without the secret nobody joins). Each member needs its own Name.
// Frames, requests and the history then reach every member, and a user
// logged in to any member reaches the node's requests on any other
// through its account's imports. With JetStream, the members share their
// users in a replicated KV bucket (protocol.Subjects.UsersBucket): a
// user added or removed on one member is added or removed on all.
//
//	b, err := bus.Start(bus.Options{Name: "m1", JetStream: &bus.JetStreamOptions{},
//		Cluster: &bus.ClusterOptions{Listen: "127.0.0.1:6222", Secret: secret,
//			Routes: []string{"nats-route://127.0.0.1:6222", "nats-route://127.0.0.1:6223", "nats-route://127.0.0.1:6224"}}})
//
// # Sizes
//
// A frame that carries a full page can be megabytes, and NATS delivers each
// message whole or not at all. nats-server's default limit is 1 MiB, so an
// embedded bus raises it to 16 MiB (Options.MaxPayload, at least 8 MiB) and
// raises the server's per-client outbound buffer with it. An external
// server keeps its own limit: MaxPayload reports it, Start logs a warning
// when it is below 8 MiB, and fails when Options.MaxPayload asks for more
// than the server allows. Publishing above the limit fails at once with
// nats.ErrMaxPayload. nats.go buffers at most 64 MiB per subscription by
// default; a subscriber of full-page frames that can fall behind should
// raise that with Subscription.SetPendingLimits.
//
// # Shutting down
//
// Close drains every connection Connect handed out that is still open
// (pending publishes are flushed, pending messages handled), waits up to
// Options.DrainTimeout, closes what is left, then stops the embedded server
// and waits for it. Closing a connection yourself earlier is fine, and
// Close may be called twice.
//
// # Logging
//
// The embedded server logs through Options.Logger (zerolog, default
// zerolog.Nop()) with component=nats-server, at matching levels; its debug
// and trace output is switched on only when the logger would write it. The
// server's stock logger exits the process on a fatal error such as a taken
// port; ours logs it at error level and Start returns it as an error.
//
// # Libraries and why
//
//   - github.com/nats-io/nats-server/v2 is the NATS server itself, embedded,
//     so "framebus serve" is one binary with no broker to install, and moving
//     to a shared deployment is a URL, not a rewrite.
//   - github.com/nats-io/nats.go is the official client. Its InProcessServer
//     option connects to the embedded server through a pipe with the same
//     API as a TCP connection, so code never branches on where it runs.
//   - github.com/rs/zerolog is the project's structured logger; the server's
//     printf-style log is adapted to it so one log stream carries both.
//   - github.com/nats-io/nkeys makes the internal identity (an ed25519
//     key: a signature check per connection, where a password would cost
//     a bcrypt compare), and golang.org/x/crypto/bcrypt hashes passwords
//     as nats-server checks them.
package bus
