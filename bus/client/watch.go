package client

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/protocol"
)

// Frame is one frame as a watch delivers it.
type Frame struct {
	protocol.Frame
	// Data is the frame's JSON as the node published it, or, when its
	// content came by reference, with the content inlined.
	Data []byte
	// StreamSequence is the frame's position in the frame stream; 0 for
	// a frame seen live on a bus that keeps no history.
	StreamSequence uint64
	// ContentErr says why content that came by reference could not be
	// fetched (FullPageRef then stays as it came).
	ContentErr error
}

// FromNext, as Watch's from, starts after the tab's current frame: the
// frames it makes from now on.
const FromNext int64 = -1

// Watcher delivers a watch's frames.
type Watcher struct {
	frames chan Frame
	done   chan struct{}
	err    error
	cancel context.CancelFunc
}

// Frames is the watch's frames, in order; closed when the watch ends.
func (w *Watcher) Frames() <-chan Frame { return w.frames }

// Err is why the watch ended, once Frames is closed: nil when it was
// stopped or its context ended.
func (w *Watcher) Err() error {
	<-w.done
	return w.err
}

// Stop ends the watch.
func (w *Watcher) Stop() { w.cancel() }

// Watch delivers tab's frames from sequence from (0: from its current
// frame; FromNext: after it), the stored ones first, then the live ones as they come: a
// JetStream ordered consumer on the frame stream, filtered to the tab.
// It rides out disconnects and server restarts and resumes where it
// was: no frame is delivered twice (a frame sequence already delivered
// is dropped), and frames missing (expired from the history before they
// were read, or lost with a server's memory) are reported as EventGap.
// Content too large for one message is inlined from the content bucket.
//
// On a bus that keeps no frame history, Watch from 0 or FromNext follows
// live frames only, and a from of 1 or more is an unavailable error.
func (c *Client) Watch(ctx context.Context, tab string, from int64) (*Watcher, error) {
	if !protocol.ValidTabID(tab) {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "tab: %q is not a tab id (letters, digits, '-' and '_')", tab)
	}
	if from < FromNext {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "from: %d is not a frame sequence (1 or more; 0 for the current frame, -1 for the next)", from)
	}
	return c.startWatch(ctx, watchSpec{tab: tab, from: from})
}

// WatchAll delivers the frames of every tab, from now on (last false) or
// from each tab's current frame (last true), as Watch does for one.
func (c *Client) WatchAll(ctx context.Context, last bool) (*Watcher, error) {
	return c.startWatch(ctx, watchSpec{lastOfEach: last})
}

// Frames calls fn with tab's stored frames from sequence from (1 when 0)
// to sequence to (0: the last one stored when Frames was called), in
// order, and returns. fn's error ends it and is returned.
func (c *Client) Frames(ctx context.Context, tab string, from, to int64, fn func(Frame) error) error {
	if !protocol.ValidTabID(tab) {
		return protocol.Errorf(protocol.CodeBadRequest, "tab: %q is not a tab id (letters, digits, '-' and '_')", tab)
	}
	if from < 0 || to < 0 || (to > 0 && to < from) {
		return protocol.Errorf(protocol.CodeBadRequest, "frames %d to %d: want 1 <= from <= to (0 for either end: from the first, to the last)", from, to)
	}
	from = max(from, 1)
	s, err := c.frameStream(ctx)
	if err != nil {
		return err
	}
	last, err := c.lastStored(ctx, s, c.subj.TabFrames(tab))
	switch {
	case err != nil:
		return err
	case last == nil:
		return nil // nothing stored
	}
	end := frameSeqOf(last)
	if to > 0 {
		end = min(end, to)
	}
	if from > end {
		return nil
	}
	return c.follow(ctx, s, watchSpec{tab: tab, from: from, to: end}, fn)
}

// Current is tab's current frame, read from the history without
// replaying it (the last message on the tab's frame subject).
func (c *Client) Current(ctx context.Context, tab string) (Frame, error) {
	if !protocol.ValidTabID(tab) {
		return Frame{}, protocol.Errorf(protocol.CodeBadRequest, "tab: %q is not a tab id (letters, digits, '-' and '_')", tab)
	}
	s, err := c.frameStream(ctx)
	if err != nil {
		return Frame{}, err
	}
	m, err := c.lastStored(ctx, s, c.subj.TabFrames(tab))
	switch {
	case err != nil:
		return Frame{}, err
	case m == nil:
		return Frame{}, protocol.Errorf(protocol.CodeTabNotFound, "no frame of tab %s in the history (%s)", tab, c.subj.FrameStream())
	}
	return c.frame(ctx, m.Data, m.Sequence)
}

