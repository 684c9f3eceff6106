package actors

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors/files"
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
const DefaultSettleTimeout = protocol.DefaultSettleTimeout

// TabOptions configure a tab actor.
type TabOptions struct {
	ID       string // subject-safe tab id
	Profile  string // the browser profile the tab runs in, for TabInfo
	Node     string // the node's name, for TabInfo
	Page     *cdpdriver.Page
	Conn     *nats.Conn
	Subjects protocol.Subjects
	Frames   frames.Options
	// SettleTimeout bounds the wait for a new document's load before a
	// frame's content is captured; DefaultSettleTimeout when 0.
	SettleTimeout time.Duration
	// ActionTimeout is the deadline of an action that sets none and has no
	// declared default of its own; protocol.DefaultActionTimeout when 0.
	ActionTimeout time.Duration
	// DialogTimeout is how long a JavaScript dialog stays open for an
	// agent's dialog action before DialogDefault answers it:
	// DefaultDialogTimeout when 0; negative answers every dialog at once.
	DialogTimeout time.Duration
	// DialogDefault is the automatic answer, "accept" (when empty) or
	// "dismiss".
	DialogDefault string
	// Allow checks a URL against the node's whitelist before the tab
	// navigates to it (the browser enforces it for every request anyway);
	// nil allows every http(s) URL.
	Allow func(url string) error
	// UserFrames: a person may act in the tab's browser (it is headed, or
	// someone else's, attached), and the changes they make are frames of
	// source "user" (see navState.sourceOf). Without, as in a headless
	// browser framebus runs, every change the agent did not cause is the
	// page's.
	UserFrames bool
	// Resources carry out a plan's fetch and search actions (the node's);
	// nil refuses them.
	Resources Resources
	// Viewport is what the tab's pages are laid out for, set before its
	// first frame; zero leaves the browser window's own size.
	Viewport protocol.Viewport
	// FileRoots are where a plan's upload may name node files (nil:
	// nowhere); StageDir is where the tab makes its private directory of
	// files to upload ("": the system's temporary directory), within
	// FileLimits.
	FileRoots *files.Roots
	StageDir  string
	// StageReader is the account the browser runs as when it is not this
	// process's (nil): the tab's files are made its, so it can read them.
	StageReader *cdpdriver.BrowserUser
	FileLimits  files.Limits
	// History keeps the tab's frames and their large content in
	// JetStream (see History); nil: frames are live only, and the tab
	// keeps its latest large contents itself.
	History *History
	// Restore, when set, is the latest frame the tab had before its node
	// restarted: the tab goes on after it, its first frame a restore
	// frame at that frame's URL (see restore.go), instead of an open one.
	Restore *protocol.Frame
	// RestoreMarked is the last sequence the restored tab marked as
	// numbered before its node restarted (see seqmark.go): past
	// Restore's when frames it numbered never reached the history.
	RestoreMarked int64
	// SeqMarks, when set, is the directory where the tab marks each
	// frame's sequence before it publishes it, for its restore.
	SeqMarks string
	// PastPlans are the plans the restored tab ran before: a plan sent
	// again under one of their ids does not run again.
	PastPlans []PastPlan
	// BeforePlans, when set, is called right before the tab subscribes
	// to its plans (a restored tab's node stops answering for it).
	BeforePlans func()
	// NodeLeaving is closed when the tab's node stops: a tab that ends
	// then makes no close frame (see closeframe.go).
	NodeLeaving <-chan struct{}
	Logger      zerolog.Logger
}

