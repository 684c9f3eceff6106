package actors

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// A tab's screencast, for people watching it (the viewer): pictures of
// the page on its event.screen subject while a watch lease lasts, and
// nothing on the bus otherwise. It runs beside the actor, on the page's
// connection: a picture never waits for an action, nor an action for it.

// Screencast settings: pictures the size of a laptop's page, at most
// protocol.MaxScreenRate a second (a page that animates at 60 costs that
// at most), fewer while only thumbnails are watched.
const (
	screenMaxWidth  = 1280
	screenMaxHeight = 800
	screenQuality   = 60
)

// screenCast is a tab's screencast and its lease.
type screenCast struct {
	mu     sync.Mutex
	until  time.Time
	rates  map[int]time.Time  // each rate leased (pictures a second), until when
	cancel context.CancelFunc // the screencast running; nil when none
	timer  *time.Timer        // ends it at the lease's end
	closed bool
	last   *nats.Msg // the latest picture sent, for a new watcher
}

// serveWatch answers a watch request: it starts the screencast or
// extends its lease.
func (t *Tab) serveWatch(m micro.Request) {
	var req protocol.WatchRequest
	if len(m.Data()) > 0 {
		if err := protocol.DecodeRequest(m.Data(), "watch", &req); err != nil {
			respond(m, protocol.NewErrorReply(err), t.log)
			return
		}
	}
	rate := req.Rate
	switch {
	case rate < 0:
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeBadRequest, "watch: rate %d: want 1 to %d pictures a second (0: %d)", rate, protocol.MaxScreenRate, protocol.MaxScreenRate)), t.log)
		return
	case rate == 0 || rate > protocol.MaxScreenRate:
		rate = protocol.MaxScreenRate
	}
	secs := req.Seconds
	switch {
	case secs <= 0:
		secs = protocol.DefaultWatch
	case secs > protocol.MaxWatch:
		secs = protocol.MaxWatch
	}
	until, err := t.screen.lease(time.Duration(secs)*time.Second, rate, t.castScreen)
	if err != nil {
		respond(m, protocol.NewErrorReply(err), t.log)
		return
	}
	if last := t.screen.latest(); req.Picture && last != nil {
		if err := t.nc.PublishMsg(last); err != nil {
			t.log.Debug().Err(err).Msg("publish a screen picture again")
		}
	}
	respond(m, protocol.WatchReply{OK: true, Until: until}, t.log)
}

// lease extends the lease of rate by d from now, starting cast when
// none runs.
func (s *screenCast) lease(d time.Duration, rate int, cast func(ctx context.Context)) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return time.Time{}, protocol.Errorf(protocol.CodeTabClosed, "the tab closed")
	}
	until := time.Now().Add(d)
	if until.After(s.until) {
		s.until = until
	}
	if s.rates == nil {
		s.rates = map[int]time.Time{}
	}
	if until.After(s.rates[rate]) {
		s.rates[rate] = until
	}
	if s.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		s.cancel = cancel
		go func() {
			cast(ctx)
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.timer != nil {
				s.timer.Stop()
			}
			s.cancel, s.timer, s.last = nil, nil, nil
		}()
		s.timer = time.AfterFunc(d, s.expire)
	}
	return s.until, nil
}

// expire ends the screencast once its lease is over.
func (s *screenCast) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel == nil {
		return
	}
	if left := time.Until(s.until); left > 0 {
		s.timer.Reset(left)
		return
	}
	s.cancel()
}

// interval is the least time between two pictures: the highest rate of
// the leases that last says it.
func (s *screenCast) interval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, best := time.Now(), 0
	for rate, until := range s.rates {
		if !until.After(now) {
			delete(s.rates, rate)
		} else if rate > best {
			best = rate
		}
	}
	if best == 0 {
		best = protocol.MaxScreenRate
	}
	return time.Second / time.Duration(best)
}

// latest is the latest picture sent while the screencast runs.
func (s *screenCast) latest() *nats.Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel == nil {
		return nil
	}
	return s.last
}

// sent keeps the latest picture.
func (s *screenCast) sent(m *nats.Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = m
}

// close ends the screencast for good (the tab stops).
func (s *screenCast) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.cancel != nil {
		s.cancel()
	}
}

// castScreen runs the page's screencast until ctx ends, publishing each
// picture.
func (t *Tab) castScreen(ctx context.Context) {
	subject := t.subj.TabEvents(t.id, "screen")
	opts := cdpdriver.ScreencastOptions{MaxWidth: screenMaxWidth, MaxHeight: screenMaxHeight, Quality: screenQuality, Interval: t.screen.interval}
	err := t.page.Screencast(ctx, opts, func(f cdpdriver.ScreenFrame) {
		meta, _ := json.Marshal(protocol.ScreenMeta{Tab: t.id, Sequence: t.Info().Sequence, DeviceWidth: f.DeviceWidth, DeviceHeight: f.DeviceHeight,
			OffsetTop: f.OffsetTop, ScrollX: f.ScrollX, ScrollY: f.ScrollY, Drawn: f.Drawn.UTC(), Sent: time.Now().UTC()})
		msg := &nats.Msg{Subject: subject, Data: f.JPEG, Header: nats.Header{protocol.ScreenHeader: []string{string(meta)}}}
		if err := t.nc.PublishMsg(msg); err != nil {
			t.log.Debug().Err(err).Msg("publish a screen picture")
		}
		t.screen.sent(msg)
	})
	if err != nil && !t.lost() {
		t.log.Warn().Err(err).Msg("screencast ended")
	}
}
