package client

import (
	"cmp"
	"context"
	"time"

	"github.com/framebus/framebus/protocol"
)

// tabsWait bounds a tabs request with no deadline of its own: every
// node answers it at once.
const tabsWait = 5 * time.Second

// Tabs lists the tabs of the first node that answers.
func (c *Client) Tabs(ctx context.Context) (protocol.TabList, error) {
	ctx, cancel := withDefaultTimeout(ctx, tabsWait)
	defer cancel()
	var list protocol.TabList
	err := c.Request(ctx, c.subj.Tabs(), nil, &list)
	return list, err
}

// Status is the status of every profile of the node.
func (c *Client) Status(ctx context.Context) (protocol.StatusReply, error) {
	var st protocol.StatusReply
	err := c.Request(ctx, c.subj.BrowserStatus(), nil, &st)
	return st, err
}

// Lifecycle sends a profile's lifecycle request (protocol.Op*; profile
// "" is the default one) and decodes the answer into reply: a
// StatusReply for status, launch, connect and close, a TabReply for
// newtab and closetab.
func (c *Client) Lifecycle(ctx context.Context, profile, op string, req, reply any) error {
	return c.Request(ctx, c.subj.Profile(cmp.Or(profile, protocol.DefaultProfile), op), req, reply)
}

// NewTab opens a tab at url (about:blank for "") in profile.
func (c *Client) NewTab(ctx context.Context, profile, url string) (protocol.TabInfo, error) {
	var reply protocol.TabReply
	err := c.Lifecycle(ctx, profile, protocol.OpNewTab, protocol.NewTabRequest{URL: url}, &reply)
	return reply.Tab, err
}

// CloseTab closes a tab of profile.
func (c *Client) CloseTab(ctx context.Context, profile, tab string) (protocol.TabInfo, error) {
	var reply protocol.TabReply
	err := c.Lifecycle(ctx, profile, protocol.OpCloseTab, protocol.CloseTabRequest{Tab: tab}, &reply)
	return reply.Tab, err
}

// StartSession starts the session of a domain.
func (c *Client) StartSession(ctx context.Context, req protocol.SessionStartRequest) (protocol.SessionReply, error) {
	var reply protocol.SessionReply
	err := c.Request(ctx, c.subj.SessionStart(), req, &reply)
	return reply, err
}

// StopSession stops a session.
func (c *Client) StopSession(ctx context.Context, id string) (protocol.SessionReply, error) {
	var reply protocol.SessionReply
	err := c.Request(ctx, c.subj.SessionStop(id), nil, &reply)
	return reply, err
}

// Sessions lists the sessions.
func (c *Client) Sessions(ctx context.Context) (protocol.SessionList, error) {
	var reply protocol.SessionList
	err := c.Request(ctx, c.subj.SessionList(), nil, &reply)
	return reply, err
}

// withDefaultTimeout bounds ctx by d unless it has a deadline already.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