// Tab is the actor of one browser tab: one goroutine that owns the tab's
// CDP connection, its frame sequence and its navigation state. Plans reach
// it from NATS through a channel; frames leave it on NATS.
type Tab struct {
	id            string
	profile       string
	node          string
	page          *cdpdriver.Page
	nc            *nats.Conn
	subj          protocol.Subjects
	frameSubject  string // subj.TabFrames(id), made once
	frames        *frames.Stream
	nav           *navState
	settleTimeout time.Duration
	dialogs       dialogPolicy
	allow         func(url string) error
	actionTimeout time.Duration
	resources     Resources
	viewport      protocol.Viewport // what resize last set, or the node's
	log           zerolog.Logger
	inbox         chan *queuedPlan // plans, from the plan endpoint
	inboxMu       sync.Mutex       // guards inboxClosed, and sends to inbox
	inboxClosed   bool             // plans now get tab_closed at once
	// queueMu guards the queued plans' states, planIDs and inFlight, which
	// a queued plan's deadline timer reads (see mailbox.go).
	queueMu sync.Mutex
	planIDs planIDs // recent plan ids and their results
	// inFlight are the ids of the plans taken and not yet remembered:
	// one, or more while one waits for a person (person.go).
	inFlight []string
	// outbox holds frames appended but not yet published: a plan's last
	// frame goes out right after the plan's reply, so the reply is not
	// delayed by encoding a frame that may carry a whole page.
	outbox  []protocol.Frame
	pending *pendingFrame // the frame whose content waits for its load
	content *contentStore // large frame contents, without history
	bases   snapshotBases // the snapshots of the document given out, for deltas
	// actionStart is when the last action that changes the page began:
	// what a settle waits for is what was started since (snapshot.go).
	actionStart time.Time
	// settles: a settle ran on this tab, so the page's activity tracker
	// is installed in each document before its first action (tracked:
	// the document it is in, cdpdriver's Document).
	settles bool
	tracked uint64
	store   *frameStore  // stores frames in the history; nil: none
	stage   *files.Stage // files to upload, removed when the tab stops
	// restoring is the restore frame's note while the node brings the tab
	// back (restore.go): the navigate's frame is the node's restore frame.
	restoring string
	roots     *files.Roots
	cancels   cancelState
	person    personState   // people in the loop (person.go)
	screen    screenCast    // its pictures, while watched (screen.go)
	svc       micro.Service // the tab's endpoints: plan, cancel, content, stage
	quit      chan struct{}
	done      chan struct{}
	leaving   <-chan struct{} // the node's NodeLeaving
	mark      *seqMark        // nil: the tab is not restored, and marks nothing
	journal   *planJournal    // nil as mark
	info      atomic.Pointer[protocol.TabInfo]
	stopped   atomic.Bool
}

// startFlushTimeout bounds the round trip that confirms a new tab's
// subscriptions.
const startFlushTimeout = 10 * time.Second

