package client

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"time"
	"unsafe"

	"github.com/framebus/framebus/protocol"
	"github.com/nats-io/nats.go"
)

// Tabs lists the tabs of every node, gathered (see GatherWait): Nodes
// says which nodes answered and which the registry names but did not.
func (c *Client) Tabs(ctx context.Context) (protocol.TabList, error) {
	lists, nodes, err := gatherAs[protocol.TabList](ctx, c, c.subj.Tabs())
	if err != nil {
		return protocol.TabList{}, err
	}
	out := protocol.TabList{OK: true, Tabs: []protocol.TabInfo{}, Nodes: nodes}
	for _, l := range lists {
		c.tabNodes.listed(l.Node, l.Tabs)
		out.Tabs = append(out.Tabs, l.Tabs...)
	}
	if len(lists) == 1 {
		out.Node = lists[0].Node
	}
	return out, nil
}

// Pages lists the tabs of a profile ("" is the default one): on every
// node that has it (gathered, as Tabs), or on one node when node is set.
func (c *Client) Pages(ctx context.Context, node, profile string) (protocol.TabList, error) {
	profile = cmp.Or(profile, protocol.DefaultProfile)
	if node != "" {
		var list protocol.TabList
		err := c.NodeLifecycle(ctx, node, profile, protocol.OpPages, nil, &list)
		c.tabNodes.listed(list.Node, list.Tabs)
		return list, err
	}
	all, err := c.Tabs(ctx)
	if err != nil {
		return all, err
	}
	all.Tabs = slices.DeleteFunc(all.Tabs, func(t protocol.TabInfo) bool { return t.Profile != profile })
	return all, nil
}

// Status is the status of every profile of every node, gathered (as
// Tabs).
func (c *Client) Status(ctx context.Context) (protocol.StatusReply, error) {
	replies, nodes, err := gatherAs[protocol.StatusReply](ctx, c, c.subj.BrowserStatus())
	if err != nil {
		return protocol.StatusReply{}, err
	}
	out := protocol.StatusReply{OK: true, Profiles: []protocol.ProfileStatus{}, Nodes: nodes}
	limits := map[string]*protocol.NodeLimits{}
	for _, r := range replies {
		out.Profiles = append(out.Profiles, r.Profiles...)
		limits[r.Node] = r.Limits
	}
	for i := range out.Nodes {
		out.Nodes[i].Limits = limits[out.Nodes[i].Node]
	}
	if len(replies) == 1 {
		out.Node, out.Limits = replies[0].Node, replies[0].Limits
	}
	return out, nil
}

// Lifecycle sends a profile's lifecycle request (protocol.Op*; profile
// "" is the default one) to any node that has the profile, and decodes
// the answer into reply: a StatusReply for status, launch, connect and
// close, a TabReply for newtab and closetab.
func (c *Client) Lifecycle(ctx context.Context, profile, op string, req, reply any) error {
	return c.NodeLifecycle(ctx, "", profile, op, req, reply)
}

// NodeLifecycle is Lifecycle on the node called node ("": any node that
// has the profile). A node that does not answer is node_unavailable.
func (c *Client) NodeLifecycle(ctx context.Context, node, profile, op string, req, reply any) error {
	profile = cmp.Or(profile, protocol.DefaultProfile)
	if node == "" {
		return c.Request(ctx, c.subj.Profile(profile, op), req, reply)
	}
	if err := protocol.CheckNodeName(node); err != nil {
		return err
	}
	err := c.Request(ctx, c.subj.NodeProfile(node, profile, op), req, reply)
	if errNoAnswer(err) {
		return c.nodeGone(node, "profile "+profile, err)
	}
	return err
}

// NewTab opens a tab at url (about:blank for "") in profile, on any
// node that has the profile.
func (c *Client) NewTab(ctx context.Context, profile, url string) (protocol.TabInfo, error) {
	return c.NewTabOn(ctx, "", profile, url)
}

// NewTabOn is NewTab on the node called node ("": any).
func (c *Client) NewTabOn(ctx context.Context, node, profile, url string) (protocol.TabInfo, error) {
	var reply protocol.TabReply
	err := c.NodeLifecycle(ctx, node, profile, protocol.OpNewTab, protocol.NewTabRequest{URL: url}, &reply)
	c.tabNodes.seen(reply.Tab)
	return reply.Tab, err
}

// CloseTab closes a tab of profile, on the node that listed it last (any
// node that has the profile when none did).
func (c *Client) CloseTab(ctx context.Context, profile, tab string) (protocol.TabInfo, error) {
	var reply protocol.TabReply
	err := c.NodeLifecycle(ctx, c.tabNodes.nodeOf(tab), profile, protocol.OpCloseTab, protocol.CloseTabRequest{Tab: tab}, &reply)
	return reply.Tab, err
}

