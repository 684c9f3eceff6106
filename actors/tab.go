package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/protocol"
)

// Frame actions for changes the agent did not cause, re-exported short.
const (
	frameNavigation   = protocol.FrameNavigation
	frameSameDocument = protocol.FrameSameDocument
	frameCrash        = protocol.FrameCrash
)

// DefaultSettleTimeout bounds how long a frame waits for its new document's
// load event before its content is captured anyway.
const DefaultSettleTimeout = 10 * time.Second

// TabOptions configure a tab actor.
type TabOptions struct {
	ID       string // subject-safe tab id
	Page     *cdpdriver.Page
	Conn     *nats.Conn
	Subjects protocol.Subjects
	Frames   frames.Options
	// SettleTimeout bounds the wait for a new document's load before a
	// frame's content is captured; DefaultSettleTimeout when 0.
	SettleTimeout time.Duration
	Logger        zerolog.Logger
}

// Tab is the actor of one browser tab: one goroutine that owns the tab's
// CDP connection, its frame sequence and its navigation state. Plans reach
// it from NATS through a channel; frames leave it on NATS.
type Tab struct {
	id            string
	page          *cdpdriver.Page
	nc            *nats.Conn
	subj          protocol.Subjects
	frames        *frames.Stream
	nav           *navState
	settleTimeout time.Duration
	log           zerolog.Logger
	plans         chan planRequest
	// outbox holds frames appended but not yet published: a plan's last
	// frame goes out right after the plan's reply, so the reply is not
	// delayed by encoding a frame that may carry a whole page.
	outbox  []protocol.Frame
	sub     *nats.Subscription
	quit    chan struct{}
	done    chan struct{}
	info    atomic.Pointer[protocol.TabInfo]
	stopped atomic.Bool
}

type planRequest struct {
	plan protocol.Plan
	msg  *nats.Msg
}

// StartTab emits the tab's first frame, subscribes to its plan subject and
// starts its goroutine.
func StartTab(ctx context.Context, opts TabOptions) (*Tab, error) {
	if !protocol.ValidTabID(opts.ID) {
		return nil, fmt.Errorf("tab id %q is not subject-safe", opts.ID)
	}
	if opts.SettleTimeout <= 0 {
		opts.SettleTimeout = DefaultSettleTimeout
	}
	t := &Tab{
		id:            opts.ID,
		page:          opts.Page,
		nc:            opts.Conn,
		subj:          opts.Subjects,
		frames:        frames.New(opts.ID, opts.Frames),
		nav:           newNavState(),
		settleTimeout: opts.SettleTimeout,
		log:           opts.Logger.With().Str("tab", opts.ID).Logger(),
		plans:         make(chan planRequest),
		quit:          make(chan struct{}),
		done:          make(chan struct{}),
	}
	t.nav.observe(t.page.TakeEvents())
	t.nav.takeChanges()
	url, title, err := t.page.Location(ctx)
	if err != nil {
		return nil, fmt.Errorf("tab %s: read location: %w", t.id, err)
	}
	t.nav.url, t.nav.title = url, title
	t.emit(ctx, frames.Change{URL: url, Title: title, Action: protocol.FrameOpen, Source: protocol.SourceBrowser, NewDocument: true}, "", true)
	t.flush()
	sub, err := t.nc.Subscribe(t.subj.TabPlan(t.id), t.receive)
	if err != nil {
		return nil, fmt.Errorf("tab %s: subscribe: %w", t.id, err)
	}
	// A tab takes plans one at a time anyway; raise the pending limits so a
	// burst of plans queues instead of being dropped as a slow consumer.
	_ = sub.SetPendingLimits(-1, -1)
	t.sub = sub
	go t.run()
	return t, nil
}

// ID is the tab's id.
func (t *Tab) ID() string { return t.id }

// Info is the tab's latest state, safe to read from any goroutine.
func (t *Tab) Info() protocol.TabInfo { return *t.info.Load() }

// Done is closed when the actor has stopped.
func (t *Tab) Done() <-chan struct{} { return t.done }

// Stop ends the actor and waits for it. Plans still queued are answered
// with tab_closed. It does not close the page.
func (t *Tab) Stop() {
	if t.stopped.CompareAndSwap(false, true) {
		close(t.quit)
	}
	<-t.done
}

// receive runs on the subscription's goroutine: it validates the plan so a
// malformed one is answered at once, and hands good ones to the actor.
func (t *Tab) receive(m *nats.Msg) {
	plan, err := protocol.DecodePlan(m.Data)
	if err != nil {
		respond(m, protocol.NewErrorReply(err), t.log)
		return
	}
	select {
	case t.plans <- planRequest{plan: plan, msg: m}:
	case <-t.done:
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeTabClosed, "tab %s closed", t.id)), t.log)
	}
}

