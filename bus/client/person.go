package client

import (
	"context"

	"github.com/framebus/framebus/protocol"
)

// People in the loop (docs/people.md): a person takes a tab over, acts in
// it, hands it back, and answers agents' questions. Each needs a role
// that may (operator or admin; an agent hands back and answers only its
// own handoff and question); an observer's request is refused by the bus.

// TakeOver puts tab under the control of the person by: plans that would
// change it get user_control until HandBack. During an agent's handoff it
// claims the handoff for by. message says why, for others watching.
func (c *Client) TakeOver(ctx context.Context, tab, by, message string) (protocol.ControlReply, error) {
	return c.control(ctx, tab, protocol.ControlRequest{Op: protocol.ControlTakeover, By: by, Message: message})
}

// HandBack gives tab back to the agents (ends a handoff or a takeover):
// its handback frame is the one they plan from.
func (c *Client) HandBack(ctx context.Context, tab, by string) (protocol.ControlReply, error) {
	return c.control(ctx, tab, protocol.ControlRequest{Op: protocol.ControlHandback, By: by})
}

func (c *Client) control(ctx context.Context, tab string, req protocol.ControlRequest) (protocol.ControlReply, error) {
	var reply protocol.ControlReply
	err := c.reachTab(ctx, tab, func() error {
		return c.Request(ctx, c.subj.TabControl(tab), req, &reply)
	})
	return reply, err
}

// Input sends a person's input to a tab they control (TakeOver first).
// It is sent once: input is never repeated after a lost answer.
func (c *Client) Input(ctx context.Context, tab string, req protocol.InputRequest) (protocol.InputReply, error) {
	var reply protocol.InputReply
	err := c.reachTab(ctx, tab, func() error {
		return c.Request(ctx, c.subj.TabInput(tab), req, &reply)
	})
	return reply, err
}

// Answer answers a question an agent asked on tab (its id may be left
// out when the tab has one open).
func (c *Client) Answer(ctx context.Context, tab string, req protocol.AnswerRequest) error {
	return c.reachTab(ctx, tab, func() error {
		return c.Request(ctx, c.subj.TabAnswer(tab), req, nil)
	})
}
