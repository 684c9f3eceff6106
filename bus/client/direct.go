package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// The client reads the node's streams with JetStream direct gets only:
// no consumer is ever made. An agent or observer lives in a NATS account
// of its own that imports no consumer API (a push consumer made from a
// user's request delivers in the node's account, wherever the user says;
// see docs/security.md), only the stream info and direct gets of the
// frame stream and the content bucket's stream, under its own API
// prefix (protocol.Credentials.JSAPIPrefix).

// directRequest is the part of nats-server's JSApiMsgGetRequest (the
// body of $JS.API.DIRECT.GET.<stream>) this client uses.
type directRequest struct {
	// Seq is where to start (with NextFor: the first message at or
	// after it on that subject).
	Seq     uint64 `json:"seq,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
	// LastFor asks for the last message on a subject (">": the
	// stream's last).
	LastFor string `json:"last_by_subj,omitempty"`
	// Batch asks for up to Batch messages, then an end-of-batch status;
	// the server stops early past MaxBytes (after the message that
	// crossed it).
	Batch    int `json:"batch,omitempty"`
	MaxBytes int `json:"max_bytes,omitempty"`
	// MultiLast asks for the last message of every subject matching
	// these (at most 1024 subjects, else the server refuses with 413).
	MultiLast []string `json:"multi_last,omitempty"`
	// UpToSeq bounds a multi_last (batch gets ignore it).
	UpToSeq uint64 `json:"up_to_seq,omitempty"`
}

// Bounds of one batch: its answers are all in the client's subscription
// before they are read, so a batch is kept to what is cheap to hold.
const (
	directBatch    = 512
	directMaxBytes = 8 << 20
)

// storedMsg is a stream message as a direct get answered it.
type storedMsg struct {
	Subject  string
	Sequence uint64
	// Header is the header the message was stored with: the answer's
	// own Nats-Stream, Nats-Subject, Nats-Sequence... are taken off. A
	// message that is itself a JetStream answer (one a user aimed at a
	// stream's subject) keeps the ones it was stored with.
	Header nats.Header
	Data   []byte
}

// The headers a direct get's answer adds after the stored ones; a
// batch's answers add two more.
var (
	directHeaders = []string{"Nats-Stream", "Nats-Subject", "Nats-Sequence", "Nats-Time-Stamp"}
	batchHeaders  = append(directHeaders[:len(directHeaders):len(directHeaders)], "Nats-Num-Pending", "Nats-Last-Sequence")
)

// batchEnd is what a batch's end-of-batch status says.
type batchEnd struct {
	pending uint64 // messages that match after the batch's last
	last    uint64 // the stream sequence of the batch's last message
	upTo    uint64 // multi_last: the stream's last sequence it looked at
}

// errNotStored is the error of a direct get that found nothing (404).
var errNotStored = errors.New("no such message in the stream")

// apiSubject is the subject of a JetStream API call: the credentials'
// API prefix (an agent's or observer's account imports the node's API
// there), or $JS.API.
func (c *Client) apiSubject(call string) string {
	return cmp.Or(c.creds.JSAPIPrefix, "$JS.API") + "." + call
}

// jsCallWait bounds a JetStream API call whose context has no deadline.
const jsCallWait = 10 * time.Second

// jsCall runs a JetStream API call and fails it at once, with
// permission_denied, when the server refuses it.
func (c *Client) jsCall(ctx context.Context, call func(context.Context) error) error {
	return c.guarded(ctx, c.jetStreamCalls, call)
}

// guarded runs call and fails it at once with the permission error of a
// refusal match takes for its own.
func (c *Client) guarded(ctx context.Context, match func(subscribe bool, subject string) bool, call func(context.Context) error) error {
	if _, err := c.awaitConnected(ctx, "the frame history"); err != nil {
		return err
	}
	refusals, stop := c.perms.watch(match)
	defer stop()
	ctx, cancelWait := withDefaultTimeout(ctx, jsCallWait) // the JetStream API wants a deadline
	defer cancelWait()
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case err := <-refusals:
			cancel(err)
		case <-rctx.Done():
		}
	}()
	err := call(rctx)
	if cause := context.Cause(rctx); err != nil && protocol.CodeOf(cause) == protocol.CodePermissionDenied {
		return cause
	}
	if err != nil && ctx.Err() != nil {
		return protocol.Errorf(protocol.CodeTimeout, "the frame history: %w", ctx.Err())
	}
	if err != nil && protocol.CodeOf(err) == protocol.CodeInternal {
		var perr *protocol.Error
		if !errors.As(err, &perr) {
			return &protocol.Error{Code: protocol.CodeUnavailable, Message: "the frame history: " + err.Error(), Err: err}
		}
	}
	return err
}

// directGet asks stream for one message: the one at req.Seq, the next
// on req.NextFor. errNotStored when there is none.
func (c *Client) directGet(ctx context.Context, stream string, req directRequest) (storedMsg, error) {
	msgs, _, err := c.direct(ctx, c.apiSubject("DIRECT.GET."+stream), req, false)
	if err != nil {
		return storedMsg{}, err
	}
	return msgs[0], nil
}

// directLast is the last message of stream on subject; errNotStored
// when there is none.
func (c *Client) directLast(ctx context.Context, stream, subject string) (storedMsg, error) {
	msgs, _, err := c.direct(ctx, c.apiSubject("DIRECT.GET."+stream+"."+subject), nil, false)
	if err != nil {
		return storedMsg{}, err
	}
	return msgs[0], nil
}

// directBatch asks stream for a batch (req.Batch messages, or the last
// of each subject for req.MultiLast): its messages, in stream order,
// and what its end says. errNotStored when nothing matches.
func (c *Client) directBatch(ctx context.Context, stream string, req directRequest) ([]storedMsg, batchEnd, error) {
	return c.direct(ctx, c.apiSubject("DIRECT.GET."+stream), req, true)
}

// direct sends one direct get and reads its answers on an inbox of its
// own until the one answer (batch false) or the end-of-batch status.
// Every wait is bounded by ctx (jsCallWait when it has no deadline); a
// refused call is permission_denied at once, a lost connection
// unavailable at once (the answers would not come).
//
// Every replica of a stream answers direct gets (one of a queue group),
// and one that is frozen (a stopped process, a swapped VM) takes its
// share and answers nothing: a get with no first answer within
// directTry is sent again (with twice the wait each time, at most
// directTryMax), to whichever replica the server picks then, and the
// first try to answer is read. The earlier tries are still listened to,
// so a replica that is only slow still answers in the end. A get reads
// and changes nothing: the other tries' answers go to inboxes no one
// reads.
func (c *Client) direct(ctx context.Context, subject string, req any, batch bool) ([]storedMsg, batchEnd, error) {
	var body []byte
	if req != nil {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return nil, batchEnd{}, protocol.Errorf(protocol.CodeInternal, "direct get: %v", err)
		}
	}
	var msgs []storedMsg
	var end batchEnd
	unserved := time.Now().Add(directUnserved)
	err := c.jsCall(ctx, func(ctx context.Context) error {
		for {
			var err error
			msgs, end, err = c.directOnce(ctx, subject, body, req, batch)
			if !errors.Is(err, nats.ErrNoResponders) || time.Now().After(unserved) || sleepCtx(ctx, directTry) != nil {
				return err
			}
		}
	})
	return msgs, end, err
}

// directUnserved is how long a direct get answered "no responders" is
// asked again: a stream just made, or one whose replicas are changing,
// answers direct gets a moment after it answers its API (a frames read
// sent right after the stream's first frames were acked got 503). A bus
// with no frame stream at all is told apart before, by the stream's
// info (historyBounds).
const directUnserved = 2 * time.Second

// directOnce is one direct get (see direct), with its tries.
func (c *Client) directOnce(ctx context.Context, subject string, body []byte, req any, batch bool) ([]storedMsg, batchEnd, error) {
	down, err := c.awaitConnected(ctx, "the frame history")
	if err != nil {
		return nil, batchEnd{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-down:
			cancel(errDisconnected)
		case <-ctx.Done():
		}
	}()
	answers, m, err := c.directTries(ctx, subject, body, answersOf(req))
	if err != nil {
		return nil, batchEnd{}, err
	}
	var msgs []storedMsg
	for {
		if len(m.Header.Values("Nats-Stream")) == 0 { // a status: every stored message has one
			end, err := directStatus(subject, m.Header)
			return msgs, end, err
		}
		msgs = append(msgs, storedOf(m, batch))
		if !batch {
			return msgs, batchEnd{}, nil
		}
		select {
		case m = <-answers:
		case <-ctx.Done():
			return msgs, batchEnd{}, directEnded(ctx)
		}
	}
}

// directTry is how long a direct get waits for its first answer before
// it is sent again, doubling each time up to directTryMax.
const (
	directTry    = 100 * time.Millisecond
	directTryMax = time.Second
)

// directTries sends a direct get, and again while no try has answered
// (see direct): the answers of the first try that answers, and its
// first answer. Its answers come on until ctx ends.
func (c *Client) directTries(ctx context.Context, subject string, body []byte, n int) (<-chan *nats.Msg, *nats.Msg, error) {
	type answered struct {
		first   *nats.Msg
		answers <-chan *nats.Msg
	}
	firsts := make(chan answered)
	stop := make(chan struct{})
	var mu sync.Mutex // forget, and whether stop is closed
	var forget []func()
	send := func() error {
		answers, reply, done, err := c.replies.open(c.nc, n)
		if err != nil {
			return err
		}
		mu.Lock()
		if stopped(stop) {
			mu.Unlock()
			done()
			return directEnded(ctx)
		}
		forget = append(forget, done)
		mu.Unlock()
		if err := c.nc.PublishRequest(subject, reply, body); err != nil {
			return err
		}
		go func() {
			select {
			case m := <-answers:
				select {
				case firsts <- answered{first: m, answers: answers}:
				case <-stop:
				}
			case <-stop:
			}
		}()
		return nil
	}
	ended := func() {
		mu.Lock()
		defer mu.Unlock()
		close(stop)
		for _, done := range forget {
			done()
		}
		forget = nil
	}
	go func() { <-ctx.Done(); ended() }() // the chosen try's inbox is forgotten with the others then
	if err := send(); err != nil {
		return nil, nil, err
	}
	wait := directTry
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case a := <-firsts:
			return a.answers, a.first, nil
		case <-timer.C:
			if err := send(); err != nil {
				return nil, nil, err
			}
			wait = min(2*wait, directTryMax)
			timer.Reset(wait)
		case <-ctx.Done():
			return nil, nil, directEnded(ctx)
		}
	}
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// directEnded is a direct get's error when ctx ended.
func directEnded(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errDisconnected) {
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: "the bus connection was lost while reading the frame history", Err: errDisconnected}
	}
	return ctx.Err()
}

// answersOf is how many messages can answer req: its batch and the
// end-of-batch status.
func answersOf(req any) int {
	if r, ok := req.(directRequest); ok && r.Batch > 0 {
		return r.Batch + 1
	}
	return 1
}

// replyInboxes routes the answers of direct gets, many per request for
// a batch, from one subscription of the client (as nats.go's requests
// share one): a subscription per request costs the server much more
// than the request itself.
type replyInboxes struct {
	mu      sync.Mutex
	prefix  string // <inbox>.
	sub     *nats.Subscription
	next    uint64
	waiting map[string]chan *nats.Msg
}

// open is a reply subject of its own and the channel its answers come
// on (room for n); done forgets it.
func (r *replyInboxes) open(nc *nats.Conn, n int) (answers <-chan *nats.Msg, reply string, done func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sub == nil {
		prefix := nc.NewInbox() + "."
		sub, err := nc.Subscribe(prefix+"*", r.route)
		if err != nil {
			return nil, "", nil, err
		}
		_ = sub.SetPendingLimits(-1, -1)
		r.prefix, r.sub, r.waiting = prefix, sub, map[string]chan *nats.Msg{}
	}
	r.next++
	token := strconv.FormatUint(r.next, 36)
	ch := make(chan *nats.Msg, n)
	r.waiting[token] = ch
	return ch, r.prefix + token, func() {
		r.mu.Lock()
		delete(r.waiting, token)
		r.mu.Unlock()
	}, nil
}

// route hands an answer to its request; one that comes after its
// request gave up, or more than it asked for, is dropped.
func (r *replyInboxes) route(m *nats.Msg) {
	r.mu.Lock()
	ch := r.waiting[strings.TrimPrefix(m.Subject, r.prefix)]
	r.mu.Unlock()
	select {
	case ch <- m:
	default:
	}
}

// directStatus is what a direct get's status answer says: the end of a
// batch (204), nothing stored (404), or a refusal.
func directStatus(subject string, h nats.Header) (batchEnd, error) {
	switch status := h.Get("Status"); status {
	case "204":
		pending, _ := strconv.ParseUint(h.Get("Nats-Num-Pending"), 10, 64)
		last, _ := strconv.ParseUint(h.Get("Nats-Last-Sequence"), 10, 64)
		upTo, _ := strconv.ParseUint(h.Get("Nats-UpTo-Sequence"), 10, 64)
		return batchEnd{pending: pending, last: last, upTo: upTo}, nil
	case "404":
		return batchEnd{}, errNotStored
	case "503":
		return batchEnd{}, nats.ErrNoResponders
	case "413": // multi_last: more subjects than the server answers for at once
		return batchEnd{}, protocol.Errorf(protocol.CodeTooLarge, "direct get on %s: more than 1024 subjects match (%s)", subject, h.Get("Description"))
	default: // a request this client should not have made
		return batchEnd{}, protocol.Errorf(protocol.CodeInternal, "direct get on %s: the server answered %s %s", subject, status, h.Get("Description"))
	}
}

// storedOf takes a direct get's answer apart: the server's headers are
// the last values of their keys.
func storedOf(m *nats.Msg, batch bool) storedMsg {
	h := nats.Header{}
	for k, v := range m.Header {
		h[k] = v
	}
	last := func(key string) string {
		v := h[key]
		if len(v) == 0 {
			return ""
		}
		if len(v) == 1 {
			delete(h, key)
		} else {
			h[key] = v[:len(v)-1]
		}
		return v[len(v)-1]
	}
	s := storedMsg{Data: m.Data, Header: h}
	added := directHeaders
	if batch {
		added = batchHeaders
	}
	for _, key := range added {
		switch v := last(key); key {
		case "Nats-Subject":
			s.Subject = v
		case "Nats-Sequence":
			s.Sequence, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return s
}
