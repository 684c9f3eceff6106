package actors

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/protocol"
)

// People in the loop (docs/people.md). An agent's handoff puts the tab
// under a person's control until they hand it back, its until condition
// holds, or it times out; a person may also take a tab over on their own.
// While a person has it, plans that would change it get user_control,
// and the person's own changes are frames of source "user". An agent's
// ask waits for a person's answer. A handoff or ask waits inside its
// plan, in the tab's goroutine, which meanwhile serves everything else a
// tab serves (waitPerson): its page's events, other plans, people's
// requests.

// personActions are the actions the resolver runs here, not as
// handlers: each waits for a person.
var personActions = map[string]bool{"handoff": true, "ask": true}

// senderOf is who sent request m, as the bus server says (bus.SenderOf).
func senderOf(m micro.Request) protocol.Sender { return bus.SenderOf(nats.Header(m.Headers())) }

// asksPerson reports whether plan has a handoff or an ask, whose sender
// the tab keeps (the others' it need not read).
func asksPerson(plan protocol.Plan) bool {
	for _, a := range plan.Actions {
		if personActions[a.Type] {
			return true
		}
	}
	return plan.Action != nil && personActions[plan.Action.Type]
}

// personState is the tab's people: who has it, what they are asked.
type personState struct {
	control *protocol.Control // a person has the tab; nil: the agents
	// waiting counts the handoffs and asks open in the goroutine's stack:
	// while one waits, no other may start.
	waiting   int
	questions []*openQuestion // asks waiting for an answer, oldest first
	reqs      chan personRequest
	// deferred are repeats of a plan that waits for a person: answered
	// with its result once it ends (see step).
	deferred []*queuedPlan
	input    userInput
	// ended is the last person's control that ended, and its frame.
	ended      *protocol.Control
	endedFrame protocol.Frame
	// acting: the tab runs a person's navigation (input), whose frame is
	// theirs.
	acting bool
	// owner is who sent the plan whose handoff the tab is in: that
	// agent may hand it back (for a person it asked itself).
	owner protocol.Sender
}

// personRequest is a control, input or answer request, for the actor.
type personRequest struct {
	kind string
	m    micro.Request
}

const (
	reqControl = "control"
	reqInput   = "input"
	reqAnswer  = "answer"
)

// personQueue bounds the people's requests waiting for a busy tab.
const personQueue = 1024

// openQuestion is an ask waiting for its answer.
type openQuestion struct {
	q      protocol.Question
	answer *protocol.Answer
	asker  protocol.Sender // who sent the plan that asks: it may answer
}

// userInput is a person's input not yet in a frame: input that changes
// the page without a navigation (typing, a click that opens a menu) makes
// one frame, "input", once the person pauses for inputQuiet, or before a
// plan is checked, or the tab handed back.
type userInput struct {
	changed bool
	quiet   *time.Timer
}

// inputQuiet is the pause after a person's input that ends its frame.
const inputQuiet = 400 * time.Millisecond

// untilPoll is how often a handoff's text or selector condition is
// looked for in the page (its URL is known without asking).
const untilPoll = 500 * time.Millisecond

// personInputTimeout bounds the dispatch of one input event.
const personInputTimeout = 10 * time.Second

// takePerson hands a person's request to the actor, from the endpoint's
// goroutine: in order, as they came.
func (t *Tab) takePerson(kind string) micro.HandlerFunc {
	return func(m micro.Request) {
		t.inboxMu.Lock()
		defer t.inboxMu.Unlock()
		if t.inboxClosed {
			respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeTabClosed, "tab %s closed", t.id)), t.log)
			return
		}
		select {
		case t.person.reqs <- personRequest{kind, m}:
		default:
			respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeUnavailable, "tab %s has %d requests of people queued already; send this one again later", t.id, personQueue)), t.log)
		}
	}
}

