package actors

import (
	"context"
	"encoding/json"
	"time"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// JavaScript dialogs. A dialog blocks its page until answered, so a tab
// must never wait on one blindly. By default the tab holds a dialog open
// for an agent: the action that opened it returns, the dialog is reported
// on <prefix>.tab.<tab>.event.dialog, every other action fails fast with
// dialog_open, and the dialog action answers it. If no answer comes within
// the dialog timeout, the default answer is given, and reported, so an
// unattended tab never wedges.

// DefaultDialogTimeout is how long a dialog waits for an agent's answer.
const DefaultDialogTimeout = 10 * time.Second

// dialogPolicy is the tab's dialog settings and its one timer.
type dialogPolicy struct {
	timeout time.Duration // < 0: answer at once (in the driver)
	accept  bool          // the default answer
	timer   *time.Timer   // runs while a held dialog is open
	// answered: the default answer was sent to the open dialog; its close
	// is reported as automatic.
	answered bool
}

func newDialogPolicy(timeout time.Duration, answer string) dialogPolicy {
	if timeout == 0 {
		timeout = DefaultDialogTimeout
	}
	return dialogPolicy{timeout: timeout, accept: answer != "dismiss"}
}

func (d *dialogPolicy) held() bool { return d.timeout > 0 }

// expired is the timer's channel, nil (never ready) when no timer runs.
func (d *dialogPolicy) expired() <-chan time.Time {
	if d.timer == nil {
		return nil
	}
	return d.timer.C
}

func (d *dialogPolicy) stop() {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

func (d *dialogPolicy) answerName() string {
	if d.accept {
		return "accept"
	}
	return "dismiss"
}

// dialogEvent is the message on <prefix>.tab.<tab>.event.dialog: one when
// a dialog opens ("open": true) and, for held dialogs, one when it closes
// with its answer ("auto": true when the default gave it).
type dialogEvent struct {
	Tab     string `json:"tab"`
	Type    string `json:"type"`
	Message string `json:"message"`
	URL     string `json:"url"`
	Open    bool   `json:"open"`
	Answer  string `json:"answer,omitempty"`
	Text    string `json:"text,omitempty"` // a prompt's answer
	Auto    bool   `json:"auto,omitempty"`
}

// reportDialogs publishes the dialogs that opened or closed since the
// last call, and runs the default-answer timer while one is open.
func (t *Tab) reportDialogs() {
	for _, n := range t.nav.dialogNotes {
		ev := dialogEvent{Tab: t.id, Type: n.dialog.Type, Message: n.dialog.Message, URL: n.dialog.URL, Open: n.open}
		switch {
		case n.open && !t.dialogs.held():
			ev.Answer, ev.Auto = t.dialogs.answerName(), true // answered by the driver already
		case !n.open && !t.dialogs.held():
			continue // reported when it opened
		case !n.open:
			ev.Answer, ev.Text = "dismiss", n.closed.UserInput
			if n.closed.Accepted {
				ev.Answer = "accept"
			}
			ev.Auto, t.dialogs.answered = t.dialogs.answered, false
		}
		data, _ := json.Marshal(ev)
		_ = t.nc.Publish(t.subj.TabEvents(t.id, "dialog"), data)
	}
	t.nav.dialogNotes = t.nav.dialogNotes[:0]
	switch {
	case t.nav.dialog == nil:
		t.dialogs.stop()
	case t.dialogs.held() && t.dialogs.timer == nil && !t.dialogs.answered:
		t.dialogs.timer = time.NewTimer(t.dialogs.timeout)
	}
}

// answerExpiredDialog gives the default answer to a dialog nobody
// answered in time.
func (t *Tab) answerExpiredDialog() {
	t.dialogs.timer, t.dialogs.answered = nil, true
	ctx, cancel := context.WithTimeout(context.Background(), stopLoadingTimeout)
	defer cancel()
	if err := t.page.AnswerDialog(ctx, t.dialogs.accept, ""); err != nil {
		t.log.Warn().Err(err).Msg("default answer to dialog")
	}
	t.absorb(ctx)
	t.flush()
}

// dialogOpenError is the dialog_open error of an action tried while a
// dialog blocks the page.
func dialogOpenError(d *cdpdriver.DialogOpening) error {
	return protocol.Errorf(protocol.CodeDialogOpen,
		"a JavaScript %s is open (%q) and blocks the page; answer it first: dialog accept [text] or dialog dismiss", d.Type, d.Message)
}
