package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// Environment variables the client commands read.
const (
	envURL   = "FRAMEBUS_URL"   // the bus, when --bus is not given
	envState = "FRAMEBUS_STATE" // the state file serve writes and clients read
)

const (
	// connectTimeout bounds dialing the bus.
	connectTimeout = 5 * time.Second
	// tabsTimeout bounds the <prefix>.tabs request; every node answers at once.
	tabsTimeout = 5 * time.Second
)

// noNodeMessage is what a client says when nothing answers on the bus.
const noNodeMessage = "no framebus node running. Start one with: framebus serve"

// errNoNode is the error of a request that failed: "no node running"
// only when nothing answered (no responders, no bus, no state file);
// what a node answered (bad_request, fetch_failed, timeout, ...) or the
// client knows (a connection lost mid-request, outcome_unknown) is said
// as it is.
func errNoNode(cause error) error {
	var perr *protocol.Error
	switch {
	case errors.Is(cause, busclient.ErrTabNotHereYet):
		return cause // a live node has the tab
	case errors.Is(cause, nats.ErrNoResponders):
	case errors.As(cause, &perr):
		return cause
	}
	return noNodeRunning(cause)
}

// noNodeRunning says that no node runs: the bus or the state file is not
// there.
func noNodeRunning(cause error) error {
	return &protocol.Error{Code: protocol.CodeUnavailable, Message: noNodeMessage, Err: cause}
}

// errNotAnswering is what a client says when the bus of the node its
// state file names does not answer (connection refused, no server): the
// node is not answering, maybe restarting, which is not "no node" (a node
// restarted with its state listens there again, and takes the same
// credentials) and not permission_denied (nothing refused the login).
func errNotAnswering(st serving.State, cause error) error {
	why := "it stopped without removing its state file (killed?), or it is restarting"
	if serving.ProcessAlive(st.PID) {
		why = "it is starting or restarting, or too busy to answer"
	}
	return &protocol.Error{Code: protocol.CodeUnavailable, Err: cause, Message: fmt.Sprintf(
		"the framebus node at %s (pid %d) is not answering: %s. Try again in a moment; if it does not come back, start it with: framebus serve",
		withoutPassword(st.Bus), st.PID, why)}
}

// errInterrupted is the error of a command the user interrupted (Ctrl-C,
// or a signal) while it waited for an answer. No stable code means
// "interrupted", and timeout is the nearest (no answer came in time), so
// the message says plainly that it was not a deadline.
func errInterrupted(waitingFor, aftermath string) error {
	return protocol.Errorf(protocol.CodeTimeout,
		"interrupted while waiting for %s (stopped by Ctrl-C or a signal, not by a deadline); %s", waitingFor, aftermath)
}