// StartSession starts the session of a domain.
func (c *Client) StartSession(ctx context.Context, req protocol.SessionStartRequest) (protocol.SessionReply, error) {
	var reply protocol.SessionReply
	err := c.Request(ctx, c.subj.SessionStart(), req, &reply)
	for _, t := range reply.Tabs {
		c.tabNodes.seen(t)
	}
	return reply, err
}

// StopSession stops a session.
func (c *Client) StopSession(ctx context.Context, id string) (protocol.SessionReply, error) {
	var reply protocol.SessionReply
	err := c.Request(ctx, c.subj.SessionStop(id), nil, &reply)
	return reply, err
}

// Sessions lists the sessions of every node, gathered (as Tabs), and
// those of nodes that are gone (State protocol.NodeUnreachable).
func (c *Client) Sessions(ctx context.Context) (protocol.SessionList, error) {
	lists, nodes, err := gatherAs[protocol.SessionList](ctx, c, c.subj.SessionList())
	if err != nil {
		return protocol.SessionList{}, err
	}
	out := protocol.SessionList{OK: true, Sessions: []protocol.SessionInfo{}, Nodes: nodes}
	// Every node lists the sessions of the nodes that are gone: keep one
	// of each, and a session that runs over one said to be unreachable
	// (an answer from before its node came back).
	at := map[string]int{}
	for _, l := range lists {
		for _, s := range l.Sessions {
			i, seen := at[s.Session]
			switch {
			case !seen:
				at[s.Session] = len(out.Sessions)
				out.Sessions = append(out.Sessions, s)
			case out.Sessions[i].State != "" && s.State == "":
				out.Sessions[i] = s
			}
		}
	}
	if len(lists) == 1 {
		out.Node = lists[0].Node
	}
	return out, nil
}

// withDefaultTimeout bounds ctx by d unless it has a deadline already.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// Fetch asks the http resource (any node) for one HTTP request. The
// request's timeout, or the action default, bounds it when ctx has a
// later deadline.
func (c *Client) Fetch(ctx context.Context, req protocol.FetchRequest) (protocol.FetchReply, error) {
	var reply protocol.FetchReply
	ctx, cancel := resourceDeadline(ctx, req.Timeout, "fetch")
	defer cancel()
	data, err := protocol.Marshal(req)
	if err != nil {
		return reply, protocol.Errorf(protocol.CodeBadRequest, "fetch: %v", err)
	}
	// The body comes outside the JSON (protocol.HeaderBody): a large one
	// costs no escaping and parsing.
	out, err := c.roundTripMsg(ctx, &nats.Msg{Subject: c.subj.HTTPFetch(), Data: data,
		Header: nats.Header{protocol.HeaderBody: {protocol.BodyRaw}}}, false)
	if err != nil {
		return reply, err
	}
	head := out.Header.Get(protocol.HeaderReply)
	if head == "" { // an error, or a node that sends the body in the JSON
		err := decodeReply(c.subj.HTTPFetch(), out.Data, &reply)
		return reply, err
	}
	if err := json.Unmarshal([]byte(head), &reply); err != nil {
		return reply, protocol.Errorf(protocol.CodeInternal, "the reply on %s: %v", c.subj.HTTPFetch(), err)
	}
	// The payload is this reply's alone (nats.go gives each message its
	// own), so the body is its bytes, not a copy of 100 KB.
	reply.Body = unsafe.String(unsafe.SliceData(out.Data), len(out.Data))
	if reply.Encoding == "base64" {
		reply.Body = base64.StdEncoding.EncodeToString(out.Data)
	}
	return reply, nil
}

// Search asks the search resource (any node) for results.
func (c *Client) Search(ctx context.Context, req protocol.SearchRequest) (protocol.SearchReply, error) {
	var reply protocol.SearchReply
	ctx, cancel := resourceDeadline(ctx, req.Timeout, "search")
	defer cancel()
	err := c.Request(ctx, c.subj.SearchQuery(), req, &reply)
	return reply, err
}

// resourceDeadline bounds a resource request: the request's own timeout
// (else the action's default) and a few seconds for the bus, so the
// node's timeout answers first.
func resourceDeadline(ctx context.Context, timeout protocol.Duration, action string) (context.Context, context.CancelFunc) {
	wait := protocol.Action{Type: action, Timeout: timeout}.EffectiveTimeout()
	return context.WithTimeout(ctx, wait+5*time.Second)
}