// planQueue is how many plans may wait for a busy tab. Each waits at most
// its client's deadline anyway; past this many, the bus drops new ones as
// a slow consumer and their clients time out.
const planQueue = 8192

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
		profile:       opts.Profile,
		node:          opts.Node,
		page:          opts.Page,
		nc:            opts.Conn,
		subj:          opts.Subjects,
		frameSubject:  opts.Subjects.TabFrames(opts.ID),
		content:       newContentStore(),
		frames:        frames.New(opts.ID, opts.Frames),
		nav:           newNavState(opts.UserFrames),
		settleTimeout: opts.SettleTimeout,
		dialogs:       newDialogPolicy(opts.DialogTimeout, opts.DialogDefault),
		allow:         opts.Allow,
		actionTimeout: opts.ActionTimeout,
		resources:     opts.Resources,
		viewport:      opts.Viewport,
		stage:         newStage(opts),
		roots:         opts.FileRoots,
		log:           opts.Logger.With().Str("tab", opts.ID).Logger(),
		inbox:         make(chan *queuedPlan, planQueue),
		person:        personState{reqs: make(chan personRequest, personQueue)},
		quit:          make(chan struct{}),
		done:          make(chan struct{}),
		leaving:       opts.NodeLeaving,
	}
	watchStalls()
	t.page.SetDialogs(t.dialogs.held(), t.dialogs.accept)
	// A value longer than a reply carries is refused in the page, at once
	// (the room is for the reply around it).
	t.page.SetResultLimit(int(t.nc.MaxPayload()) - replyRoom)
	// So is a frame's content longer than a frame carries.
	t.page.SetContentLimit(t.frames.MaxContentBytes())
	if t.viewport.Width != 0 {
		if _, err := t.page.Emulate(ctx, emulationOf(t.viewport)); err != nil {
			return nil, fmt.Errorf("tab %s: set viewport %s: %w", t.id, t.viewport, err)
		}
	}
	t.nav.observe(t.page.TakeEvents())
	t.nav.takeChanges()
	url, title, err := t.page.Location(ctx)
	if err != nil {
		return nil, fmt.Errorf("tab %s: read location: %w", t.id, err)
	}
	t.nav.url, t.nav.title = url, title
	// Content fetches, cancels and files are answered before the first
	// frame, from the connection while the actor is busy; plans only
	// after it, into the actor's mailbox.
	t.svc, err = addService(t.nc, "framebus tab", map[string]string{"tab": t.id, "node": t.node}, []endpoint{
		{name: "content", subject: t.subj.TabContent(t.id), handle: t.content.serve},
		{name: "cancel", subject: t.subj.TabCancel(t.id), handle: t.answerCancel},
		{name: "stage", subject: t.subj.TabStage(t.id), handle: t.serveStage},
		{name: "control", subject: t.subj.TabControl(t.id), handle: t.takePerson(reqControl)},
		{name: "input", subject: t.subj.TabInput(t.id), handle: t.takePerson(reqInput)},
		{name: "answer", subject: t.subj.TabAnswer(t.id), handle: t.takePerson(reqAnswer)},
		{name: "watch", subject: t.subj.TabWatch(t.id), handle: t.serveWatch},
	})
	if err != nil {
		return nil, fmt.Errorf("tab %s: serve: %w", t.id, err)
	}
	if opts.History != nil {
		t.store = opts.History.startStore(t.nc, t.id, t.subj, t.content, t.log)
	}
	if opts.SeqMarks != "" {
		if t.mark, err = openSeqMark(opts.SeqMarks, t.id); err != nil {
			t.log.Warn().Err(err).Msg("the tab marks no sequences: restored after a kill, it may give a frame the number of one a client had")
		}
		if t.journal, err = openPlanJournal(opts.SeqMarks, t.id); err != nil {
			t.log.Warn().Err(err).Msg("the tab journals no plan ids: restored after a kill, it may run a plan it had begun again")
		}
	}
	if opts.Restore != nil {
		for _, pp := range opts.PastPlans {
			t.planIDs.remember(pp.ID, pp.result(t.id), pp.At)
		}
		t.restore(ctx, *opts.Restore, opts.RestoreMarked)
	} else {
		t.emit(ctx, frames.Change{URL: url, Title: title, Action: protocol.FrameOpen, Source: protocol.SourceBrowser, NewDocument: true}, "", true)
	}
	t.flush()
	if t.store != nil {
		// Once StartTab returns, the tab's first frame is its current
		// one in the history too, as it was with a plain publish.
		t.store.sync()
	}
	if opts.BeforePlans != nil {
		opts.BeforePlans()
	}
	err = t.svc.AddEndpoint("plan", answerableOnly(t.takePlan), micro.WithEndpointSubject(t.subj.TabPlan(t.id)), micro.WithEndpointQueueGroupDisabled())
	if err == nil {
		// Once StartTab returns the tab takes plans: the server has the
		// subscriptions (a round trip), not just the connection's buffer.
		err = t.nc.FlushTimeout(startFlushTimeout)
	}
	if err != nil {
		_ = t.svc.Stop()
		t.closeStage()
		if t.store != nil {
			t.store.close()
		}
		if t.mark != nil {
			t.mark.close(false)
		}
		if t.journal != nil {
			t.journal.close(false)
		}
		return nil, fmt.Errorf("tab %s: subscribe: %w", t.id, err)
	}
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

// takePlan hands a plan to the actor (from the plan endpoint's
// goroutine): decoded here, so a malformed one is answered at once, and
// with a timer that answers it expired at its deadline if it still waits
// then (see mailbox.go). When the tab has stopped, or has more plans
// queued than it holds, it answers at once.
func (t *Tab) takePlan(m micro.Request) {
	plan, err := protocol.DecodePlan(m.Data())
	if err != nil {
		respond(m, protocol.NewErrorReply(err), t.log)
		return
	}
	if err := stallRefusal(t.node); err != nil && !t.knownPlan(plan.ID) {
		// See stall.go. A plan id the tab ran, or runs, is no new plan:
		// it is answered with that run's result, not "did not run".
		respond(m, protocol.NewErrorReply(err), t.log)
		return
	}
	if asksPerson(plan) {
		plan.Sender = senderOf(m) // whose handoff or question it is
	}
	q := t.queue(m, plan)
	t.inboxMu.Lock()
	defer t.inboxMu.Unlock()
	if t.inboxClosed {
		t.refuseQueued(q, protocol.Errorf(protocol.CodeTabClosed, "tab %s closed", t.id))
		return
	}
	select {
	case t.inbox <- q:
	default:
		t.refuseQueued(q, protocol.Errorf(protocol.CodeUnavailable, "tab %s has %d plans queued already; send this one again later", t.id, planQueue))
	}
}