func (t *Tab) run() {
	defer close(t.done)
	defer t.sub.Unsubscribe()
	defer t.flush()
	for {
		select {
		case <-t.page.Notify():
			t.absorb(context.Background())
			t.flush()
		case req := <-t.plans:
			res := t.runPlan(req.plan)
			respond(req.msg, res, t.log)
			t.flush()
		case <-t.page.Done():
			t.log.Info().Msg("page connection lost; tab retired")
			return
		case <-t.quit:
			return
		}
	}
}

// absorb drains the events received so far and turns every change the
// agent did not cause into a frame of source "page".
func (t *Tab) absorb(ctx context.Context) {
	t.nav.observe(t.page.TakeEvents())
	t.answerDialogs(ctx)
	for _, c := range t.nav.takeChanges() {
		t.frameFor(ctx, c, frames.Change{Action: c.kind, Source: protocol.SourcePage})
	}
}

// runPlan resolves a plan: each action runs only while its basedOnSequence
// is the current frame, and the plan stops at the first that is not, or at
// the first failure.
func (t *Tab) runPlan(plan protocol.Plan) protocol.PlanResult {
	res := protocol.PlanResult{OK: true, Version: protocol.Version, Tab: t.id, PlanID: plan.ID, Results: []protocol.ActionResult{}}
	for i, a := range plan.Actions {
		ctx := context.Background()
		t.absorb(ctx) // everything received so far counts before the check
		if err := t.frames.Check(a.BasedOnSequence); err != nil {
			stop(&res, i, err, a.BasedOnSequence, t.frames.Sequence())
			break
		}
		r := t.execute(ctx, plan, i, a)
		res.Results = append(res.Results, r)
		if !r.OK {
			stop(&res, i, &protocol.Error{Code: r.Code, Message: r.Error}, nil, t.frames.Sequence())
			break
		}
		res.Executed++
	}
	res.Sequence = t.frames.Sequence()
	return res
}

// execute runs one action whose guard passed and settles it into one frame.
func (t *Tab) execute(ctx context.Context, plan protocol.Plan, index int, a protocol.Action) protocol.ActionResult {
	r := protocol.ActionResult{Index: index, Type: a.Type}
	h, ok := handlers[a.Type]
	if !ok {
		r.Code, r.Error = protocol.CodeBadRequest, fmt.Sprintf("action %q is not implemented by this node", a.Type)
		return r
	}
	t.flush() // frames so far go out before the page changes again
	spec, _ := protocol.LookupAction(a.Type)
	actx, cancel := cdpdriver.WithTimeout(ctx, a.EffectiveTimeout())
	defer cancel()
	out, err := h(t, actx, a)
	t.settle(actx, out)
	if err != nil {
		r.Code, r.Error = codeOf(err), err.Error()
	} else {
		r.OK = true
		r.Value = out.value
	}
	changes := t.nav.takeChanges()
	if !spec.Mutates || (err != nil && len(changes) == 0) {
		return r
	}
	change := frames.Change{Action: a.Type, Source: protocol.SourceAgent, PlanID: plan.ID, Agent: plan.Agent}
	var f protocol.Frame
	if len(changes) == 0 {
		f = t.frameFor(ctx, pageChange{url: t.nav.url}, change)
	} else {
		// Every change the action caused settles into its one frame,
		// carrying the final state.
		f = t.frameFor(ctx, changes[len(changes)-1], change)
	}
	r.Sequence, r.URL, r.Title = f.Sequence, f.URL, f.Title
	return r
}

// settle waits, within the action's deadline, until the navigation the
// action started (if any) has committed or ended.
func (t *Tab) settle(ctx context.Context, out outcome) {
	if out.barrier {
		t.barrier(ctx)
	} else {
		t.nav.observe(t.page.TakeEvents())
	}
	switch {
	case out.loaderID != "":
		t.waitFor(ctx, func() bool { return t.nav.committed(out.loaderID) })
	case out.sameDocument:
		t.waitFor(ctx, func() bool { return len(t.nav.changes) > 0 })
	}
	// A navigation the page requested during the action (a link, a form,
	// a script) belongs to the action too.
	t.waitFor(ctx, func() bool { return !t.nav.navigating })
}

// barrier makes sure the events the action caused in the renderer have
// reached us: a renderer round trip after the action, and its answer also
// refreshes URL and title.
func (t *Tab) barrier(ctx context.Context) {
	url, title, err := t.page.Location(ctx)
	t.nav.observe(t.page.TakeEvents())
	if err == nil && !t.nav.navigating && url == t.nav.url {
		t.nav.title = title
	}
}

// waitFor folds events into the state until cond holds or ctx ends.
func (t *Tab) waitFor(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-t.page.Notify():
			t.nav.observe(t.page.TakeEvents())
		case <-ctx.Done():
			return false
		case <-t.page.Done():
			return false
		}
	}
	return true
}