// watchSpec says what a watch follows: one tab from a frame (to a frame,
// for Frames), or every tab.
type watchSpec struct {
	tab        string // "" for every tab
	from, to   int64
	lastOfEach bool // every tab: from each one's current frame
}

func (w watchSpec) filter(subj protocol.Subjects) string {
	if w.tab == "" {
		return subj.AllFrames()
	}
	return subj.TabFrames(w.tab)
}

// errEnough ends a follow that has delivered what it was asked for.
var errEnough = errors.New("enough frames")

func (c *Client) startWatch(ctx context.Context, spec watchSpec) (*Watcher, error) {
	s, err := c.frameStream(ctx)
	noHistory := protocol.CodeOf(err) == protocol.CodeUnavailable && errors.Is(err, errNoHistory)
	switch {
	case noHistory && spec.from > 0:
		return nil, err
	case err != nil && !noHistory:
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &Watcher{frames: make(chan Frame), done: make(chan struct{}), cancel: cancel}
	deliver := func(f Frame) error {
		select {
		case w.frames <- f:
			return nil
		case <-wctx.Done():
			return wctx.Err()
		}
	}
	var run func() error
	if noHistory {
		run, err = c.followLive(wctx, spec, deliver)
	} else {
		run, err = c.prepareFollow(wctx, s, spec, deliver)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		defer close(w.done)
		defer close(w.frames)
		defer cancel()
		if err := run(); err != nil && wctx.Err() == nil {
			w.err = err
		}
	}()
	return w, nil
}

// errNoHistory is the cause of the error for a bus without the frame
// stream.
var errNoHistory = errors.New("no frame history")

// frameStream looks the frame stream up.
func (c *Client) frameStream(ctx context.Context) (jetstream.Stream, error) {
	name := c.subj.FrameStream()
	var s jetstream.Stream
	err := c.jsCall(ctx, func(ctx context.Context) (err error) {
		s, err = c.js.Stream(ctx, name)
		return err
	})
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount), errors.Is(err, nats.ErrNoResponders):
		return nil, &protocol.Error{Code: protocol.CodeUnavailable, Err: errNoHistory,
			Message: "the bus keeps no frame history (no JetStream stream " + name + "): only live frames can be watched"}
	case err != nil:
		return nil, err
	}
	return s, nil
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

// lastStored is the last node frame stored on subject, nil for none.
// What a user had the server publish there (see nodeFrame) is passed
// over, walking back one stream message at a time (a direct get finds
// the next message on a subject, never the one before).
func (c *Client) lastStored(ctx context.Context, s jetstream.Stream, subject string) (*jetstream.RawStreamMsg, error) {
	var m *jetstream.RawStreamMsg
	err := c.jsCall(ctx, func(ctx context.Context) (err error) {
		m, err = s.GetLastMsgForSubject(ctx, subject)
		return err
	})
	for steps := 0; err == nil && !(subjectMatches(subject, m.Subject) && c.nodeFrameGot(m)); steps++ {
		if steps == maxPassedOver {
			return nil, protocol.Errorf(protocol.CodeUnavailable, "no node's frame on %s among the last %d messages of the frame history", subject, steps)
		}
		if storedSeq(m) <= 1 {
			return nil, nil
		}
		seq := storedSeq(m) - 1
		err = c.jsCall(ctx, func(ctx context.Context) (err error) {
			m, err = s.GetMsg(ctx, seq)
			return err
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) { // removed: step over it
			m, err = &jetstream.RawStreamMsg{Sequence: seq}, nil
		}
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}

// maxPassedOver bounds the walks past messages that are no node's frames
// (and, walking back, other tabs' frames).
const maxPassedOver = 10000

// nodeFrame reports whether a message on a frame subject is a node's
// frame. A user can have a server publish on a frame subject (naming it as
// the reply of a direct get, or as a consumer's deliver subject); live
// subscribers get that and the frame stream stores it. See
// protocol.Subjects.NodeFrame.
func (c *Client) nodeFrame(subject string, h nats.Header) bool {
	_, _, err := c.subj.NodeFrameHeader(subject, h.Get)
	return err == nil
}

// nodeFrameGot is nodeFrame for a message a direct get returned: the
// server adds its own Nats-Stream (and Nats-Sequence, Nats-Subject)
// headers after the stored ones, so only a stored one counts.
func (c *Client) nodeFrameGot(m *jetstream.RawStreamMsg) bool {
	_, _, err := c.subj.NodeFrameHeader(m.Subject, func(key string) string {
		if key == jetstream.StreamHeader {
			if v := m.Header.Values(key); len(v) > 1 {
				return v[0]
			}
			return ""
		}
		return m.Header.Get(key)
	})
	return err == nil
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

// startOf finds where in the stream a watch of spec begins: the stream
// sequence of the tab's first stored frame at or after spec.from (a
// binary search over stream sequences, each probe a direct get of the
// next message on the tab's subject), or of its current frame for from
// 0; past the end when there is none yet.
func (c *Client) startOf(ctx context.Context, s jetstream.Stream, spec watchSpec) (uint64, error) {
	var info *jetstream.StreamInfo
	if err := c.jsCall(ctx, func(ctx context.Context) (err error) {
		info, err = s.Info(ctx)
		return err
	}); err != nil {
		return 0, err
	}
	end := info.State.LastSeq + 1
	subject := spec.filter(c.subj)
	if spec.from <= 0 {
		m, err := c.lastStored(ctx, s, subject)
		switch {
		case err != nil || m == nil:
			return end, err
		case spec.from == FromNext:
			return m.Sequence + 1, nil
		}
		return m.Sequence, nil
	}
	lo, hi := max(info.State.FirstSeq, 1), end
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := c.nextStored(ctx, s, mid, subject)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && m.Sequence >= hi):
			hi = mid
		case err != nil:
			return 0, err
		case frameSeqOf(m) >= spec.from:
			hi = mid
		default:
			lo = m.Sequence + 1
		}
	}
	return lo, nil
}