// knownPlan reports whether plan id ran on the tab (its result is
// remembered) or is running.
func (t *Tab) knownPlan(id string) bool {
	if id == "" {
		return false
	}
	t.queueMu.Lock()
	defer t.queueMu.Unlock()
	_, ran := t.planIDs.result(id, time.Now())
	return ran || slices.Contains(t.inFlight, id)
}

// receive runs a plan taken from the mailbox; one whose id ran before
// gets that run's result (see planids.go), and one answered at its
// deadline while it waited (see mailbox.go) is done.
func (t *Tab) receive(q *queuedPlan) {
	plan := q.plan
	if t.take(q) {
		return
	}
	ctx, run := t.cancels.start(plan.ID, plan.Sender)
	var res protocol.PlanResult
	if run {
		res = t.runPlan(ctx, plan, q.at)
	} else {
		res = protocol.PlanResult{Version: protocol.Version, Tab: t.id, PlanID: plan.ID, Results: []protocol.ActionResult{}, Sequence: t.frames.Sequence()}
		stop(&res, 0, protocol.Errorf(protocol.CodeCancelled, "plan %s was cancelled before it ran", plan.ID), nil, t.frames.Sequence())
	}
	t.cancels.done()
	t.ran(plan.ID, res)
	t.respondPlan(q.m, res)
	// Let the connection's flusher send the reply now: with one P (as
	// serve runs on two cores) it would wait until this goroutine blocks,
	// after the frames are encoded and published.
	runtime.Gosched()
	// Observers (the viewer) see what plans did, refusals included.
	t.publishEvent("result", protocol.NewPlanEvent(res, plan.Agent, time.Now().UTC()))
}

// lost reports whether the page connection is gone (the tab closed, its
// browser went away).
func (t *Tab) lost() bool {
	select {
	case <-t.page.Done():
		return true
	default:
		return false
	}
}

// closeStage removes the tab's staged files (a stage request still on its
// way is refused: the stage is closed).
func (t *Tab) closeStage() {
	if err := t.stage.Close(); err != nil {
		t.log.Warn().Err(err).Msg("remove staged files")
	}
}

// closeInbox stops the tab's endpoints and answers the plans still
// queued, and those on their way, with tab_closed.
func (t *Tab) closeInbox() {
	t.screen.close()
	if err := t.svc.Stop(); err != nil {
		t.log.Warn().Err(err).Msg("stop the tab's endpoints")
	}
	t.inboxMu.Lock()
	t.inboxClosed = true
	t.inboxMu.Unlock()
	closed := protocol.Errorf(protocol.CodeTabClosed, "tab %s closed", t.id)
	for _, q := range t.person.deferred {
		t.refuseQueued(q, closed)
	}
	for {
		select {
		case q := <-t.inbox:
			t.refuseQueued(q, closed)
		case r := <-t.person.reqs:
			respond(r.m, protocol.NewErrorReply(closed), t.log)
		default:
			return
		}
	}
}

func (t *Tab) run() {
	defer close(t.done)
	defer t.closeStage()
	defer t.closeInbox()
	defer func() {
		if t.pending != nil {
			t.completePending(context.Background(), "tab stopped before the page finished loading; content left out", false)
		}
		closed := t.emitClose()
		t.flush()
		if t.store != nil {
			t.store.close() // the frames so far reach the history first
		}
		if t.mark != nil {
			t.mark.close(closed) // kept for its restore unless it closed
		}
		if t.journal != nil {
			t.journal.close(closed)
		}
	}()
	for t.step(nil, nil, nil) {
	}
	if t.lost() {
		t.log.Info().Msg("page connection lost; tab retired")
	}
}

