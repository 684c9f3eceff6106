// Package serving runs a framebus node as framebus serve does: the node
// (actors.StartNode) with its own credentials kept beside the state file
// from one start to the next (rotated on demand), the users creds add
// makes (users.json) and the admin's user requests, the tabs file a node
// started again brings its tabs back from, the last start's port taken
// again, and the state file client commands find the node by.
//
//	n, err := serving.Start(ctx, serving.Options{StatePath: path, Node: nodeOpts})
//	...
//	st := n.State() // what the state file holds: the bus URL, the tabs
//	err = n.Stop()   // closes the node, removes the state file
//
// It also owns the formats of those files (State, ReadState,
// ReadCredentials, ReadUsersFile), which clients read.
package serving
