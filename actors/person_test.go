package actors

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// personRequest sends a person's request (control, input, answer) to a
// tab and returns the reply's JSON and its code ("" when ok).
func personAsk(t *testing.T, subject string, req any) (json.RawMessage, protocol.Code) {
	t.Helper()
	data, _ := json.Marshal(req)
	msg, err := testConn.Request(subject, data, testscale.D(30*time.Second))
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	var head protocol.ErrorReply
	if err := json.Unmarshal(msg.Data, &head); err != nil {
		t.Fatalf("%s: %s: %v", subject, msg.Data, err)
	}
	if head.OK {
		return msg.Data, ""
	}
	return msg.Data, head.Code
}

// personDo is personAsk that must succeed.
func personDo(t *testing.T, subject string, req any) json.RawMessage {
	t.Helper()
	data, code := personAsk(t, subject, req)
	if code != "" {
		t.Fatalf("%s %+v: %s", subject, req, data)
	}
	return data
}

// centre is where an element's centre is in the viewport.
func centre(t *testing.T, tab *Tab, selector string) (x, y float64) {
	t.Helper()
	var at struct{ X, Y float64 }
	cmdEvalInto(t, tab, `(() => { const r = document.querySelector(`+jsString(selector)+`).getBoundingClientRect(); return {X: r.x + r.width / 2, Y: r.y + r.height / 2}; })()`, &at)
	return at.X, at.Y
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

// planAsync sends a plan and delivers its result on the channel.
func planAsync(t *testing.T, tab string, plan protocol.Plan) <-chan protocol.PlanResult {
	ch := make(chan protocol.PlanResult, 1)
	go func() {
		res, err := request(testConn, tab, plan)
		if err != nil {
			t.Errorf("plan %s: %v", plan.ID, err)
		}
		ch <- res
	}()
	return ch
}

// An agent hands a login to a person: its handoff frame puts the tab under
// the person's control, where other agents' changes get user_control and
// reads still run; the person signs in with real mouse and key input (their
// frames are the user's), hands back, and the agent's plan goes on from
// the handback frame, its next action rebased onto it.
func TestHandoffToAPersonAndBack(t *testing.T) {
	tab, frames, _ := tabAt(t, "/login.html")
	subj := protocol.DefaultSubjects
	userX, userY := centre(t, tab, "#user")
	seq := tab.Info().Sequence
	frames.until(seq)
	results := watchEvents(t, subj.TabEvents(tab.ID(), "result"))

	done := planAsync(t, tab.ID(), protocol.Plan{ID: "login", Agent: "bot", Actions: []protocol.Action{
		{Type: "handoff", Message: "Please sign in, then press Done", BasedOnSequence: protocol.Based(seq)},
		{Type: "click", Selector: "#continue", BasedOnSequence: protocol.Based(seq + 1)},
		{Type: "text", Selector: "#done"},
	}})
	f := frames.until(seq + 1)
	if f.Action != protocol.FrameHandoff || f.Source != protocol.SourceAgent || f.Control == nil ||
		f.Control.State != protocol.ControlPerson || f.Control.Message != "Please sign in, then press Done" || f.PlanID != "login" {
		t.Fatalf("handoff frame: %+v control %+v", f, f.Control)
	}
	if c := tab.Info().Control; c == nil || c.Kind != protocol.ControlHandoff || c.Agent != "bot" {
		t.Fatalf("tab info during the handoff: %+v", c)
	}

	// Another agent: a change is refused at once, a read runs.
	other := send(t, tab.ID(), protocol.Plan{Agent: "rival", Actions: []protocol.Action{{Type: "click", Selector: "#signin", BasedOnSequence: protocol.Based(seq + 1)}}})
	if other.OK || other.Code != protocol.CodeUserControl || !strings.Contains(other.Error, "Please sign in") || other.Executed != 0 {
		t.Fatalf("a change during the handoff: %+v", other)
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "title"})); !r.OK || !strings.Contains(string(r.Results[0].Value), "Sign in") {
		t.Fatalf("a read during the handoff: %+v", r)
	}

	// The person claims it and signs in.
	var claim protocol.ControlReply
	_ = json.Unmarshal(personDo(t, subj.TabControl(tab.ID()), protocol.ControlRequest{Op: protocol.ControlTakeover, By: "alice"}), &claim)
	if claim.Control == nil || claim.Control.By != "alice" || claim.Sequence != seq+1 {
		t.Fatalf("claim: %+v", claim)
	}
	input := subj.TabInput(tab.ID())
	personDo(t, input, protocol.InputRequest{Type: protocol.InputMouse, Event: "move", X: userX, Y: userY})
	personDo(t, input, protocol.InputRequest{Type: protocol.InputMouse, Event: "down", X: userX, Y: userY, ClickCount: 1})
	personDo(t, input, protocol.InputRequest{Type: protocol.InputMouse, Event: "up", X: userX, Y: userY, ClickCount: 1})
	for _, k := range []string{"a", "l", "i", "c", "e", "Tab"} {
		personDo(t, input, protocol.InputRequest{Type: protocol.InputKey, Event: "down", Key: k})
		personDo(t, input, protocol.InputRequest{Type: protocol.InputKey, Event: "up", Key: k})
	}
	personDo(t, input, protocol.InputRequest{Type: protocol.InputText, Text: "secret"})
	personDo(t, input, protocol.InputRequest{Type: protocol.InputKey, Event: "down", Key: "Enter"})
	personDo(t, input, protocol.InputRequest{Type: protocol.InputKey, Event: "up", Key: "Enter"})
	var nav protocol.Frame
	for nav.URL == "" || !strings.Contains(nav.URL, "/account.html") {
		nav = frames.next()
		if nav.Source != protocol.SourceUser {
			t.Fatalf("a frame of the person's that is not the user's: %+v", nav)
		}
	}
	if !strings.Contains(nav.URL, "user=alice") || !strings.Contains(nav.URL, "password=secret") {
		t.Fatalf("the person's form went to %s", nav.URL)
	}

	var back protocol.ControlReply
	_ = json.Unmarshal(personDo(t, subj.TabControl(tab.ID()), protocol.ControlRequest{Op: protocol.ControlHandback, By: "alice"}), &back)
	var hb protocol.Frame
	for hb.Action != protocol.FrameHandback {
		hb = frames.next()
	}
	if hb.Source != protocol.SourceUser || hb.Control == nil || hb.Control.Ended != protocol.EndedHandback || hb.Control.By != "alice" || hb.Sequence != back.Sequence {
		t.Fatalf("handback frame %+v control %+v, reply %+v", hb, hb.Control, back)
	}
	res := <-done
	if !res.OK || res.Executed != 3 {
		t.Fatalf("the agent's plan after the handback: %+v", res)
	}
	var handed struct {
		Ended, By      string
		From, Sequence int64
	}
	_ = json.Unmarshal(res.Results[0].Value, &handed)
	if handed.Ended != "handback" || handed.By != "alice" || handed.From != seq+1 || handed.Sequence != hb.Sequence || res.Results[0].Sequence != hb.Sequence {
		t.Fatalf("handoff result %s (%+v)", res.Results[0].Value, res.Results[0])
	}
	if res.Results[1].Sequence != hb.Sequence+1 || string(res.Results[2].Value) != `"continued"` {
		t.Fatalf("the plan did not go on from the handback frame: %+v", res.Results)
	}
	if tab.Info().Control != nil {
		t.Fatalf("control after the handback: %+v", tab.Info().Control)
	}
	// Observers saw the refusal and the plan.
	var refused, login bool
	for !refused || !login {
		var ev protocol.PlanEvent
		_ = json.Unmarshal(nextEvent(t, results), &ev)
		refused = refused || ev.Code == protocol.CodeUserControl && ev.Agent == "rival"
		login = login || ev.PlanID == "login" && ev.OK
	}
}

