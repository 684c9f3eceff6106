package client

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/protocol"
)

// errNoHistory is the cause of the error for a bus without the frame
// stream.
var errNoHistory = errors.New("no frame history")

// historyBounds is the frame stream's first and last sequence now
// (stream info, which every role may ask for). Only the stream's leader
// answers stream info: when it does not within boundsTry (frozen, or
// gone and no next one elected yet) the bounds come from the replicas
// instead (see directBounds).
func (c *Client) historyBounds(ctx context.Context) (first, last uint64, err error) {
	name := c.subj.FrameStream()
	var s jetstream.Stream
	try, cancel := context.WithTimeout(ctx, boundsTry)
	defer cancel()
	err = c.jsCall(try, func(ctx context.Context) (err error) {
		s, err = c.js.Stream(ctx, name)
		return err
	})
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount), errors.Is(err, nats.ErrNoResponders):
		return 0, 0, noHistory(name)
	case err != nil && try.Err() != nil && ctx.Err() == nil:
		return c.directBounds(ctx)
	case err != nil:
		return 0, 0, err
	}
	state := s.CachedInfo().State
	return max(state.FirstSeq, 1), state.LastSeq, nil
}

// boundsTry bounds the wait for the stream leader's info.
const boundsTry = time.Second

func noHistory(stream string) error {
	return &protocol.Error{Code: protocol.CodeUnavailable, Err: errNoHistory,
		Message: "the bus keeps no frame history (no JetStream stream " + stream + "): only live frames can be watched"}
}

// directBounds are bounds of the frame stream that any replica gives: 1
// (no sequence is before the first) and the sequence of the stream's
// last message (a direct get of it).
func (c *Client) directBounds(ctx context.Context) (first, last uint64, err error) {
	m, err := c.directGet(ctx, c.subj.FrameStream(), directRequest{LastFor: ">"})
	switch {
	case errors.Is(err, errNotStored):
		return 1, 0, nil
	case errors.Is(err, nats.ErrNoResponders):
		return 0, 0, noHistory(c.subj.FrameStream())
	case err != nil:
		return 0, 0, err
	}
	return 1, m.Sequence, nil
}

// maxPassedOver bounds the walks past messages that are no node's frames
// (and, walking back, other tabs' frames).
const maxPassedOver = 10000

// nodeFrame reports whether a message on a frame subject is a node's
// frame by its subject and headers. A user can have a server publish on
// a frame subject (naming it as the reply of a direct get); live
// subscribers get that, and a frame stream in the same account stores
// it. See protocol.Subjects.NodeFrame.
func (c *Client) nodeFrame(subject string, h nats.Header) bool {
	_, _, err := c.subj.NodeFrameHeader(subject, h.Get)
	return err == nil
}

// storedFrame reports whether a stored message is a node's frame on a
// subject filter matches.
func (c *Client) storedFrame(filter string, m storedMsg) bool {
	return subjectMatches(filter, m.Subject) && c.nodeFrame(m.Subject, m.Header)
}

// subjectMatches reports whether subject matches filter, a subject with
// '*' tokens (no '>').
func subjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	if len(f) != len(s) {
		return false
	}
	for i := range f {
		if f[i] != "*" && f[i] != s[i] {
			return false
		}
	}
	return true
}