// answerPerson serves one person's request.
func (t *Tab) answerPerson(ctx context.Context, r personRequest) {
	var reply any
	var err error
	from := senderOf(r.m)
	switch r.kind {
	case reqControl:
		var req protocol.ControlRequest
		if req, err = protocol.DecodeControlRequest(r.m.Data()); err == nil {
			reply, err = t.changeHands(ctx, req, from)
		}
	case reqInput:
		var req protocol.InputRequest
		if req, err = protocol.DecodeInputRequest(r.m.Data()); err == nil {
			reply, err = t.personInput(ctx, req, from)
		}
	case reqAnswer:
		var req protocol.AnswerRequest
		if req, err = protocol.DecodeAnswerRequest(r.m.Data()); err == nil {
			reply, err = t.answerQuestion(req, from)
		}
	}
	if err != nil {
		reply = protocol.NewErrorReply(err)
	}
	respond(r.m, reply, t.log)
}

// Who may do what with a person's control (docs/people.md): the bus
// server says who sent each request (bus.SenderOf), so none can pass for
// another. A person (an operator, or the node's own admin) takes a tab
// over; an agent never does, so no agent acts past user_control as a
// person. Only the person who has the tab acts in it. An operator hands
// any back; an agent only its own handoff, for the person it asked
// itself. An operator answers any question; an agent only its own.

// mayHandBack refuses from's handback of c unless it may.
func (t *Tab) mayHandBack(from protocol.Sender, c *protocol.Control) error {
	if from.Role != protocol.RoleAgent || c.Kind == protocol.ControlHandoff && t.person.owner == from {
		return nil
	}
	whose := "a person's takeover"
	if c.Kind == protocol.ControlHandoff {
		whose = "another agent's handoff"
	}
	return protocol.Errorf(protocol.CodePermissionDenied, "permission denied: tab %s is in %s; an agent hands back only its own handoff (an operator hands back any)", t.id, whose)
}

// changeHands is a takeover or a handback.
func (t *Tab) changeHands(ctx context.Context, req protocol.ControlRequest, from protocol.Sender) (protocol.ControlReply, error) {
	t.absorb(ctx) // the frames so far come before the change of hands
	c := t.person.control
	if req.Op == protocol.ControlHandback {
		if c == nil {
			return protocol.ControlReply{}, protocol.Errorf(protocol.CodeNotInControl, "tab %s is not under a person's control: nothing to hand back", t.id)
		}
		if err := t.mayHandBack(from, c); err != nil {
			return protocol.ControlReply{}, err
		}
		t.frameUserInput(ctx)
		t.endControl(ctx, protocol.EndedHandback, cmp.Or(req.By, from.User), protocol.SourceUser)
		return protocol.ControlReply{OK: true, Tab: t.id, Sequence: t.frames.Sequence(), Control: t.person.ended}, nil
	}
	if from.Role == protocol.RoleAgent {
		return protocol.ControlReply{}, protocol.Errorf(protocol.CodePermissionDenied,
			"permission denied: an agent may not take a tab over, which is a person's to do (an operator's credentials: framebus view, framebus takeover); an agent hands a tab to a person with a handoff action")
	}
	if c != nil {
		// A person has it already: a handoff waiting for someone (the
		// person who takes it now), or someone's takeover.
		if c.Holder != "" && from.Known() && c.Holder != from.User {
			return protocol.ControlReply{}, protocol.Errorf(protocol.CodeUserControl, "tab %s is in %s's hands since %s: only they act in it, until they (or any operator) hand it back",
				t.id, c.Holder, c.Since.Format(time.RFC3339))
		}
		if c.Holder == "" && from.Known() {
			c.Holder, c.By = from.User, cmp.Or(c.By, req.By, from.User)
			t.refreshInfo()
		} else if c.By == "" {
			c.By = req.By
			t.refreshInfo()
		}
		cc := *c
		return protocol.ControlReply{OK: true, Tab: t.id, Sequence: t.frames.Sequence(), Control: &cc}, nil
	}
	ctl := &protocol.Control{State: protocol.ControlPerson, Kind: protocol.ControlTakeover, Message: req.Message, By: cmp.Or(req.By, from.User), Holder: from.User, Since: time.Now().UTC()}
	t.setControl(ctl)
	f := t.controlFrame(ctx, ctl, protocol.FrameTakeover, protocol.SourceUser, protocol.Plan{})
	return protocol.ControlReply{OK: true, Tab: t.id, Sequence: f.Sequence, Control: f.Control}, nil
}

