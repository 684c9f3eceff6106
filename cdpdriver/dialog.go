package cdpdriver

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/mafredri/cdp/protocol/page"
)

// JavaScript dialogs (alert, confirm, prompt, beforeunload) block the
// page's JavaScript, and with it every command that waits on the renderer,
// until they are answered. A Page handles them in one of two modes:
//
//   - auto (the default): answered at once from the reader goroutine,
//     accepted (a prompt with its default text) unless SetDialogs chose
//     dismiss; the events still reach TakeEvents for reporting;
//   - held (SetDialogs(true, ...)): left open for the caller to answer with
//     AnswerDialog. Operations running under Guard when one opens stop
//     waiting at once with ErrDialogOpened, and those started while one is
//     open fail with it straight away, so no caller hangs on a dialog.

// dialogAnswerTimeout bounds answering a dialog.
const dialogAnswerTimeout = 10 * time.Second

type dialogState struct {
	mu      sync.Mutex
	held    bool
	dismiss bool // auto mode's answer
	open    bool
	kind    string // the open dialog's type: alert, confirm, prompt, beforeunload
	// opened is cancelled while a dialog is open (held mode); a fresh one
	// replaces it when the dialog closes.
	opened context.Context
	signal context.CancelFunc
}

func (d *dialogState) init() { d.opened, d.signal = context.WithCancel(context.Background()) }

// SetDialogs chooses held mode (held) or auto mode, and auto mode's
// answer: accept, or dismiss.
func (p *Page) SetDialogs(held, accept bool) {
	p.dialogs.mu.Lock()
	p.dialogs.held, p.dialogs.dismiss = held, !accept
	p.dialogs.mu.Unlock()
}

// DialogOpen reports whether a dialog is open now.
func (p *Page) DialogOpen() bool {
	_, open := p.openDialog()
	return open
}

// openDialog is the open dialog's type, and whether one is open.
func (p *Page) openDialog() (kind string, open bool) {
	p.dialogs.mu.Lock()
	defer p.dialogs.mu.Unlock()
	return p.dialogs.kind, p.dialogs.open
}

// dialogEvent runs in the reader goroutine for every dialog event: it
// must not block.
func (p *Page) dialogEvent(ev Event) {
	d := &p.dialogs
	d.mu.Lock()
	defer d.mu.Unlock()
	switch e := ev.(type) {
	case DialogOpening:
		d.open, d.kind = true, e.Type
		if !d.held {
			go p.answer(!d.dismiss, e.DefaultPrompt, e.Type == "prompt" && !d.dismiss)
			return
		}
		d.signal()
	case DialogClosed:
		d.open = false
		if d.opened.Err() != nil {
			d.init()
		}
	}
}

func (p *Page) answer(accept bool, text string, setText bool) error {
	ctx, cancel := context.WithTimeout(p.conn.Context(), dialogAnswerTimeout)
	defer cancel()
	args := page.NewHandleJavaScriptDialogArgs(accept)
	if setText {
		args.SetPromptText(text)
	}
	err := p.client.Page.HandleJavaScriptDialog(ctx, args)
	if err != nil && !p.lost() {
		p.log.Warn().Err(err).Msg("answer dialog")
	}
	return p.wrap(ctx, "answer dialog", err)
}

// Guard returns ctx, cancelled with the cause ErrDialogOpened as soon as a
// dialog is open in held mode, and with crashes, ErrPageCrashed when the
// renderer crashes (not for what loads a new document, which works on a
// crashed page); operations under it then return an error that wraps the
// cause.
func (p *Page) Guard(ctx context.Context, crashes bool) (context.Context, context.CancelFunc) {
	p.dialogs.mu.Lock()
	opened := p.dialogs.opened
	p.dialogs.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	stopDialog := context.AfterFunc(opened, func() { cancel(ErrDialogOpened) })
	stopCrash := func() bool { return false }
	if crashes {
		stopCrash = context.AfterFunc(p.crash.current(), func() { cancel(ErrPageCrashed) })
	}
	return ctx, func() { stopDialog(); stopCrash(); cancel(nil) }
}

// AnswerDialog accepts or dismisses the open dialog; text answers a
// prompt when accepting. With no dialog open, or text the answer would
// drop (a dismiss, or a dialog that is no prompt), it is an *InputError
// and the dialog stays open.
func (p *Page) AnswerDialog(ctx context.Context, accept bool, text string) error {
	kind, open := p.openDialog()
	if !open {
		return &InputError{Msg: "no JavaScript dialog is open"}
	}
	if text != "" {
		if err := promptTextRefusal(kind, accept); err != nil {
			return err
		}
	}
	args := page.NewHandleJavaScriptDialogArgs(accept)
	if text != "" {
		args.SetPromptText(text)
	}
	return p.wrap(ctx, "answer dialog", p.client.Page.HandleJavaScriptDialog(ctx, args))
}

// promptTextRefusal: text answering a dialog of kind is refused unless it
// accepts a prompt, since Chromium would drop it unseen.
func promptTextRefusal(kind string, accept bool) error {
	switch {
	case !accept:
		return &InputError{Msg: "text is only for accepting a prompt: dismiss answers without it (the " + kind + " is still open)"}
	case kind != "prompt":
		return &InputError{Msg: "text is only for accepting a prompt, and the open dialog is " + article(kind) + " " + kind + " (still open): accept it without text"}
	}
	return nil
}

// article is "a" or "an" for word.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
