package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/protocol"
)

// Storing a tab's frames in the history. The tab publishes each frame
// live itself, at once (see Tab.publish); its frameStore sends the same
// frame to the stream on the tab's history subject, which only the
// stream takes (Subjects.HistoryFrames; the stream stores it under the
// frame subject), with a JetStream publish, and awaits the ack. With no
// ack (a timeout, no responders, a 503 while a cluster elects the frame
// stream's leader) the same message, with the same Nats-Msg-Id, goes
// again until it is acked, so the stream stores it once.
//
// So live subscribers get every frame as the tab makes it, whatever the
// stream is doing, and the history may lag behind them and catch up.
// Frames of a tab reach the stream in sequence order because the next
// frame is not sent before the one before it was acked or given up (a
// frame sent again after a later one was stored would stand after it);
// the client's search for frame N and its gap filling rely on that
// order. Were the stream to take the live publishes too, a live frame
// could be stored while the one before it still waited for a leader.
//
// A frameStore does this for one tab, on a goroutine of its own, so the
// tab's actor never waits for the stream: it hands a frame over and goes
// on with its plans. Content too large for one message is put in the
// history's object store by the same goroutine, and checked whole,
// before the stored frame names it (the live frame names the tab's own
// copy: see content.go).

// storeTry bounds one publish's wait for its ack before it is sent again,
// and storeBackoff is the pause after an attempt that failed at once (no
// responders).
const (
	storeTry     = 2 * time.Second
	storeBackoff = 100 * time.Millisecond
)

// frameStore stores one tab's frames in the history, in order.
type frameStore struct {
	history *History
	nc      *nats.Conn
	tab     string
	subject string
	stream  string
	// content keeps a large content the object store did not take (the
	// tab serves it in chunks); safe from any goroutine.
	content      *contentStore
	contentSubj  string
	objects      []storedContent // frames whose content is in the object store, oldest first
	queue        *storeQueue
	done         chan struct{}
	log          zerolog.Logger
	storeTimeout time.Duration
}

func (h *History) startStore(nc *nats.Conn, tab string, subj protocol.Subjects, content *contentStore, log zerolog.Logger) *frameStore {
	s := &frameStore{
		history:      h,
		nc:           nc,
		tab:          tab,
		subject:      subj.HistoryFrames(tab),
		stream:       subj.FrameStream(),
		content:      content,
		contentSubj:  subj.TabContent(tab),
		queue:        newStoreQueue(storeBacklogBytes),
		done:         make(chan struct{}),
		log:          log,
		storeTimeout: h.opts.StoreTimeout,
	}
	go s.run()
	return s
}

// storeItem is a frame to store, or (with synced) a request to say when
// the frames before it are stored.
type storeItem struct {
	frame  protocol.Frame
	synced chan struct{}
}

// add hands frame f, the next in sequence, to the store.
func (s *frameStore) add(f protocol.Frame) { s.queue.push(storeItem{frame: f}) }

// sync waits until the frames handed over are stored or given up.
func (s *frameStore) sync() {
	synced := make(chan struct{})
	s.queue.push(storeItem{synced: synced})
	<-synced
}

// close waits until the frames handed over are stored or given up.
func (s *frameStore) close() {
	s.queue.close()
	<-s.done
}

func (s *frameStore) run() {
	defer close(s.done)
	for {
		item, ok := s.queue.pop()
		switch {
		case !ok:
			return
		case item.synced != nil:
			close(item.synced)
			continue
		case s.store(item.frame):
			continue
		}
		// The stream took nothing for a whole StoreTimeout: the
		// frames waiting go to it at once, unacked (it keeps them if
		// it can; they are still in order), so the history is held up
		// once, not once per frame.
		for n := s.queue.len(); n > 0; n-- {
			switch item, _ := s.queue.pop(); {
			case item.synced != nil:
				close(item.synced)
			default:
				s.publishUnacked(item.frame)
			}
		}
	}
}

// store publishes frame f until the stream acks it; false when it gave
// up (logged).
func (s *frameStore) store(f protocol.Frame) bool {
	deadline := time.Now().Add(s.storeTimeout)
	msg, err := s.message(f, deadline)
	if err == nil {
		err = s.publishAcked(msg, deadline)
	}
	if err != nil {
		s.log.Error().Err(err).Int64("sequence", f.Sequence).Msg("frame not stored in the history (live subscribers had it): readers of the history see a gap")
		return false
	}
	if len(s.objects) > 0 {
		s.objects = s.history.dropContent(s.tab, s.objects, f.Sequence)
	}
	return true
}