// interrupted reports whether ctx ended because the command was
// interrupted rather than by a deadline of its own.
func interrupted(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

// clientFlags are the flags every client command takes.
type clientFlags struct {
	bus    string
	prefix string
	tab    string
	creds  string
	// credsFile is the credentials file beside the state file used
	// without --creds: the agent's, but the operator's for a person's
	// commands (declarePerson).
	credsFile string
}

// defaultCreds is the file beside the state file the command logs in
// with when no --creds names one.
func (f clientFlags) defaultCreds() string { return cmp.Or(f.credsFile, serving.AgentCredsFile) }

// declarePerson declares the flags of a person's command, which logs in
// with the operator's credentials unless told otherwise.
func (f *clientFlags) declarePerson(fs *pflag.FlagSet, withTab bool) {
	f.credsFile = serving.OperatorCredsFile
	f.declare(fs, withTab)
}

func (f *clientFlags) declare(fs *pflag.FlagSet, withTab bool) {
	if withTab {
		fs.Var((*tabFlag)(&f.tab), "tab", "tab `ID` (default: the one tab select chose, an error once it is closed; with none chosen, the first tab the node lists)")
	}
	fs.StringVar(&f.bus, "bus", "", "NATS `URL` of the bus (default: $"+envURL+", else the state file of framebus serve)")
	fs.StringVar(&f.prefix, "prefix", "", "subject `prefix` (default: the one in the state file, else "+protocol.DefaultPrefix+")")
	fs.StringVar(&f.creds, "creds", "", "credentials `file` to log in with (default: $"+envCreds+", else "+f.defaultCreds()+" beside the state file)")
}

// client is a connection to the bus of a running node, through
// bus/client.
type client struct {
	bc   *busclient.Client
	subj protocol.Subjects
	// creds are what it logged in with (zero for none).
	creds protocol.Credentials
	// active is the tab chosen with tab select (from the state file).
	active string
}

// connect finds the bus (--bus, $FRAMEBUS_URL, the state file) and dials
// it for one command. A connection lost meanwhile is made again, to the
// same server or another member of its cluster, a few times
// (cliReconnects each): a plan waiting for its answer is sent again under
// its id (the tab runs it once), any other request fails saying the
// connection was lost.
func (c *cli) connect(f clientFlags) (*client, error) {
	return c.dial(f, busclient.Options{MaxReconnects: cliReconnects})
}

// cliReconnects is how often a command tries each server it knows again
// after losing its connection (a quarter second apart): about 2 s for
// a bus that is gone.
const cliReconnects = 8

// dial finds the bus and connects to it with the options given (the URL,
// prefix and name are filled in here).
func (c *cli) dial(f clientFlags, opts busclient.Options) (*client, error) {
	if f.tab != "" && !protocol.ValidTabID(f.tab) {
		return nil, usagef("--tab: %q is not a tab id (letters, digits, '-' and '_')", f.tab)
	}
	creds, haveCreds, err := c.credentials(f.creds, f.defaultCreds())
	if err != nil {
		return nil, err
	}
	url, prefix, active := f.bus, f.prefix, ""
	var registered *serving.State // the state file's node, when the URL is its
	if url == "" {
		url = c.getenv(envURL)
	}
	if url == "" && haveCreds && (f.creds != "" || c.getenv(envCreds) != "") {
		url = creds.URL
		if prefix == "" {
			prefix = creds.Prefix
		}
	}
	if url == "" {
		path, err := c.statePath()
		if err != nil {
			return nil, noNodeRunning(err)
		}
		st, err := serving.ReadState(path)
		if err != nil {
			return nil, errState(path, err)
		}
		url, active, registered = st.Bus, st.Active, &st
		if prefix == "" {
			prefix = st.Prefix
		}
	}
	subj, err := protocol.NewSubjects(prefix)
	if err != nil {
		return nil, usagef("--prefix: %v", err)
	}
	opts.URL, opts.Prefix, opts.Name = url, subj.Prefix, "framebus-cli"
	switch user := urlUser(url); {
	case user != "":
		// The URL logs in; that user's replies come to its own inboxes.
		opts.Credentials = &protocol.Credentials{InboxPrefix: protocol.InboxPrefix(user)}
	case haveCreds:
		opts.Credentials = &creds
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = connectTimeout
	}
	bc, err := busclient.Connect(c.ctx, opts)
	var stranger *busclient.StrangerBusError
	switch {
	case protocol.CodeOf(err) == protocol.CodePermissionDenied:
		return nil, err // the bus refused the login: say so, not "no node"
	case errors.As(err, &stranger):
		return nil, err // another account's listener at the bus's port: say whose
	case err != nil && registered != nil:
		return nil, errNotAnswering(*registered, err)
	case err != nil:
		return nil, noNodeRunning(err)
	}
	return &client{bc: bc, subj: subj, creds: creds, active: active}, nil
}

// urlUser is the user a bus URL logs in as, "" for none.
func urlUser(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	return u.User.Username()
}

func (cl *client) close() { cl.bc.Close() }

// busError is the error of a request that got no answer: the node's
// refusal of the user's role as it is, else what noReply makes of it.
func busError(err error, noReply func(error) error) error {
	if protocol.CodeOf(err) == protocol.CodePermissionDenied {
		return err
	}
	return noReply(err)
}

// tabs asks every node on the bus for its tabs and gathers their answers.
func (cl *client) tabs(ctx context.Context) (protocol.TabList, error) {
	ctx, cancel := context.WithTimeout(ctx, tabsTimeout)
	defer cancel()
	list, err := cl.bc.Tabs(ctx)
	switch {
	case err != nil && interrupted(ctx):
		return protocol.TabList{}, errInterrupted("the node to list its tabs", "nothing was sent to a tab")
	case err != nil:
		return protocol.TabList{}, busError(err, errNoNode)
	}
	return list, nil
}

// resolveTab is the tab given, else the one tab select (or session
// start) chose, else, when none was chosen, the first one the node lists.
// A chosen tab that is no longer open is an error, never a reason to act
// on another tab: the next command might type a password into it.
func (cl *client) resolveTab(ctx context.Context, tab string) (string, error) {
	if tab != "" {
		return tab, nil // checked by dial
	}
	list, err := cl.tabs(ctx)
	if err != nil {
		return "", err
	}
	if len(list.Tabs) == 0 {
		return "", protocol.Errorf(protocol.CodeTabNotFound, "the node on the bus has no tabs (open one with: framebus tab new; if its browser was closed, start it with: framebus launch)")
	}
	if cl.active != "" {
		return cl.selectedTab(ctx, list.Tabs)
	}
	return list.Tabs[0].Tab, nil
}

// selectedTab is the tab chosen with tab select, as long as a node still
// takes plans for it: the node that listed the tabs may not be the one
// that has it.
func (cl *client) selectedTab(ctx context.Context, listed []protocol.TabInfo) (string, error) {
	for _, t := range listed {
		if t.Tab == cl.active {
			return t.Tab, nil
		}
	}
	code, why := cl.tabGone(ctx, cl.active)
	if code == "" {
		return cl.active, nil
	}
	return "", protocol.Errorf(code,
		"the selected tab %s is no longer open (%s); choose another with: framebus tab select <id>, or give --tab <id> (open: %s)",
		cl.active, why, describeTabs(listed))
}

// tabGone sends tab's plan subject an empty request, which a live tab
// answers bad_request and a tab whose browser was closed answers
// browser_not_running. It returns the code for a tab that is gone and
// why, or "" for one that is there (also one too busy to answer in time).
func (cl *client) tabGone(ctx context.Context, tab string) (protocol.Code, string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	data, err := cl.bc.RequestData(ctx, cl.subj.TabPlan(tab), nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return protocol.CodeTabNotFound, "it was closed, or its browser or session was"
	case err != nil:
		return "", ""
	}
	var reply errorReply
	if json.Unmarshal(data, &reply) == nil && reply.Code == protocol.CodeBrowserNotRunning {
		// Starting the browser again would not bring this tab back.
		return protocol.CodeBrowserNotRunning, "its browser was closed; starting it again opens new tabs"
	}
	return "", ""
}

// tabNotFound says that nobody takes plans for tab: which tabs the nodes
// on the bus have, or that the node that had it is gone
// (busclient.Client.TabNotFound).
func (cl *client) tabNotFound(ctx context.Context, tab string) error {
	err := cl.bc.TabNotFound(ctx, tab, nats.ErrNoResponders)
	if protocol.CodeOf(err) == protocol.CodeUnavailable {
		return errNoNode(err)
	}
	return err
}

// checkTab finds out whether any node takes plans for tab, on whichever
// node it is: an empty request is answered (bad_request) by the tab, and
// refused by NATS at once when nobody subscribes.
func (cl *client) checkTab(ctx context.Context, tab string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := cl.bc.RequestData(ctx, cl.subj.TabPlan(tab), nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		if err := cl.tabNotFound(ctx, tab); !errors.Is(err, busclient.ErrTabNotHereYet) {
			return err
		}
		return nil // a live node has it; its subscription is on its way here
	case protocol.CodeOf(err) == protocol.CodePermissionDenied:
		return nil // an observer may not send plans, and watches all the same
	}
	return nil // an answer, or a tab too busy to give one: it is there
}

// sendPlan sends an encoded plan to a tab and returns its decoded result
// and the reply as the node sent it.
//
// A plan without an id is given one, so that an interrupted command can
// cancel it on the node.
func (cl *client) sendPlan(ctx context.Context, tab string, data []byte, plan protocol.Plan) (protocol.PlanResult, []byte, error) {
	if plan.ID == "" {
		var err error
		if data, plan.ID, err = busclient.WithPlanID(data); err != nil {
			return protocol.PlanResult{}, nil, err
		}
	}
	// One wait decides both how long the command waits and the plan's
	// deadline (bus/client sets it from the context, a moment before).
	rctx, cancel := context.WithTimeout(ctx, plan.Wait())
	defer cancel()
	res, raw, err := cl.bc.PlanData(rctx, tab, data)
	switch {
	case err == nil:
		return res, raw, nil
	case protocol.CodeOf(err) == protocol.CodeTabNotFound, protocol.CodeOf(err) == protocol.CodeNodeUnavailable:
		return protocol.PlanResult{}, nil, err
	case ctx.Err() != nil:
		return protocol.PlanResult{}, nil, cl.cancelPlan(tab, plan.ID)
	}
	// outcome_unknown (sent, no answer) as the client says it; nothing
	// answering is no node.
	return protocol.PlanResult{}, nil, busError(err, errNoNode)
}

// cancelTimeout bounds the cancel request an interrupted command sends.
const cancelTimeout = 2 * time.Second

// cancelPlan cancels the plan an interrupted command was waiting for, and
// is the command's error: it says how far the cancel got.
func (cl *client) cancelPlan(tab, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	reply, err := cl.bc.Cancel(ctx, tab, id)
	switch {
	case err != nil || !reply.OK:
		return errInterrupted("tab "+tab+" to answer the plan", "the plan may still run (cancelling it failed)")
	case reply.Cancelled:
		return protocol.Errorf(protocol.CodeCancelled, "interrupted (Ctrl-C or a signal): plan %s was cancelled on tab %s, cut short where it was", id, tab)
	}
	return protocol.Errorf(protocol.CodeCancelled, "interrupted (Ctrl-C or a signal): plan %s had not started on tab %s, or had just ended; if it has not, it will not run", id, tab)
}

// describeTabs is a short human list of tabs for logs.
func describeTabs(tabs []protocol.TabInfo) string {
	var parts []string
	for _, t := range tabs {
		parts = append(parts, fmt.Sprintf("%s (%s)", t.Tab, t.URL))
	}
	return strings.Join(parts, ", ")
}