// watchEvents subscribes to a tab's events of one kind.
func watchEvents(t *testing.T, subject string) chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 1024)
	sub, err := testConn.ChanSubscribe(subject, ch)
	if err != nil {
		t.Fatal(err)
	}
	if err := testConn.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return ch
}

// nextEvent waits for the next event on ch.
func nextEvent(t *testing.T, ch chan *nats.Msg) json.RawMessage {
	t.Helper()
	select {
	case m := <-ch:
		return m.Data
	case <-time.After(testscale.D(30 * time.Second)):
		t.Fatal("no event within", testscale.D(30*time.Second))
	}
	return nil
}

// A handoff's until ends it by itself: here the URL the person reaches
// (they navigate as from an address bar). Its handback frame is the
// agent's, ended "until"; the person's navigation is the user's frame.
func TestHandoffEndsWhenUntilHolds(t *testing.T) {
	tab, frames, seq := tabAt(t, "/login.html")
	done := planAsync(t, tab.ID(), protocol.Plan{ID: "until", Actions: []protocol.Action{
		{Type: "handoff", Message: "sign in", Until: map[string]string{"url": site("/account.html") + "*", "text": "Welcome, bob"}, BasedOnSequence: protocol.Based(seq)},
	}})
	frames.until(seq + 1)
	personDo(t, protocol.DefaultSubjects.TabInput(tab.ID()), protocol.InputRequest{Type: protocol.InputNavigate, URL: site("/account.html?user=bob")})
	nav := frames.next()
	if nav.Source != protocol.SourceUser || nav.Action != "navigate" || !strings.HasSuffix(nav.URL, "user=bob") {
		t.Fatalf("the person's navigation: %+v", nav)
	}
	hb := frames.next()
	if hb.Action != protocol.FrameHandback || hb.Source != protocol.SourceAgent || hb.Control.Ended != protocol.EndedUntil {
		t.Fatalf("handback: %+v %+v", hb, hb.Control)
	}
	res := <-done
	if !res.OK || res.Sequence != hb.Sequence || !strings.Contains(string(res.Results[0].Value), `"ended":"until"`) {
		t.Fatalf("until: %+v", res)
	}
}