// nextStored is the first node frame on subject at or after stream
// sequence seq (see nodeFrame).
func (c *Client) nextStored(ctx context.Context, s jetstream.Stream, seq uint64, subject string) (*jetstream.RawStreamMsg, error) {
	for passed := 0; ; passed++ {
		var m *jetstream.RawStreamMsg
		err := c.jsCall(ctx, func(ctx context.Context) (err error) {
			m, err = s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
			return err
		})
		switch {
		case err != nil:
			return nil, err
		case c.nodeFrameGot(m):
			return m, nil
		case passed == maxPassedOver:
			return nil, protocol.Errorf(protocol.CodeUnavailable, "%d messages on %s in the frame history are not a node's frames", passed+1, subject)
		}
		seq = max(seq, storedSeq(m)) + 1
	}
}

// storedSeq is a stored message's stream sequence. A message that a
// direct get answered onto a frame subject was stored with that answer's
// headers, so a direct get of it carries two Nats-Sequence headers, the
// stored one first (which the jetstream package reads) and the server's
// own last.
func storedSeq(m *jetstream.RawStreamMsg) uint64 {
	if v := m.Header.Values(jetstream.SequenceHeader); len(v) > 1 {
		if n, err := strconv.ParseUint(v[len(v)-1], 10, 64); err == nil {
			return n
		}
	}
	return m.Sequence
}

// frameSeqOf is a stored frame's sequence, from its Nats-Msg-Id
// (<tab>.<seq>) without decoding the frame, else from its JSON.
func frameSeqOf(m *jetstream.RawStreamMsg) int64 {
	return frameSeq(m.Header, m.Data)
}

func frameSeq(h nats.Header, data []byte) int64 {
	if id := h.Get(jetstream.MsgIDHeader); id != "" {
		if i := strings.LastIndexByte(id, '.'); i >= 0 {
			if n, err := strconv.ParseInt(id[i+1:], 10, 64); err == nil {
				return n
			}
		}
	}
	f, err := protocol.DecodeFrame(data)
	if err != nil {
		return 0
	}
	return f.Sequence
}

// follow runs a follow to its end (see prepareFollow).
func (c *Client) follow(ctx context.Context, s jetstream.Stream, spec watchSpec, deliver func(Frame) error) error {
	run, err := c.prepareFollow(ctx, s, spec, deliver)
	if err != nil {
		return err
	}
	return run()
}