// setControl gives the tab to a person (ctl) or back to the agents (nil).
func (t *Tab) setControl(ctl *protocol.Control) {
	t.person.control = ctl
	t.nav.personControl = ctl != nil
}

// controlFrame makes the frame of a change of hands, at the page as it is.
func (t *Tab) controlFrame(ctx context.Context, ctl *protocol.Control, action, source string, plan protocol.Plan) protocol.Frame {
	cc := *ctl
	change := frames.Change{Action: action, Source: source, PlanID: plan.ID, Agent: plan.Agent, Control: &cc}
	f := t.frameFor(ctx, pageChange{url: t.nav.url, status: t.nav.status}, change)
	t.flush() // observers, the viewer above all, see it at once
	return f
}

// endControl gives the tab back to the agents, with its handback frame.
func (t *Tab) endControl(ctx context.Context, ended, by, source string) {
	c := t.person.control
	end := &protocol.Control{State: protocol.ControlAgents, Kind: c.Kind, Message: c.Message, Agent: c.Agent, PlanID: c.PlanID,
		By: cmp.Or(by, c.By), Holder: c.Holder, Since: c.Since, Ended: ended}
	t.setControl(nil)
	t.person.owner = protocol.Sender{}
	t.absorb(ctx) // the person's last navigation is theirs, before the handback
	t.person.ended = end
	t.person.endedFrame = t.controlFrame(ctx, end, protocol.FrameHandback, source, protocol.Plan{ID: c.PlanID, Agent: c.Agent})
}

// personRefusal refuses an action while a person has the tab (one that
// would change it), or while a person is asked already (a handoff, an
// ask).
func (t *Tab) personRefusal(a protocol.Action) error {
	spec, _ := protocol.LookupAction(a.Type)
	asks := personActions[a.Type]
	c := t.person.control
	switch {
	case c != nil && (spec.Mutates || asks && t.person.waiting > 0):
		what := fmt.Sprintf("taken over by %s", cmp.Or(c.By, "a person"))
		if c.Kind == protocol.ControlHandoff {
			what = fmt.Sprintf("handed off by agent %s", cmp.Or(c.Agent, "(unnamed)"))
		}
		if c.Message != "" {
			what += fmt.Sprintf(": %q", c.Message)
		}
		return protocol.Errorf(protocol.CodeUserControl, "tab %s is under a person's control since %s (%s); the %s was not run. Read-only actions still run; plan again from the tab's handback frame",
			t.id, c.Since.Format(time.RFC3339), what, a.Type)
	case asks && t.person.waiting > 0:
		return protocol.Errorf(protocol.CodeUserControl, "tab %s waits for a person already (a handoff or question of another plan); the %s was not run: send it once that is answered", t.id, a.Type)
	}
	return nil
}