// A handoff that no one hands back ends at its timeout (the action fails
// with timeout, the tab is the agents' again); one whose plan is
// cancelled ends at once; both with a handback frame saying so.
func TestHandoffTimesOutOrIsCancelled(t *testing.T) {
	tab, frames, seq := tabAt(t, "/login.html")
	res := send(t, tab.ID(), protocol.Plan{Actions: []protocol.Action{
		{Type: "handoff", Message: "quick", Until: map[string]string{"timeout": "300ms"}, BasedOnSequence: protocol.Based(seq)},
		{Type: "click", Selector: "#signin"},
	}})
	if res.OK || res.Code != protocol.CodeTimeout || res.Executed != 0 || res.Sequence != seq+2 || !strings.Contains(res.Error, "no one handed the tab back") {
		t.Fatalf("timed out handoff: %+v", res)
	}
	frames.until(seq + 1)
	if hb := frames.next(); hb.Control == nil || hb.Control.Ended != protocol.EndedTimeout {
		t.Fatalf("handback after the timeout: %+v", hb)
	}

	done := planAsync(t, tab.ID(), protocol.Plan{ID: "to-cancel", Actions: []protocol.Action{{Type: "handoff", Message: "wait"}}})
	frames.until(seq + 3)
	personDo(t, protocol.DefaultSubjects.TabCancel(tab.ID()), protocol.CancelRequest{PlanID: "to-cancel"})
	if hb := frames.next(); hb.Control == nil || hb.Control.Ended != protocol.EndedCancelled {
		t.Fatalf("handback after the cancel: %+v", hb)
	}
	if res := <-done; res.Code != protocol.CodeCancelled {
		t.Fatalf("cancelled handoff: %+v", res)
	}
	if tab.Info().Control != nil {
		t.Fatal("the tab is still a person's")
	}
}

// A person takes a tab over on their own: agents' changes get user_control
// until the handback; input without control is not_in_control; a second
// handoff or a handback of a tab no one has is refused.
func TestTakeoverOnAPersonsInitiative(t *testing.T) {
	tab, frames, seq := tabAt(t, "/login.html")
	subj := protocol.DefaultSubjects
	if _, code := personAsk(t, subj.TabInput(tab.ID()), protocol.InputRequest{Type: protocol.InputText, Text: "x"}); code != protocol.CodeNotInControl {
		t.Fatalf("input without control: %s", code)
	}
	if _, code := personAsk(t, subj.TabControl(tab.ID()), protocol.ControlRequest{Op: "handback"}); code != protocol.CodeNotInControl {
		t.Fatalf("handback without control: %s", code)
	}
	if _, code := personAsk(t, subj.TabControl(tab.ID()), protocol.ControlRequest{Op: "steal"}); code != protocol.CodeBadRequest {
		t.Fatalf("unknown op: %s", code)
	}
	personDo(t, subj.TabControl(tab.ID()), protocol.ControlRequest{Op: "takeover", By: "carol", Message: "looking"})
	f := frames.until(seq + 1)
	if f.Action != protocol.FrameTakeover || f.Source != protocol.SourceUser || f.Control.By != "carol" || f.Control.Kind != protocol.ControlTakeover {
		t.Fatalf("takeover frame: %+v %+v", f, f.Control)
	}
	for _, a := range []protocol.Action{
		{Type: "navigate", URL: site("/read.html")},
		{Type: "handoff", Message: "again"},
		{Type: "eval", Expression: "1"},
	} {
		if r := send(t, tab.ID(), one(a)); r.Code != protocol.CodeUserControl || !strings.Contains(r.Error, "carol") {
			t.Fatalf("%s during a takeover: %+v", a.Type, r)
		}
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "snapshot"})); !r.OK {
		t.Fatalf("snapshot during a takeover: %+v", r)
	}
	personDo(t, subj.TabInput(tab.ID()), protocol.InputRequest{Type: protocol.InputReload})
	if f := frames.next(); f.Source != protocol.SourceUser || f.Action != "reload" {
		t.Fatalf("the person's reload: %+v", f)
	}
	personDo(t, subj.TabControl(tab.ID()), protocol.ControlRequest{Op: "handback", By: "carol"})
	hb := frames.next()
	if hb.Action != protocol.FrameHandback || hb.Control.Ended != protocol.EndedHandback {
		t.Fatalf("handback: %+v", hb)
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "1", BasedOnSequence: protocol.Based(hb.Sequence)})); !r.OK {
		t.Fatalf("an agent after the handback: %+v", r)
	}
}