// message is frame f's message, with its message id; a frame too large
// for the bus has its content by reference (see content.go).
func (s *frameStore) message(f protocol.Frame, deadline time.Time) (*nats.Msg, error) {
	return frameMessage(f, s.subject, s.nc.MaxPayload(), func(content string, max int64) (*protocol.ContentRef, string) {
		ref, err := s.putContent(f.Sequence, content, deadline)
		if err == nil {
			return ref, fmt.Sprintf("content of %d bytes is more than one bus message carries: it is object %s in the bucket %s (fullPageRef)", len(content), ref.Object, ref.Bucket)
		}
		s.log.Warn().Err(err).Int64("sequence", f.Sequence).Msg("store frame content in the history; the tab keeps it instead")
		return keepChunks(s.content, s.contentSubj, f.Sequence, content, max)
	})
}

// putContent puts a frame's large content in the object store, again
// while the store has no leader, until deadline.
//
// Each try puts under a name of its own: a try that failed may still be
// stored later (its meta reached a leader that went away, and the next
// one applies it), and under one name its late meta would stand over the
// next try's, naming chunks that are gone (a corrupt object). Every name
// tried is deleted when the frame leaves the history.
func (s *frameStore) putContent(seq int64, content string, deadline time.Time) (ref *protocol.ContentRef, err error) {
	stored := storedContent{seq: seq}
	defer func() { s.objects = append(s.objects, stored) }()
	for try := 1; ; try++ {
		name := protocol.ContentObject(s.tab, seq)
		if try > 1 {
			name += fmt.Sprintf(".%d", try)
		}
		stored.names = append(stored.names, name)
		// A put whose chunks went to a leader that went away waits for
		// their acks to the end of its context: one try is bounded.
		ctx, cancel := context.WithDeadline(context.Background(), earliest(deadline, time.Now().Add(putTry(len(content)))))
		ref, err = s.history.putContent(ctx, name, seq, content)
		cancel()
		if err == nil || !storeRetryable(err) || !s.pause(deadline) {
			return ref, err
		}
	}
}

// publishAcked publishes msg and waits for the stream's ack, sending it
// again until one comes or deadline passes.
func (s *frameStore) publishAcked(msg *nats.Msg, deadline time.Time) error {
	for tries := 1; ; tries++ {
		ctx, cancel := context.WithDeadline(context.Background(), earliest(deadline, time.Now().Add(storeTry)))
		_, err := s.history.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(s.stream))
		cancel()
		switch {
		case err == nil:
			if tries > 1 {
				s.log.Info().Int("tries", tries).Str("msg", msg.Header.Get(jetstream.MsgIDHeader)).Msg("frame stored after the frame stream came back")
			}
			return nil
		case !storeRetryable(err):
			return err
		case !s.pause(deadline):
			return fmt.Errorf("no ack from the frame stream %s within %s (%d tries): %w", s.stream, s.storeTimeout, tries, err)
		}
	}
}

// putTry bounds one put of size bytes: storeTry, and a second a MiB
// (the chunks of a large page take a while to be stored on three servers).
func putTry(size int) time.Duration { return storeTry + time.Duration(size>>20)*time.Second }

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// pause waits a little before another try; false when deadline passed.
func (s *frameStore) pause(deadline time.Time) bool {
	wait := min(storeBackoff, time.Until(deadline))
	if wait <= 0 {
		return false
	}
	time.Sleep(wait)
	return true
}

// publishUnacked sends frame f to the stream as a plain publish.
func (s *frameStore) publishUnacked(f protocol.Frame) {
	msg, err := frameMessage(f, s.subject, s.nc.MaxPayload(), func(content string, max int64) (*protocol.ContentRef, string) {
		return keepChunks(s.content, s.contentSubj, f.Sequence, content, max)
	})
	if err == nil {
		err = s.nc.PublishMsg(msg)
	}
	if err != nil {
		s.log.Error().Err(err).Int64("sequence", f.Sequence).Msg("publish frame to the history")
	}
}

// storeRetryable reports whether a JetStream publish or put that failed
// with err may succeed when sent again: no answer, no responders, or the
// cluster unavailable for now (503: no leader yet).
func storeRetryable(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, errChunksLost), errors.Is(err, errObjectCorrupt):
		return true
	case errors.As(err, &apiErr):
		return apiErr.Code == 503
	}
	return false
}