// handoff runs a handoff action: its frame, then the person's control
// until it ends. It returns the action's result, whose sequence is the
// handback frame, and the handoff's own frame (the plan's later actions
// are rebased from it, see runPlan).
func (t *Tab) handoff(ctx context.Context, deadline time.Time, plan protocol.Plan, i int, a protocol.Action) (protocol.ActionResult, int64) {
	r := protocol.ActionResult{Index: i, Type: a.Type}
	if sel := a.Until["selector"]; sel != "" {
		// A selector the page cannot read would never hold: refuse it
		// before the person is asked.
		cctx, cancel := context.WithTimeout(ctx, personInputTimeout)
		_, err := t.page.Holds(cctx, "", sel)
		cancel()
		var invalid *cdpdriver.InvalidSelectorError
		if errors.As(err, &invalid) {
			r.Code, r.Error = protocol.CodeBadRequest, fmt.Sprintf("until.selector: %v", err)
			return r, 0
		}
	}
	dl := deadline.UTC()
	ctl := &protocol.Control{State: protocol.ControlPerson, Kind: protocol.ControlHandoff, Message: a.Message, Agent: plan.Agent, PlanID: plan.ID,
		Since: time.Now().UTC(), Until: a.Until, Deadline: &dl}
	t.setControl(ctl)
	t.person.owner = plan.Sender
	from := t.controlFrame(ctx, ctl, protocol.FrameHandoff, protocol.SourceAgent, plan).Sequence
	var probed time.Time
	holds := func() bool {
		if url := a.Until["url"]; url != "" && !protocol.MatchURL(url, t.nav.url) {
			return false
		}
		text, sel := a.Until["text"], a.Until["selector"]
		if text == "" && sel == "" {
			return a.Until["url"] != ""
		}
		if time.Since(probed) < untilPoll || t.nav.navigating || t.nav.dialog != nil || t.nav.crashed {
			return false
		}
		probed = time.Now()
		cctx, cancel := context.WithTimeout(ctx, untilPoll*4)
		ok, _ := t.page.Holds(cctx, text, sel)
		cancel()
		return ok
	}
	poll := a.Until["text"] != "" || a.Until["selector"] != ""
	t.person.waiting++
	how := t.waitPerson(ctx, deadline, func() bool { return t.person.control != ctl || holds() }, poll)
	t.person.waiting--
	if how == "closed" {
		r.Code, r.Error = protocol.CodeTabClosed, fmt.Sprintf("tab %s closed during the handoff", t.id)
		return r, from
	}
	if t.person.control == ctl {
		// Not handed back by a person: the condition, the time or the
		// agent ended it.
		t.frameUserInput(ctx)
		t.endControl(ctx, cmp.Or(how, protocol.EndedUntil), "", protocol.SourceAgent)
	}
	end, f := t.person.ended, t.person.endedFrame
	r.Sequence, r.URL, r.Title, r.Status = f.Sequence, f.URL, f.Title, f.Status
	r.Value, _ = protocol.Marshal(map[string]any{"ended": end.Ended, "by": end.By, "from": from, "sequence": f.Sequence})
	switch end.Ended {
	case protocol.EndedTimeout:
		r.Code, r.Error = protocol.CodeTimeout, fmt.Sprintf("no one handed the tab back within %s: it is the agents' again at frame %d (%s)", a.EffectiveTimeout(), f.Sequence, f.URL)
	case protocol.EndedCancelled:
		r.Code, r.Error = protocol.CodeCancelled, fmt.Sprintf("plan %s was cancelled during its handoff: the tab is the agents' again at frame %d", plan.ID, f.Sequence)
	default:
		r.OK = true
	}
	return r, from
}

// ask runs an ask action: the question goes out as an event and waits,
// while the tab serves everything else, for a person's answer.
func (t *Tab) ask(ctx context.Context, deadline time.Time, plan protocol.Plan, i int, a protocol.Action) protocol.ActionResult {
	r := protocol.ActionResult{Index: i, Type: a.Type, Sequence: t.frames.Sequence()}
	dl := deadline.UTC()
	q := &openQuestion{asker: plan.Sender, q: protocol.Question{ID: newQuestionID(), Tab: t.id, Question: a.Question, Choices: a.Choices, Agent: plan.Agent, PlanID: plan.ID, Time: time.Now().UTC(), Deadline: &dl}}
	t.person.questions = append(t.person.questions, q)
	t.refreshInfo()
	t.publishEvent("ask", q.q)
	t.person.waiting++
	how := t.waitPerson(ctx, deadline, func() bool { return q.answer != nil }, false)
	t.person.waiting--
	t.person.questions = slices.DeleteFunc(t.person.questions, func(o *openQuestion) bool { return o == q })
	t.refreshInfo()
	if q.answer == nil {
		t.publishEvent("answer", protocol.Answer{ID: q.q.ID, Tab: t.id, Ended: cmp.Or(how, protocol.EndedTimeout), Time: time.Now().UTC()})
		switch how {
		case "closed":
			r.Code, r.Error = protocol.CodeTabClosed, fmt.Sprintf("tab %s closed before the question was answered", t.id)
		case protocol.EndedCancelled:
			r.Code, r.Error = protocol.CodeCancelled, fmt.Sprintf("plan %s was cancelled before the question was answered", plan.ID)
		default:
			r.Code, r.Error = protocol.CodeTimeout, fmt.Sprintf("no one answered within %s", a.EffectiveTimeout())
		}
		return r
	}
	r.OK = true
	r.Value, _ = protocol.Marshal(map[string]any{"id": q.q.ID, "answer": q.answer.Answer, "by": q.answer.By})
	return r
}

