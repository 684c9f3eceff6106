package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// Frame is one frame as a watch delivers it.
type Frame struct {
	protocol.Frame
	// Data is the frame's JSON as the node published it, or, when its
	// content came by reference, with the content inlined.
	Data []byte
	// StreamSequence is the frame's position in the frame stream, for a
	// frame read from the history; 0 for one delivered as it was
	// published.
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
// frame; FromNext: after it), the stored ones first, then the live ones
// as they come. It subscribes to the tab's frames first, then reads the
// history from frame from with batches of direct gets until it has
// caught up with them: no consumer is made (see direct.go).
//
// It rides out disconnects and server restarts: once the connection is
// back it reads what it missed from the history, from the frame after
// the last it delivered. No frame is delivered twice (a frame sequence
// already delivered is dropped), and frames missing (expired from the
// history before they were read, or lost with a server's memory) are
// reported as EventGap. Content too large for one message is inlined
// from the content bucket.
//
// On a bus that keeps no frame history, Watch from 0 or FromNext follows
// live frames only, and a from of 1 or more is an unavailable error.
//
// A watch is told when its tab ends. After the tab's close frame
// (protocol.FrameClose) it ends with tab_closed (EventTabClosed). It
// checks the liveness of the tab's node as a waiting plan does
// (liveness.go): when the node is gone or lost its liveness it reports
// EventNodeLost and ends with that node_unavailable error, unless
// KeepWaiting: then it goes on, reports EventNodeBack when the node
// answers again, and delivers the frames it missed meanwhile from the
// history.
func (c *Client) Watch(ctx context.Context, tab string, from int64, opts ...WatchOption) (*Watcher, error) {
	if !protocol.ValidTabID(tab) {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "tab: %q is not a tab id (letters, digits, '-' and '_')", tab)
	}
	if from < FromNext {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "from: %d is not a frame sequence (1 or more; 0 for the current frame, -1 for the next)", from)
	}
	spec := watchSpec{tab: tab, from: from}
	for _, o := range opts {
		o(&spec)
	}
	return c.startWatch(ctx, spec)
}

// WatchOption changes how Watch follows a tab.
type WatchOption func(*watchSpec)

// KeepWaiting makes a watch go on when the tab's node is gone or lost its
// liveness (it reports EventNodeLost, then EventNodeBack if it answers
// again): for a node that may come back, restarted with its state or no
// longer frozen.
func KeepWaiting() WatchOption { return func(s *watchSpec) { s.keepWaiting = true } }

// WatchAll delivers the frames of every tab, from now on (last false) or
// from each tab's current frame (last true: one direct get of the last
// frame of every tab, at most 1024 tabs), as Watch does for one. After a
// reconnect it reads the history from where it last caught up with it.
func (c *Client) WatchAll(ctx context.Context, last bool) (*Watcher, error) {
	return c.startWatch(ctx, watchSpec{lastOfEach: last})
}

// Frames calls fn with tab's stored frames from sequence from (1 when 0)
// to sequence to (0: the tab's last when Frames was called), in order,
// and returns; a frame the tab published that the history has not
// stored yet is waited for (see latest.go). fn's error ends it and is
// returned.
func (c *Client) Frames(ctx context.Context, tab string, from, to int64, fn func(Frame) error) error {
	if !protocol.ValidTabID(tab) {
		return protocol.Errorf(protocol.CodeBadRequest, "tab: %q is not a tab id (letters, digits, '-' and '_')", tab)
	}
	if from < 0 || to < 0 || (to > 0 && to < from) {
		return protocol.Errorf(protocol.CodeBadRequest, "frames %d to %d: want 1 <= from <= to (0 for either end: from the first, to the last)", from, to)
	}
	from = max(from, 1)
	subject := c.subj.TabFrames(tab)
	last, err := c.latestStored(ctx, tab, subject)
	switch {
	case err != nil:
		return err
	case last == nil:
		return nil // nothing stored
	}
	end := c.frameSeqOf(*last)
	if to > 0 {
		end = min(end, to)
	}
	if from > end {
		return nil
	}
	start, err := c.startOf(ctx, subject, from)
	if err != nil {
		return err
	}
	f := &follower{c: c, spec: watchSpec{tab: tab, from: from}, subject: subject, seen: newSeen(from)}
	f.deliver = func(fr Frame) error {
		if err := fn(fr); err != nil {
			return err
		}
		if fr.Sequence >= end {
			return errEnough
		}
		return nil
	}
	_, err = c.readStored(ctx, subject, start, func(msgs []storedMsg) (bool, error) {
		return true, f.stored(ctx, msgs)
	})
	if errors.Is(err, errEnough) {
		return nil
	}
	return err
}

