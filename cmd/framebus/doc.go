// Command framebus is the command line of framebus: it starts a node
// (embedded NATS, Chromium, tab actors), sends plans to tabs, watches their
// frames, and runs the bundled demo.
//
//	framebus serve &                      # prints {"ok":true,"bus":"nats://127.0.0.1:PORT","tabs":[...]}
//	framebus navigate example.com         # {"ok":true,"sequence":2,"url":"https://example.com/","title":"Example Domain"}
//	framebus click '#more' --based-on 2   # runs only while frame 2 is still current
//	framebus eval 'document.title'        # {"ok":true,"sequence":4,...,"value":"Example Domain"}
//	framebus watch --all                  # one JSON line per frame, until Ctrl-C
//	framebus plan plan.json               # a whole plan; prints the PlanResult
//
// Every output on stdout is JSON: {"ok": true, ...} or {"ok": false,
// "error": "...", "code": "..."}. The exit status is 0 when the request
// succeeded, 1 when it failed, 2 for a usage error (code bad_request).
//
// # Where the code lives
//
// This package only parses arguments, wires library calls together and
// prints. The one-action subcommands are not written by hand: action.go
// builds one per protocol.ActionSpecs() entry (arguments, flags, help), so
// an action declared in protocol is a CLI command without touching this
// package; only a parameter declared ClientOnly needs a handler here
// (clientparams.go). Everything a library user needs (plans, frames,
// subjects, the node itself) is in protocol and actors, and a node run as
// serve runs it is in serving.
//
// Files: main.go dispatches and maps errors to exit codes; commands.go is
// the command table and help; action.go turns an ActionSpec into a command
// and a one-action plan; reply.go shapes replies; client.go finds the bus
// and the tab; state.go finds the state file (its format is serving's);
// serve.go turns the configuration into serving.Options; plan.go, watch.go
// and demo.go are the other commands.
//
// # Finding the node
//
// Client commands take the bus URL from --bus, else $FRAMEBUS_URL, else the
// state file that serve writes ($FRAMEBUS_STATE, default
// <user cache dir>/framebus/node.json). The tab is --tab, else the first
// tab the node lists on <prefix>.tabs.
//
// # Libraries and why
//
//   - github.com/spf13/pflag parses flags: GNU-style --long flags that may
//     come after positional arguments (framebus navigate URL --wait), which
//     the standard flag package stops parsing at, and "--" to end flags.
//     The command tree is generated from protocol.ActionSpecs, so a full
//     framework such as cobra would add little.
//   - github.com/rs/zerolog writes logs to stderr (console writer), so
//     stdout carries only JSON.
package main