// frameFor settles change c into a frame: for a new document it waits for
// its load (bounded) so the content is the loaded page, then publishes.
func (t *Tab) frameFor(ctx context.Context, c pageChange, change frames.Change) protocol.Frame {
	change.URL, change.Title = c.url, t.nav.title
	change.NewDocument = c.kind == frameNavigation
	if change.NewDocument {
		ctx, cancel := context.WithTimeout(ctx, t.settleTimeout)
		loaded := t.waitFor(ctx, func() bool { return t.nav.loaded[c.loaderID] || len(t.nav.changes) > 0 })
		cancel()
		if len(t.nav.changes) > 0 {
			// Replaced before it loaded: its content is gone.
			return t.emit(ctx, change, "document replaced before it finished loading; content left out", false)
		}
		if !loaded {
			return t.emit(ctx, change, fmt.Sprintf("page did not finish loading within %s; content captured before load", t.settleTimeout), true)
		}
	}
	return t.emit(ctx, change, "", true)
}

// emit captures content if the policy wants it and capture allows, appends
// the frame and publishes it.
func (t *Tab) emit(ctx context.Context, change frames.Change, note string, capture bool) protocol.Frame {
	var content *string
	if capture && t.frames.WantsContent(change) {
		cctx, cancel := context.WithTimeout(ctx, t.settleTimeout)
		url, title, text, err := t.page.Content(cctx, string(t.frames.Format()))
		cancel()
		switch {
		case err != nil:
			note = joinNote(note, "content unavailable: "+err.Error())
		case url != change.URL:
			// The document moved on while we read it; keep the frame honest.
			note = joinNote(note, "content unavailable: the page changed to "+url+" while it was read")
		default:
			content = &text
			change.Title = title
			t.nav.title = title
		}
	}
	f := t.frames.Append(change, content, note)
	t.outbox = append(t.outbox, f)
	t.info.Store(&protocol.TabInfo{Tab: t.id, URL: f.URL, Title: f.Title, Sequence: f.Sequence})
	return f
}

// flush publishes the frames in the outbox, in order.
func (t *Tab) flush() {
	for i, f := range t.outbox {
		t.publish(f)
		t.outbox[i] = protocol.Frame{}
	}
	t.outbox = t.outbox[:0]
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// publish sends a frame to the tab's frame subject. A
// frame too large for the bus is sent without its content, with a note,
// never dropped.
func (t *Tab) publish(f protocol.Frame) {
	data, err := json.Marshal(f)
	if err == nil && int64(len(data)) > t.nc.MaxPayload() && f.FullPage != nil {
		size := len(*f.FullPage)
		f.FullPage, f.FullPageFormat = nil, ""
		f.Note = joinNote(f.Note, fmt.Sprintf("content of %d bytes exceeds the bus payload limit; left out", size))
		data, err = json.Marshal(f)
	}
	if err == nil {
		err = t.nc.Publish(t.subj.TabFrames(t.id), data)
	}
	if err != nil {
		t.log.Error().Err(err).Int64("sequence", f.Sequence).Msg("publish frame")
	}
}

// answerDialogs accepts JavaScript dialogs so they never wedge the tab,
// and reports each on the tab's dialog event subject.
func (t *Tab) answerDialogs(ctx context.Context) {
	for _, d := range t.nav.dialogs {
		data, _ := json.Marshal(d)
		_ = t.nc.Publish(t.subj.TabEvents(t.id, "dialog"), data)
		if err := t.page.HandleDialog(ctx, true, d.DefaultPrompt); err != nil {
			t.log.Warn().Err(err).Str("type", d.Type).Msg("answer dialog")
		}
	}
	t.nav.dialogs = nil
}

// stop records that a plan stopped at action i with err.
func stop(res *protocol.PlanResult, i int, err error, expected *int64, current int64) {
	res.OK, res.Code, res.Error = false, protocol.CodeOf(err), err.Error()
	res.Stopped = &protocol.Stop{Index: i, Code: res.Code, Expected: expected, Current: current}
}

// codeOf maps driver errors to protocol codes.
func codeOf(err error) protocol.Code {
	var (
		nav     *cdpdriver.NavigationError
		nf      *cdpdriver.ElementNotFoundError
		nv      *cdpdriver.ElementNotVisibleError
		sel     *cdpdriver.InvalidSelectorError
		js      *cdpdriver.JSError
		ser     *cdpdriver.SerializationError
		timeout *cdpdriver.TimeoutError
		perr    *protocol.Error
	)
	switch {
	case errors.As(err, &perr):
		return perr.Code
	case errors.As(err, &nav):
		return protocol.CodeNavigationFailed
	case errors.As(err, &nf), errors.As(err, &nv):
		return protocol.CodeElementNotFound
	case errors.As(err, &sel):
		return protocol.CodeBadRequest
	case errors.As(err, &js), errors.As(err, &ser):
		return protocol.CodeJSError
	case errors.As(err, &timeout):
		return protocol.CodeTimeout
	case errors.Is(err, cdpdriver.ErrConnectionLost):
		return protocol.CodeTabClosed
	}
	return protocol.CodeInternal
}

func respond(m *nats.Msg, v any, log zerolog.Logger) {
	if m.Reply == "" {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		log.Error().Err(err).Msg("encode reply")
		return
	}
	if err := m.Respond(data); err != nil {
		log.Warn().Err(err).Msg("send reply")
	}
}