// answerQuestion takes a person's answer to an open question: an
// operator's to any, an agent's to its own.
func (t *Tab) answerQuestion(req protocol.AnswerRequest, from protocol.Sender) (any, error) {
	var q *openQuestion
	for _, o := range t.person.questions {
		if from.Role == protocol.RoleAgent && o.asker != from {
			if o.q.ID == req.ID {
				return nil, protocol.Errorf(protocol.CodePermissionDenied, "permission denied: question %s is another agent's to have answered; an agent answers only its own (an operator answers any)", o.q.ID)
			}
			continue
		}
		if o.q.ID == req.ID || req.ID == "" {
			if q != nil {
				return nil, protocol.Errorf(protocol.CodeBadRequest, "tab %s has %d questions open: name one by its id", t.id, len(t.person.questions))
			}
			q = o
		}
	}
	if q == nil {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "tab %s has no open question %q (answered already, or it timed out)", t.id, req.ID)
	}
	if len(q.q.Choices) > 0 && !slices.Contains(q.q.Choices, req.Answer) {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "answer: %q is not one of the choices %q", req.Answer, q.q.Choices)
	}
	q.answer = &protocol.Answer{ID: q.q.ID, Tab: t.id, Answer: req.Answer, By: cmp.Or(req.By, from.User), Time: time.Now().UTC()}
	t.publishEvent("answer", *q.answer)
	return map[string]any{"ok": true, "id": q.q.ID}, nil
}

// personInput dispatches a person's input to the tab they control.
func (t *Tab) personInput(ctx context.Context, req protocol.InputRequest, from protocol.Sender) (protocol.InputReply, error) {
	c := t.person.control
	if c == nil {
		return protocol.InputReply{}, protocol.Errorf(protocol.CodeNotInControl, "tab %s is not under a person's control: take it over first (framebus takeover %s, or the viewer's Take over)", t.id, t.id)
	}
	if from.Known() && c.Holder != from.User {
		// Only the person who has it (a known one: the node's own
		// account is trusted) acts in it; a handoff is theirs who take it.
		if c.Holder == "" {
			return protocol.InputReply{}, protocol.Errorf(protocol.CodeNotInControl, "tab %s is handed to a person but no one has taken it yet: take it first (framebus takeover %s, or the viewer's Take it)", t.id, t.id)
		}
		return protocol.InputReply{}, protocol.Errorf(protocol.CodeNotInControl, "tab %s is in %s's hands: only they act in it", t.id, c.Holder)
	}
	ictx, cancel := context.WithTimeout(ctx, personInputTimeout)
	defer cancel()
	t.nav.personInput = time.Now()
	var err error
	switch req.Type {
	case protocol.InputMouse:
		err = t.page.PersonMouse(ictx, req.Event, req.X, req.Y, req.Button, req.ClickCount, req.DeltaX, req.DeltaY, req.Modifiers)
		if req.Event != "move" {
			t.inputChanged()
		}
	case protocol.InputKey:
		err = t.page.PersonKey(ictx, req.Event, req.Key, req.Modifiers)
		t.inputChanged()
	case protocol.InputText:
		err = t.page.InsertText(ictx, req.Text)
		t.inputChanged()
	default:
		// An address bar: navigate, back, forward, reload, the person's
		// frame as an agent's action makes its own.
		t.frameUserInput(ctx)
		t.person.acting = true
		r := t.execute(ctx, time.Now().Add(protocol.DefaultActionTimeout), protocol.Plan{}, 0, protocol.Action{Type: req.Type, URL: req.URL})
		t.person.acting = false
		if !r.OK {
			return protocol.InputReply{}, &protocol.Error{Code: r.Code, Message: r.Error}
		}
	}
	if err != nil && !inputSent(err) {
		return protocol.InputReply{}, protocol.Errorf(codeOf(err), "%v", err)
	}
	return protocol.InputReply{OK: true, Sequence: t.frames.Sequence()}, nil
}