// errEnough ends a read that has delivered what it was asked for.
var errEnough = errors.New("enough frames")

// Current is tab's current frame, read from the history without
// replaying it (the last message on the tab's frame subject).
func (c *Client) Current(ctx context.Context, tab string) (Frame, error) {
	if !protocol.ValidTabID(tab) {
		return Frame{}, protocol.Errorf(protocol.CodeBadRequest, "tab: %q is not a tab id (letters, digits, '-' and '_')", tab)
	}
	if _, _, err := c.historyBounds(ctx); err != nil {
		return Frame{}, err
	}
	m, err := c.latestStored(ctx, tab, c.subj.TabFrames(tab))
	switch {
	case err != nil:
		return Frame{}, err
	case m == nil:
		return Frame{}, protocol.Errorf(protocol.CodeTabNotFound, "no frame of tab %s in the history (%s)", tab, c.subj.FrameStream())
	}
	return c.frame(ctx, m.Data, m.Sequence)
}

// watchSpec says what a watch follows: one tab from a frame, or every
// tab.
type watchSpec struct {
	tab         string // "" for every tab
	from        int64
	lastOfEach  bool // every tab: from each one's current frame
	keepWaiting bool // one tab: go on when its node is lost
}

// follower is one watch's state, owned by its goroutine (Frames uses it
// without a goroutine, for its stored part).
type follower struct {
	c       *Client
	spec    watchSpec
	subject string // the tab's frame subject, or every tab's
	history bool   // the bus keeps a frame history
	seen    *seenFrames
	deliver func(Frame) error

	sub  *nats.Subscription
	live chan *nats.Msg
	// start is where the first catch-up reads the history from; for
	// every tab, where the next one does (where the last ended).
	start uint64
	// node is the watched tab's node, as its frames name it ("" until
	// one does); its liveness is checked (see nodeWatch).
	node string
}

// Bounds of the waits of a watch between its direct gets.
const (
	// catchUpRetry is the pause before reading the history again when
	// it could not be read after a reconnect (a restarted server may
	// not have the stream back yet).
	catchUpRetry = 250 * time.Millisecond
	// fillWait bounds the reads of the history for the frames before a
	// live one that came with a jump: live frames run ahead of the
	// stream, by seconds while it elects a leader, and a node gives a
	// frame up after 20 s (HistoryOptions.StoreTimeout). The pause
	// between reads grows from fillPause to fillPauseMax.
	fillWait     = 30 * time.Second
	fillPause    = 20 * time.Millisecond
	fillPauseMax = 500 * time.Millisecond
)

