// Package client is the Go client of a framebus bus: what an agent, an
// observer or the framebus CLI uses to send plans, watch frames and
// drive browsers from another process.
//
// It connects with a credentials file (protocol.Credentials: the one
// framebus serve writes beside its state file, or one `framebus creds
// add` made), and keeps the connection: it reconnects by itself, and
// reports disconnects and reconnects through Options.OnEvent.
//
//   - Plan sends a plan, waits through a disconnect and sends it again,
//     same id, when the answer was lost: the node runs an id once.
//     While it waits it checks that the tab's node is live (liveness.go):
//     a node gone, frozen or cut off ends the wait with node_unavailable.
//     The plan carries the context's deadline, and the tab starts
//     nothing of it after that (expired); a plan sent whose answer never
//     came is outcome_unknown, naming its id, never a plain timeout.
//   - Watch delivers a tab's frames from a sequence, the stored ones
//     first and then the live ones: a live subscription, and the node's
//     JetStream frame history read by batches of direct gets (no
//     consumer: agents and observers may make none). After a disconnect
//     or a server restart it reads the history from where it was, no
//     frame twice, and says when frames are missing (EventGap). It ends
//     after the tab's close frame (tab_closed), and when the tab's node
//     is not live (node_unavailable) unless KeepWaiting.
//   - Frames and Current read the history; Tabs, Status, Lifecycle and
//     the session calls are the node's other requests.
//
// Every error is a *protocol.Error with a stable code; what the user's
// role forbids is permission_denied at once (the server's asynchronous
// permission error is matched to the call waiting on its subject),
// never a timeout.
//
// Example:
//
//	c, err := client.Connect(ctx, client.Options{CredentialsFile: "/home/me/.cache/framebus/credentials.json"})
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	w, err := c.Watch(ctx, "t1", 1)
//	if err != nil {
//		return err
//	}
//	for f := range w.Frames() {
//		fmt.Println(f.Sequence, f.URL)
//	}
//	return w.Err()
//
// The package imports protocol and nats.go only.
package client