// inputChanged notes input that may have changed the page: its frame
// comes once the person pauses.
func (t *Tab) inputChanged() {
	t.person.input.changed = true
	if t.person.input.quiet == nil {
		t.person.input.quiet = time.NewTimer(inputQuiet)
	} else {
		t.person.input.quiet.Reset(inputQuiet)
	}
}

// inputQuiet fires when a person's input has paused; nil without any.
func (t *Tab) inputPaused() <-chan time.Time {
	if !t.person.input.changed || t.person.input.quiet == nil {
		return nil
	}
	return t.person.input.quiet.C
}

// frameUserInput makes the frame of a person's input that changed the
// page without navigating (a navigation it caused made its own).
func (t *Tab) frameUserInput(ctx context.Context) {
	if !t.person.input.changed {
		return
	}
	t.absorb(ctx)
	if !t.person.input.changed || t.lost() {
		return
	}
	t.person.input.changed = false
	t.frameFor(ctx, pageChange{url: t.nav.url, status: t.nav.status}, frames.Change{Action: protocol.FrameInput, Source: protocol.SourceUser})
}

// waitPerson serves the tab while a handoff or ask waits: until done
// holds (""), its deadline passes (EndedTimeout), its plan is cancelled
// (EndedCancelled) or the tab ends ("closed"). poll wakes it every
// untilPoll to look again.
func (t *Tab) waitPerson(ctx context.Context, deadline time.Time, done func() bool, poll bool) string {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var tick <-chan time.Time
	if poll {
		ticker := time.NewTicker(untilPoll)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		switch {
		case done():
			return ""
		case ctx.Err() != nil:
			return protocol.EndedCancelled
		case !time.Now().Before(deadline):
			return protocol.EndedTimeout
		}
		if !t.step(ctx.Done(), timer.C, tick) {
			return "closed"
		}
	}
}

// refreshInfo updates the tab's info with its people's state.
func (t *Tab) refreshInfo() {
	if cur := t.info.Load(); cur != nil {
		t.storeInfo(protocol.Frame{URL: cur.URL, Title: cur.Title, Sequence: cur.Sequence})
	}
}

// personInfo is what the tab's info says of its people.
func (t *Tab) personInfo(info *protocol.TabInfo) {
	if c := t.person.control; c != nil {
		cc := *c
		info.Control = &cc
	}
	for _, q := range t.person.questions {
		info.Questions = append(info.Questions, q.q)
	}
}

// publishEvent publishes one of the tab's events (ask, answer, result).
func (t *Tab) publishEvent(kind string, v any) {
	data, err := protocol.Marshal(v)
	if err != nil {
		t.log.Error().Err(err).Str("event", kind).Msg("encode event")
		return
	}
	if err := t.nc.Publish(t.subj.TabEvents(t.id, kind), data); err != nil {
		t.log.Warn().Err(err).Str("event", kind).Msg("publish event")
	}
}

// newQuestionID names a question: 12 random hex digits.
func newQuestionID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "q" + hex.EncodeToString(b)
}