// An agent asks; the question is an event and in the tab's info while it
// waits; other plans, changes too, run meanwhile; a person's answer
// outside the choices is refused, one inside ends the ask with it.
func TestAskAPerson(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	subj := protocol.DefaultSubjects
	asks := watchEvents(t, subj.TabEvents(tab.ID(), "ask"))
	answers := watchEvents(t, subj.TabEvents(tab.ID(), "answer"))
	done := planAsync(t, tab.ID(), protocol.Plan{ID: "ask", Agent: "bot", Actions: []protocol.Action{{Type: "ask", Question: "Which size?", Choices: []string{"S", "M", "L"}}}})
	var q protocol.Question
	_ = json.Unmarshal(nextEvent(t, asks), &q)
	if q.Question != "Which size?" || q.ID == "" || q.Agent != "bot" || len(tab.Info().Questions) != 1 {
		t.Fatalf("question %+v, info %+v", q, tab.Info())
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "document.title = 'changed'"})); !r.OK {
		t.Fatalf("a change while a question waits: %+v", r)
	}
	if r := send(t, tab.ID(), one(protocol.Action{Type: "ask", Question: "another?"})); r.Code != protocol.CodeUserControl {
		t.Fatalf("a second question: %+v", r)
	}
	if _, code := personAsk(t, subj.TabAnswer(tab.ID()), protocol.AnswerRequest{Answer: "XL"}); code != protocol.CodeBadRequest {
		t.Fatalf("an answer outside the choices: %s", code)
	}
	personDo(t, subj.TabAnswer(tab.ID()), protocol.AnswerRequest{ID: q.ID, Answer: "M", By: "dave"})
	var a protocol.Answer
	_ = json.Unmarshal(nextEvent(t, answers), &a)
	if a.ID != q.ID || a.Answer != "M" || a.By != "dave" {
		t.Fatalf("answer event %+v", a)
	}
	res := <-done
	if !res.OK || !strings.Contains(string(res.Results[0].Value), `"answer":"M"`) {
		t.Fatalf("ask: %+v", res)
	}
	if len(tab.Info().Questions) != 0 {
		t.Fatalf("questions after the answer: %+v", tab.Info().Questions)
	}
}

// The frame history keeps a tab's questions and answers beside its
// frames, under their event subjects.
func TestQuestionsAndAnswersAreKept(t *testing.T) {
	nc, h := historyBus(t, HistoryOptions{})
	tab := openTab(t, func(o *TabOptions) { o.Conn, o.History = nc, h })
	subj := protocol.DefaultSubjects
	asks := make(chan *nats.Msg, 4)
	sub, err := nc.ChanSubscribe(subj.TabEvents(tab.ID(), "ask"), asks)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	done := make(chan protocol.PlanResult, 1)
	go func() {
		res, _ := request(nc, tab.ID(), protocol.Plan{Action: &protocol.Action{Type: "ask", Question: "Proceed?"}})
		done <- res
	}()
	var q protocol.Question
	select {
	case m := <-asks:
		_ = json.Unmarshal(m.Data, &q)
	case <-time.After(testscale.D(30 * time.Second)):
		t.Fatal("no question")
	}
	data, _ := json.Marshal(protocol.AnswerRequest{ID: q.ID, Answer: "yes", By: "fay"})
	if m, err := nc.Request(subj.TabAnswer(tab.ID()), data, testscale.D(30*time.Second)); err != nil || !strings.Contains(string(m.Data), `"ok":true`) {
		t.Fatalf("answer: %v", err)
	}
	if res := <-done; !res.OK {
		t.Fatalf("ask: %+v", res)
	}
	for _, kind := range []string{"ask", "answer"} {
		cons := follow(t, nc, subj, subj.TabEvents(tab.ID(), kind))
		m, err := cons.Next(jetstream.FetchMaxWait(testscale.D(30 * time.Second)))
		if err != nil || !strings.Contains(string(m.Data()), q.ID) {
			t.Fatalf("the history's %s: %v", kind, err)
		}
	}
}