// step serves one thing that reaches the tab: its page's events, a plan,
// a person's request, a timer. It reports false when the tab is done
// (its page connection lost, or the tab stopped). done, wake and tick
// end the step too (a plan waiting for a person, see waitPerson).
func (t *Tab) step(done <-chan struct{}, wake, tick <-chan time.Time) bool {
	ctx := context.Background()
	select {
	case <-t.page.Notify():
		t.absorb(ctx)
		t.flush()
	case q := <-t.inbox:
		if t.person.waiting > 0 && t.inFlightPlan(q.plan.ID) {
			// A repeat of the plan waiting for a person: its answer is
			// that plan's result, once it has one.
			t.person.deferred = append(t.person.deferred, q)
			return true
		}
		t.receive(q)
		// The content of a loaded document's frame, held back
		// until the plan was answered (see frameFor).
		t.settlePending(ctx, false, time.Time{})
		t.flush()
		for t.person.waiting == 0 && len(t.person.deferred) > 0 {
			d := t.person.deferred[0]
			t.person.deferred = t.person.deferred[1:]
			t.receive(d)
		}
	case r := <-t.person.reqs:
		t.answerPerson(ctx, r)
		t.flush()
	case <-t.inputPaused():
		t.frameUserInput(ctx)
		t.flush()
	case <-t.pendingExpired():
		t.absorb(ctx)
		if t.pending != nil {
			t.completePending(ctx, fmt.Sprintf("page did not finish loading within %s; content captured before load", t.settleTimeout), true)
		}
		t.flush()
	case <-t.dialogs.expired():
		t.answerExpiredDialog()
	case <-t.page.Done():
		return false
	case <-t.quit:
		return false
	case <-done:
	case <-wake:
	case <-tick:
	}
	return true
}

// absorb drains the events received so far and turns every change the
// agent did not cause into a frame of source "page" or "user".
func (t *Tab) absorb(ctx context.Context) {
	t.nav.observe(t.page.TakeEvents())
	t.reportDialogs()
	t.reportBlocked()
	t.settlePending(ctx, false, time.Time{})
	for _, c := range t.nav.takeChanges() {
		t.frameFor(ctx, c, frames.Change{Action: c.kind, Source: c.source})
	}
}

// waitFor folds events into the state until cond holds or ctx ends.
func (t *Tab) waitFor(ctx context.Context, cond func() bool) bool {
	return t.waitForOr(ctx, cond, nil)
}

// waitForOr is waitFor that also gives up when stop fires.
func (t *Tab) waitForOr(ctx context.Context, cond func() bool, stop <-chan time.Time) bool {
	for !cond() {
		select {
		case <-t.page.Notify():
			t.nav.observe(t.page.TakeEvents())
		case <-ctx.Done():
			return false
		case <-t.page.Done():
			return false
		case <-stop:
			return false
		}
	}
	return true
}

// replyRoom is what a plan's reply needs beside one action's value: its
// envelope, the headroom respondPlan keeps.
const replyRoom = 4096

// respondPlan answers a plan. A reply more than one bus message carries
// (a huge eval value, the text of a huge page) would be dropped by the
// bus and leave the agent waiting: the values are left out instead, and
// the plan answers too_large, with its sequence, since its actions ran.
// The reply is encoded once, as it is sent; only one too large is
// encoded again, without its values.
func (t *Tab) respondPlan(m micro.Request, res protocol.PlanResult) {
	if m.Reply() == "" {
		return
	}
	data, ok := encodeReply(res, t.log)
	if !ok {
		return
	}
	if max := t.nc.MaxPayload(); int64(len(data)) > max-1024 {
		res.OK, res.Code = false, protocol.CodeTooLarge
		res.Error = fmt.Sprintf("the reply is %d bytes, more than one bus message carries (%d): ask for less (a selector, a smaller value)", len(data), max)
		for i := range res.Results {
			if r := &res.Results[i]; len(r.Value) > 0 {
				r.OK, r.Code, r.Error, r.Value = false, protocol.CodeTooLarge, fmt.Sprintf("value of %d bytes left out", len(r.Value)), nil
			}
		}
		if data, ok = encodeReply(res, t.log); !ok {
			return
		}
	}
	if err := m.Respond(data); err != nil {
		t.log.Warn().Err(err).Msg("send reply")
	}
}

func respond(m micro.Request, v any, log zerolog.Logger) {
	if m.Reply() == "" {
		return
	}
	if data, ok := encodeReply(v, log); ok {
		if err := m.Respond(data); err != nil {
			log.Warn().Err(err).Msg("send reply")
		}
	}
}

// respondMsg is respond for a plain subscription's message.
func respondMsg(m *nats.Msg, v any, log zerolog.Logger) {
	if m.Reply == "" {
		return
	}
	if data, ok := encodeReply(v, log); ok {
		if err := m.Respond(data); err != nil {
			log.Warn().Err(err).Msg("send reply")
		}
	}
}

func encodeReply(v any, log zerolog.Logger) ([]byte, bool) {
	data, err := protocol.Marshal(v)
	if err != nil {
		log.Error().Err(err).Msg("encode reply")
		return nil, false
	}
	return data, true
}
