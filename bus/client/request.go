package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// errDisconnected cancels a call whose connection was lost.
var errDisconnected = errors.New("the bus connection was lost")

// RequestData sends data to subject and returns the reply's data.
//
// While the connection is down it waits (bounded by ctx) and then
// sends. When the connection is lost while it waits for the answer, a
// request that only reads (a frame's content, a profile's status or
// pages) is sent again once it is back; any other fails with
// unavailable: the node may have carried the request out, and whether
// sending it again is safe is the caller's to know (Plan knows).
// Nothing answering is an unavailable error for which
// errors.Is(err, nats.ErrNoResponders) holds; a permission the user
// lacks is permission_denied, at once.
func (c *Client) RequestData(ctx context.Context, subject string, data []byte) ([]byte, error) {
	return c.roundTrip(ctx, subject, data, c.subj.ReadOnly(subject))
}

// Request sends req (JSON; nothing for nil, as it is for []byte) to
// subject and decodes the reply into reply (when not nil). A reply
// {"ok":false,...} is returned as a *protocol.Error with its code, reply
// decoded all the same.
func (c *Client) Request(ctx context.Context, subject string, req, reply any) error {
	var data []byte
	switch r := req.(type) {
	case nil:
	case []byte:
		data = r
	case json.RawMessage:
		data = r
	default:
		var err error
		if data, err = protocol.Marshal(req); err != nil {
			return protocol.Errorf(protocol.CodeBadRequest, "request to %s: %v", subject, err)
		}
	}
	out, err := c.RequestData(ctx, subject, data)
	if err != nil {
		return err
	}
	return decodeReply(subject, out, reply)
}

// decodeReply decodes a node's reply into reply and turns ok false into
// its error.
func decodeReply(subject string, data []byte, reply any) error {
	var head protocol.ErrorReply
	if err := json.Unmarshal(data, &head); err != nil {
		return protocol.Errorf(protocol.CodeInternal, "the reply on %s is not JSON: %v", subject, err)
	}
	if reply != nil {
		if err := json.Unmarshal(data, reply); err != nil {
			return protocol.Errorf(protocol.CodeInternal, "the reply on %s: %v", subject, err)
		}
	}
	if !head.OK {
		return &protocol.Error{Code: cmp.Or(head.Code, protocol.CodeInternal), Message: head.Error}
	}
	return nil
}

// roundTrip sends one request and waits for its answer. resend says the
// request may be sent again after a reconnect when no answer came (the
// node recognises it as the same request).
func (c *Client) roundTrip(ctx context.Context, subject string, data []byte, resend bool) ([]byte, error) {
	msg, err := c.roundTripMsg(ctx, &nats.Msg{Subject: subject, Data: data}, resend)
	if err != nil {
		return nil, err
	}
	return msg.Data, nil
}

// roundTripMsg is roundTrip for a request with headers, and answers the
// reply with its own.
func (c *Client) roundTripMsg(ctx context.Context, req *nats.Msg, resend bool) (*nats.Msg, error) {
	return c.exchange(ctx, req, resend, nil)
}

// exchange is roundTripMsg that also counts in *sent (when not nil) the
// sends that may have reached the request's subscriber: it was published,
// and neither NATS (no responders) nor the server (a permission) turned
// it away.
func (c *Client) exchange(ctx context.Context, req *nats.Msg, resend bool, sent *int) (*nats.Msg, error) {
	subject := req.Subject
	for {
		down, err := c.awaitConnected(ctx, "the request to "+subject)
		if err != nil {
			return nil, err
		}
		if ctx.Err() != nil { // not published at all
			return nil, protocol.Errorf(protocol.CodeTimeout, "no answer on %s: %w", subject, ctx.Err())
		}
		msg, cause, err := c.requestOnce(ctx, down, req)
		if sent != nil && !errors.Is(err, nats.ErrNoResponders) && protocol.CodeOf(cause) != protocol.CodePermissionDenied {
			*sent++
		}
		switch {
		case err == nil:
			return msg, nil
		case errors.Is(err, nats.ErrNoResponders) && c.justReconnected():
			// The node's subscriptions come back with its own
			// reconnect, which may come a moment after this one.
			if err := sleepCtx(ctx, noRespondersRetry); err != nil {
				return nil, protocol.Errorf(protocol.CodeTimeout, "no answer on %s: %w", subject, err)
			}
			continue
		case errors.Is(err, nats.ErrNoResponders):
			return nil, &protocol.Error{Code: protocol.CodeUnavailable,
				Message: "nothing on the bus answers " + subject, Err: err}
		case ctx.Err() != nil:
			return nil, protocol.Errorf(protocol.CodeTimeout, "no answer on %s: %w", subject, ctx.Err())
		case protocol.CodeOf(cause) == protocol.CodePermissionDenied, cause == errClosed:
			return nil, cause
		case errors.Is(err, nats.ErrConnectionClosed):
			return nil, c.closeErr()
		case resend && (cause == errDisconnected || errors.Is(err, nats.ErrReconnectBufExceeded)):
			continue // wait for the connection, then send it again
		case cause == errDisconnected:
			return nil, protocol.Errorf(protocol.CodeUnavailable,
				"the bus connection was lost while waiting for the answer on %s; the node may have carried the request out", subject)
		}
		return nil, &protocol.Error{Code: protocol.CodeUnavailable,
			Message: fmt.Sprintf("request to %s: %v", subject, err), Err: err}
	}
}

// requestOnce sends one request on the connection down belongs to. The
// request ends early, with cause, when that connection is lost or the
// server refuses the publish.
func (c *Client) requestOnce(ctx context.Context, down <-chan struct{}, req *nats.Msg) (msg *nats.Msg, cause, err error) {
	subject := req.Subject
	refusals, stop := c.perms.watch(c.subjectIs(subject))
	defer stop()
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-down:
			cancel(errDisconnected)
		case err := <-refusals:
			cancel(err)
		case <-rctx.Done():
		}
	}()
	msg, err = c.nc.RequestMsgWithContext(rctx, req)
	return msg, context.Cause(rctx), err
}

// After a reconnect, nothing answering a subject may only mean that its
// node has not reconnected yet: for reconnectGrace a request is sent
// again every noRespondersRetry before it is taken for an absent node.
const (
	reconnectGrace    = 3 * time.Second
	noRespondersRetry = 50 * time.Millisecond
)

// justReconnected reports whether the connection came back within
// reconnectGrace.
func (c *Client) justReconnected() bool {
	at := c.reconnectedAt.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < reconnectGrace
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