// lastStored is the last node frame stored on subject, nil for none.
// What a user had the server publish there (see nodeFrame) is passed
// over, walking back one stream message at a time (a direct get finds
// the next message on a subject, never the one before).
func (c *Client) lastStored(ctx context.Context, subject string) (*storedMsg, error) {
	stream := c.subj.FrameStream()
	m, err := c.directLast(ctx, stream, subject)
	for steps := 0; err == nil && !c.storedFrame(subject, m); steps++ {
		if steps == maxPassedOver {
			return nil, protocol.Errorf(protocol.CodeUnavailable, "no node's frame on %s among the last %d messages of the frame history", subject, steps)
		}
		if m.Sequence <= 1 {
			return nil, nil
		}
		seq := m.Sequence - 1
		m, err = c.directGet(ctx, stream, directRequest{Seq: seq})
		if errors.Is(err, errNotStored) { // removed: step over it
			m, err = storedMsg{Sequence: seq}, nil
		}
	}
	if errors.Is(err, errNotStored) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// nextStored is the first node frame on subject at or after stream
// sequence seq (see nodeFrame); errNotStored when there is none.
func (c *Client) nextStored(ctx context.Context, seq uint64, subject string) (storedMsg, error) {
	for passed := 0; ; passed++ {
		m, err := c.directGet(ctx, c.subj.FrameStream(), directRequest{Seq: seq, NextFor: subject})
		switch {
		case err != nil:
			return storedMsg{}, err
		case c.nodeFrame(m.Subject, m.Header):
			return m, nil
		case passed == maxPassedOver:
			return storedMsg{}, protocol.Errorf(protocol.CodeUnavailable, "%d messages on %s in the frame history are not a node's frames", passed+1, subject)
		}
		seq = max(seq, m.Sequence) + 1
	}
}

// startOf is the stream sequence of the first node frame stored on
// subject (one tab's) whose frame sequence is from or more: a binary
// search over the stream's sequences, each probe a direct get of the
// next message on the subject (frame sequences grow with stream
// sequences). last+1 when there is none yet.
func (c *Client) startOf(ctx context.Context, subject string, from int64) (uint64, error) {
	first, last, err := c.historyBounds(ctx)
	if err != nil {
		return 0, err
	}
	lo, hi := first, last+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := c.nextStored(ctx, mid, subject)
		switch {
		case errors.Is(err, errNotStored) || (err == nil && m.Sequence >= hi):
			hi = mid
		case err != nil:
			return 0, err
		case c.frameSeqOf(m) >= from:
			hi = mid
		default:
			lo = m.Sequence + 1
		}
	}
	return lo, nil
}

// frameSeqOf is the sequence a node frame's message id names.
func (c *Client) frameSeqOf(m storedMsg) int64 {
	_, seq, _ := c.subj.NodeFrameHeader(m.Subject, m.Header.Get)
	return seq
}

// firstBatch is the size of the first batch a read asks for: the first
// frames come sooner; the batches after it double up to directBatch.
const firstBatch = 32

// readStored reads the messages on subject from stream sequence start,
// a batch of direct gets at a time, and gives each batch to fn until fn
// says enough or nothing more is stored. It returns the sequence after
// the last message read. The next batch is asked for while fn has the
// one before: the server's work and the client's overlap.
func (c *Client) readStored(ctx context.Context, subject string, start uint64, fn func([]storedMsg) (more bool, err error)) (uint64, error) {
	type batch struct {
		msgs []storedMsg
		last bool // nothing after it
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan batch, 1)
	go func() {
		defer close(batches)
		for seq, size := start, firstBatch; ; size = min(2*size, directBatch) {
			msgs, end, err := c.directBatch(ctx, c.subj.FrameStream(),
				directRequest{Seq: seq, NextFor: subject, Batch: size, MaxBytes: directMaxBytes})
			if errors.Is(err, errNotStored) {
				msgs, err = nil, nil
			}
			b := batch{msgs: msgs, err: err, last: err != nil || end.pending == 0 || len(msgs) == 0}
			select {
			case batches <- b:
			case <-ctx.Done():
				return
			}
			if b.last {
				return
			}
			seq = msgs[len(msgs)-1].Sequence + 1
		}
	}()
	for b := range batches {
		if b.err != nil {
			return start, b.err
		}
		if len(b.msgs) > 0 {
			start = b.msgs[len(b.msgs)-1].Sequence + 1
		}
		if more, err := fn(b.msgs); err != nil || !more {
			return start, err
		}
	}
	return start, nil
}