func (c *Client) startWatch(ctx context.Context, spec watchSpec) (*Watcher, error) {
	_, last, err := c.historyBounds(ctx)
	noHistory := protocol.CodeOf(err) == protocol.CodeUnavailable && errors.Is(err, errNoHistory)
	switch {
	case noHistory && spec.from > 0:
		return nil, err
	case err != nil && !noHistory:
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &Watcher{frames: make(chan Frame), done: make(chan struct{}), cancel: cancel}
	f := &follower{c: c, spec: spec, subject: c.subj.TabFrames(spec.tab), history: !noHistory,
		seen: newSeen(spec.from), start: last + 1}
	if spec.tab == "" {
		f.subject = c.subj.AllFrames()
	}
	f.deliver = func(fr Frame) error {
		select {
		case w.frames <- fr:
		case <-wctx.Done():
			return wctx.Err()
		}
		if spec.tab == "" {
			return nil
		}
		f.node = cmp.Or(fr.Node, f.node)
		if fr.Action == protocol.FrameClose {
			c.emit(Event{Kind: EventTabClosed, Tab: fr.Tab, Node: fr.Node})
			return protocol.Errorf(protocol.CodeTabClosed, "tab %s closed (its close frame, %d, is the last it makes)", fr.Tab, fr.Sequence)
		}
		return nil
	}
	if err := f.subscribe(wctx); err != nil {
		cancel()
		return nil, err
	}
	if f.history && spec.tab != "" {
		if f.start, err = f.startOfTab(wctx); err != nil {
			_ = f.sub.Unsubscribe()
			cancel()
			return nil, err
		}
	}
	go func() {
		defer close(w.done)
		defer close(w.frames)
		defer cancel()
		defer f.sub.Unsubscribe()
		if err := f.run(wctx); err != nil && wctx.Err() == nil {
			w.err = err
		}
	}()
	return w, nil
}

// subscribe subscribes to the live frames before the history is read,
// so that none falls between the two. The subscription's buffer has no
// bound: frames are never dropped for being slow.
func (f *follower) subscribe(ctx context.Context) error {
	f.live = make(chan *nats.Msg)
	stop := ctx.Done()
	refused := func(subscribe bool, subject string) bool { return subscribe && subject == f.subject }
	return f.c.guarded(ctx, refused, func(ctx context.Context) (err error) {
		f.sub, err = f.c.nc.Subscribe(f.subject, func(m *nats.Msg) {
			select { // nats.go queues the rest meanwhile, in order
			case f.live <- m:
			case <-stop:
			}
		})
		if err != nil {
			return err
		}
		_ = f.sub.SetPendingLimits(-1, -1)
		if err := f.c.nc.FlushWithContext(ctx); err != nil {
			_ = f.sub.Unsubscribe()
			return err
		}
		return nil
	})
}

// startOfTab is where a watch of one tab starts reading the history: at
// frame from, or at the tab's current frame (from 0) or after it
// (FromNext).
func (f *follower) startOfTab(ctx context.Context) (uint64, error) {
	if f.spec.from > 0 {
		return f.c.startOf(ctx, f.subject, f.spec.from)
	}
	m, err := f.c.lastStored(ctx, f.subject)
	switch {
	case err != nil:
		return 0, err
	case m == nil:
		if f.spec.from == FromNext { // nothing stored: what comes after what the tab published
			if latest := f.c.tabLatest(ctx, f.spec.tab); latest > 0 {
				f.seen.last[f.spec.tab] = latest
			}
		}
		return f.start, nil
	}
	var last struct{ Node, Action string }
	if f.c.storedFrame(f.subject, *m) && json.Unmarshal(m.Data, &last) == nil && protocol.ValidNodeName(last.Node) {
		f.node = last.Node
	}
	if f.spec.from == FromNext && last.Action != protocol.FrameClose {
		// An old frame that comes again is dropped, and so is one the
		// tab published before the watch that is not stored yet.
		f.seen.last[f.spec.tab] = max(f.c.frameSeqOf(*m), f.c.tabLatest(ctx, f.spec.tab))
		return m.Sequence + 1, nil
	}
	// The current frame, or the close frame of a tab that closed: no
	// frame comes after it, and it says why.
	return m.Sequence, nil
}

// run delivers the frames until ctx ends or deliver fails: the history
// caught up with first, and again after each reconnect, then the live
// frames; meanwhile the tab's node's liveness is checked.
func (f *follower) run(ctx context.Context) error {
	due := f.history // a catch-up with the history is due
	var retry <-chan time.Time
	nw := f.newNodeWatch(ctx)
	defer nw.stop()
	// caughtOn is the connection the watch follows (its down channel):
	// a new one means a loss and a reconnect since, even one the watch
	// did not see while it was handing a frame over.
	var caughtOn <-chan struct{}
	for {
		up, down, closed := f.c.state()
		if closed {
			return f.ended(ctx, errClosed)
		}
		connected := isClosed(up)
		if connected && down != caughtOn {
			due = due || (caughtOn != nil && f.history)
			caughtOn = down
		}
		if connected && due && retry == nil {
			switch err := f.catchUp(ctx); {
			case err == nil:
				due = false
			case ctx.Err() != nil:
				return nil
			case lasting(err):
				return err
			default: // the stream may not be back yet after a server restart
				retry = time.After(catchUpRetry)
			}
		}
		if connected {
			up = nil // wait for its loss (down), not for it
		} else {
			down = nil // closed already: wait for the connection (up)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-f.c.gone:
			return f.ended(ctx, f.c.closeErr())
		case <-down:
			due, retry = f.history, nil
		case <-up:
		case <-retry:
			retry = nil
		case <-nw.due():
			nw.start(f.node)
		case r := <-nw.results:
			switch back, err := nw.took(r); {
			case err != nil:
				return err
			case back:
				due = f.history // what the node made meanwhile
			}
		case m := <-f.live:
			switch err := f.onLive(ctx, m); {
			case err == nil:
			case ctx.Err() != nil:
				return nil
			case lasting(err):
				return err
			default: // the frames before it could not be read: a catch-up will read them and it
				due, retry = true, time.After(catchUpRetry)
			}
		}
	}
}

// isClosed reports whether ch is closed (a connection state channel).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// lasting reports whether a watch's error would come again: a watch
// ends with it instead of trying again.
func lasting(err error) bool {
	switch protocol.CodeOf(err) {
	case protocol.CodePermissionDenied, protocol.CodeTooLarge, protocol.CodeInternal, protocol.CodeTabClosed:
		return true
	}
	return err == errClosed
}

// ended is a watch's end for err: none when ctx ended.
func (f *follower) ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// catchUp reads the history from where the watch is to its end.
func (f *follower) catchUp(ctx context.Context) error {
	if f.spec.tab != "" {
		if err := f.fill(ctx, f.spec.tab, 0); err != nil {
			return err
		}
		return f.toLatest(ctx)
	}
	if f.spec.lastOfEach {
		err := f.lastOfEachTab(ctx)
		f.spec.lastOfEach = err != nil // once, at the start
		return err
	}
	first, last, err := f.c.historyBounds(ctx)
	if err != nil {
		return err
	}
	if f.start > last+1 { // a new stream (a server restarted without its memory)
		f.start = first
	}
	f.start, err = f.c.readStored(ctx, f.subject, f.start, func(msgs []storedMsg) (bool, error) {
		return true, f.stored(ctx, msgs)
	})
	if err != nil {
		return err
	}
	return f.toLatestOfEach(ctx)
}

// fill reads tab's frames from the one after the last delivered (or
// from where the watch starts) to the end of the history. When a live
// frame until came with a jump, the history is read again for a while
// until it has frame until: the frames before it may not be stored yet
// (a tab's frames are stored in order: once one at or after until is,
// those missing before it never will be).
func (f *follower) fill(ctx context.Context, tab string, until int64) error {
	subject := f.c.subj.TabFrames(tab)
	began := time.Now()
	for try := 1; ; try++ {
		start := f.start
		if last, ok := f.seen.last[tab]; ok || f.spec.tab == "" {
			var err error
			if start, err = f.c.startOf(ctx, subject, last+1); err != nil {
				return err
			}
		}
		reached := false
		_, err := f.c.readStored(ctx, subject, start, func(msgs []storedMsg) (bool, error) {
			for _, m := range msgs {
				reached = reached || (f.c.storedFrame(subject, m) && f.c.frameSeqOf(m) >= until)
			}
			return true, f.stored(ctx, msgs)
		})
		if err != nil || reached || until == 0 || time.Since(began) >= fillWait {
			return err
		}
		if err := sleepCtx(ctx, min(time.Duration(try)*fillPause, fillPauseMax)); err != nil {
			return err
		}
	}
}

// lastOfEachTab delivers the current frame of every tab: one batch of
// direct gets of the last message of each frame subject (a page at a
// time), then the history after it is read from where that ended.
func (f *follower) lastOfEachTab(ctx context.Context) error {
	req := directRequest{MultiLast: []string{f.subject}, Batch: directBatch, MaxBytes: directMaxBytes}
	for {
		msgs, end, err := f.c.directBatch(ctx, f.c.subj.FrameStream(), req)
		switch {
		case errors.Is(err, errNotStored):
			return nil
		case err != nil:
			return err
		}
		for i, m := range msgs {
			if !f.c.storedFrame(f.subject, m) { // a forgery: the tab's last frame is before it
				last, err := f.c.lastStored(ctx, m.Subject)
				if err != nil || last == nil {
					continue
				}
				msgs[i] = *last
			}
		}
		if err := f.stored(ctx, msgs); err != nil {
			return err
		}
		f.start = end.upTo + 1
		if end.pending == 0 || len(msgs) == 0 {
			return nil
		}
		req.Seq, req.UpToSeq = end.last+1, end.upTo
	}
}

// onLive delivers a live frame, after the frames before it that the
// history has when it came with a jump.
func (f *follower) onLive(ctx context.Context, m *nats.Msg) error {
	tab, seq, err := f.c.subj.NodeFrameHeader(m.Subject, m.Header.Get)
	if err != nil {
		return nil // a server's publish a user aimed here
	}
	if f.history && f.seen.jump(tab, seq) {
		if err := f.fill(ctx, tab, seq); err != nil {
			return err
		} // what the history does not have is a gap, reported when seq is delivered
	}
	return f.offer(ctx, m.Subject, m.Header, m.Data, 0)
}

// stored delivers the node frames among stored messages.
func (f *follower) stored(ctx context.Context, msgs []storedMsg) error {
	for _, m := range msgs {
		if !f.c.storedFrame(f.subject, m) {
			continue // a server's publish a user aimed here
		}
		if err := f.offer(ctx, m.Subject, m.Header, m.Data, m.Sequence); err != nil {
			return err
		}
	}
	return nil
}

// offer delivers a frame unless it is no node's frame or was delivered
// already.
func (f *follower) offer(ctx context.Context, subject string, h nats.Header, data []byte, streamSeq uint64) error {
	pf, err := protocol.DecodeFrame(data)
	if err != nil || f.c.subj.NodeFrame(subject, h.Get, pf) != nil {
		return nil // not the frame its id names: nothing to deliver
	}
	if !f.seen.next(f.c, pf.Tab, pf.Sequence) {
		return nil
	}
	fr := Frame{Frame: pf, Data: data, StreamSequence: streamSeq}
	if pf.FullPageRef != nil {
		fr.ContentErr = f.c.inline(ctx, &fr)
	}
	return f.deliver(fr)
}

// seenFrames is what a watch has delivered of each tab: the last
// sequence, to drop what comes again and see what is missing.
type seenFrames struct {
	from int64 // the first sequence wanted (one tab)
	last map[string]int64
}

func newSeen(from int64) *seenFrames {
	return &seenFrames{from: from, last: map[string]int64{}}
}

// jump reports whether frame seq of tab would come after a gap.
func (s *seenFrames) jump(tab string, seq int64) bool {
	last, ok := s.last[tab]
	return (ok && seq > last+1) || (!ok && s.from > 0 && seq > s.from)
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