// prepareFollow creates the ordered consumer of a watch and returns the
// loop that delivers its frames, until ctx ends or deliver fails.
func (c *Client) prepareFollow(ctx context.Context, s jetstream.Stream, spec watchSpec, deliver func(Frame) error) (func() error, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{spec.filter(c.subj)}}
	switch {
	case spec.tab == "" && spec.lastOfEach:
		cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	case spec.tab == "":
		cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	default:
		start, err := c.startOf(ctx, s, spec)
		if err != nil {
			return nil, err
		}
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	}
	var msgs jetstream.MessagesContext
	if err := c.jsCall(ctx, func(ctx context.Context) error {
		cons, err := c.js.OrderedConsumer(ctx, s.CachedInfo().Config.Name, cfg)
		if err != nil {
			return err
		}
		msgs, err = cons.Messages()
		return err
	}); err != nil {
		return nil, err
	}
	return func() error {
		defer context.AfterFunc(ctx, msgs.Stop)()
		defer msgs.Stop()
		stopped := make(chan struct{})
		defer close(stopped)
		go func() { // a connection closed for good ends the watch
			select {
			case <-c.gone:
				msgs.Stop()
			case <-stopped:
			}
		}()
		seen := newSeen(spec)
		for {
			m, err := msgs.Next()
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, jetstream.ErrMsgIteratorClosed), errors.Is(err, nats.ErrConnectionClosed):
				return errClosed
			case err != nil:
				return protocol.Errorf(protocol.CodeUnavailable, "watch: %v", err)
			}
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			if !c.nodeFrame(m.Subject(), m.Headers()) {
				continue // a server's publish a user aimed here
			}
			tab, seq := tabOf(c.subj, m.Subject()), frameSeq(m.Headers(), m.Data())
			if !seen.next(c, tab, seq) {
				continue
			}
			f, err := c.frame(ctx, m.Data(), md.Sequence.Stream)
			if err != nil {
				continue // not a frame: nothing to deliver
			}
			if err := deliver(f); err != nil {
				return err
			}
			if spec.to > 0 && seq >= spec.to {
				return nil
			}
		}
	}, nil
}

// seenFrames is what a watch has delivered of each tab: the last
// sequence, to drop what comes again and see what is missing.
type seenFrames struct {
	from int64 // the first sequence wanted (one tab)
	last map[string]int64
}

func newSeen(spec watchSpec) *seenFrames {
	return &seenFrames{from: spec.from, last: map[string]int64{}}
}

// next reports whether frame seq of tab is to be delivered, and reports
// a gap before it.
func (s *seenFrames) next(c *Client, tab string, seq int64) bool {
	last, ok := s.last[tab]
	switch {
	case seq < s.from || (ok && seq <= last):
		// before what was asked for, or delivered already
		return false
	case ok && seq > last+1:
		c.emit(Event{Kind: EventGap, Tab: tab, From: last + 1, To: seq - 1})
	case !ok && s.from > 0 && seq > s.from:
		c.emit(Event{Kind: EventGap, Tab: tab, From: s.from, To: seq - 1})
	}
	s.last[tab] = seq
	return true
}

// tabOf is the tab of a frame subject <prefix>.tab.<tab>.frame.
func tabOf(subj protocol.Subjects, subject string) string {
	rest := strings.TrimPrefix(subject, subj.Prefix+".tab.")
	if subj.Prefix == "" {
		rest = strings.TrimPrefix(subject, protocol.DefaultPrefix+".tab.")
	}
	return strings.TrimSuffix(rest, ".frame")
}

// frame decodes a frame message and inlines its content by reference.
func (c *Client) frame(ctx context.Context, data []byte, streamSeq uint64) (Frame, error) {
	pf, err := protocol.DecodeFrame(data)
	if err != nil {
		return Frame{}, err
	}
	f := Frame{Frame: pf, Data: data, StreamSequence: streamSeq}
	if pf.FullPageRef != nil {
		f.ContentErr = c.inline(ctx, &f)
	}
	return f, nil
}

// followLive follows frames as they are published, on a bus without
// history: a core subscription.
func (c *Client) followLive(ctx context.Context, spec watchSpec, deliver func(Frame) error) (func() error, error) {
	subject := spec.filter(c.subj)
	msgs := make(chan *nats.Msg, 64)
	var sub *nats.Subscription
	refusedSubject := func(subscribe bool, refused string) bool { return subscribe && refused == subject }
	err := c.guarded(ctx, refusedSubject, func(ctx context.Context) (err error) {
		if sub, err = c.nc.ChanSubscribe(subject, msgs); err != nil {
			return err
		}
		_ = sub.SetPendingLimits(-1, -1) // frames are never dropped for being slow
		return c.nc.FlushWithContext(ctx)
	})
	if err != nil {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
		return nil, err
	}
	return func() error {
		defer sub.Unsubscribe()
		seen := newSeen(spec)
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-c.gone:
				return errClosed
			case m := <-msgs:
				if !c.nodeFrame(m.Subject, m.Header) {
					continue // a server's publish a user aimed here
				}
				tab, seq := tabOf(c.subj, m.Subject), frameSeq(m.Header, m.Data)
				if !seen.next(c, tab, seq) {
					continue
				}
				f, err := c.frame(ctx, m.Data, 0)
				if err != nil {
					continue
				}
				if err := deliver(f); err != nil {
					return err
				}
			}
		}
	}, nil
}
