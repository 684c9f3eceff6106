package cdpdriver

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mafredri/cdp/protocol/dom"
	"github.com/mafredri/cdp/protocol/input"
)

// Modifier bits of Input.dispatchKeyEvent (DR-013): Alt=1, Ctrl=2, Meta=4,
// Shift=8.
const (
	ModAlt   = 1
	ModCtrl  = 2
	ModMeta  = 4
	ModShift = 8
)

// keyDef is what Chromium needs to synthesise a key as a keyboard would:
// the DOM key and code, the Windows virtual key code (what keyCode reports
// and what editing commands key off), and the text it types, if any.
type keyDef struct {
	key, code string
	vk        int
	text      string
}

// namedKeys are the keys named by their DOM key value.
var namedKeys = func() map[string]keyDef {
	m := map[string]keyDef{
		"Enter":      {"Enter", "Enter", 13, "\r"},
		"Tab":        {"Tab", "Tab", 9, ""},
		"Escape":     {"Escape", "Escape", 27, ""},
		"Backspace":  {"Backspace", "Backspace", 8, ""},
		"Delete":     {"Delete", "Delete", 46, ""},
		"ArrowUp":    {"ArrowUp", "ArrowUp", 38, ""},
		"ArrowDown":  {"ArrowDown", "ArrowDown", 40, ""},
		"ArrowLeft":  {"ArrowLeft", "ArrowLeft", 37, ""},
		"ArrowRight": {"ArrowRight", "ArrowRight", 39, ""},
		"Home":       {"Home", "Home", 36, ""},
		"End":        {"End", "End", 35, ""},
		"PageUp":     {"PageUp", "PageUp", 33, ""},
		"PageDown":   {"PageDown", "PageDown", 34, ""},
		"Insert":     {"Insert", "Insert", 45, ""},
		"Space":      {" ", "Space", 32, " "},
		"Shift":      {"Shift", "ShiftLeft", 16, ""},
		"Control":    {"Control", "ControlLeft", 17, ""},
		"Alt":        {"Alt", "AltLeft", 18, ""},
		"Meta":       {"Meta", "MetaLeft", 91, ""},
	}
	for i := 1; i <= 12; i++ {
		name := fmt.Sprintf("F%d", i)
		m[name] = keyDef{name, name, 111 + i, ""}
	}
	return m
}()

// KeyNames lists the named keys, for help and errors.
func KeyNames() string {
	return "Enter, Tab, Escape, Backspace, Delete, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown, Insert, Space, Shift, Control, Alt, Meta, F1-F12, or one character"
}

// lookupKey resolves a key name (case-insensitive for named keys) or a
// single printable character.
func lookupKey(name string) (keyDef, error) {
	if d, ok := namedKeys[name]; ok {
		return d, nil
	}
	for n, d := range namedKeys {
		if strings.EqualFold(n, name) {
			return d, nil
		}
	}
	switch name {
	case "Esc":
		return namedKeys["Escape"], nil
	case "Return":
		return namedKeys["Enter"], nil
	case " ":
		return namedKeys["Space"], nil
	}
	if r, size := utf8.DecodeRuneInString(name); size == len(name) && r != utf8.RuneError && unicode.IsPrint(r) {
		return charKey(r), nil
	}
	return keyDef{}, &InputError{Msg: fmt.Sprintf("unknown key %q: use %s", name, KeyNames())}
}

// charKey is the key that types r on a US layout.
func charKey(r rune) keyDef {
	d := keyDef{key: string(r), text: string(r)}
	switch {
	case r >= 'a' && r <= 'z':
		d.code, d.vk = "Key"+string(unicode.ToUpper(r)), int(unicode.ToUpper(r))
	case r >= 'A' && r <= 'Z':
		d.code, d.vk = "Key"+string(r), int(r)
	case r >= '0' && r <= '9':
		d.code, d.vk = "Digit"+string(r), int(r)
	}
	return d
}

// Key presses and releases one key on the focused element with the
// modifier bitmap held. A character key types its character, unless Ctrl,
// Alt or Meta is held (then it is a shortcut, as on a keyboard).
// CheckKey says whether Key knows the key name: an *InputError naming the
// known keys if not. An action that types and then presses a key checks
// the key first, so a bad name fails before the text changes the page.
func CheckKey(name string) error {
	_, err := lookupKey(name)
	return err
}

func (p *Page) Key(ctx context.Context, name string, modifiers int) error {
	d, err := lookupKey(name)
	if err != nil {
		return err
	}
	return p.press(ctx, d, modifiers)
}

func (p *Page) press(ctx context.Context, d keyDef, modifiers int) error {
	down := input.NewDispatchKeyEventArgs("rawKeyDown")
	text := d.text
	if modifiers&(ModCtrl|ModAlt|ModMeta) != 0 {
		text = ""
	}
	if text != "" {
		down = input.NewDispatchKeyEventArgs("keyDown").SetText(text).SetUnmodifiedText(text)
	}
	down.SetKey(d.key).SetModifiers(modifiers)
	if d.code != "" {
		down.SetCode(d.code)
	}
	if d.vk != 0 {
		down.SetWindowsVirtualKeyCode(d.vk).SetNativeVirtualKeyCode(d.vk)
	}
	if err := p.client.Input.DispatchKeyEvent(ctx, down); err != nil {
		return sent(p.wrap(ctx, "key "+d.key, err))
	}
	up := input.NewDispatchKeyEventArgs("keyUp").SetKey(d.key).SetModifiers(modifiers)
	if d.code != "" {
		up.SetCode(d.code)
	}
	if d.vk != 0 {
		up.SetWindowsVirtualKeyCode(d.vk).SetNativeVirtualKeyCode(d.vk)
	}
	if err := p.client.Input.DispatchKeyEvent(ctx, up); err != nil {
		return &InputSentError{Err: p.wrap(ctx, "key "+d.key, err)} // the key went down
	}
	return nil
}

// InsertText types text into the focused element as an input method
// would: beforeinput and input events fire, no key events.
func (p *Page) InsertText(ctx context.Context, text string) error {
	return sent(p.wrap(ctx, "insert text", p.client.Input.InsertText(ctx, input.NewInsertTextArgs(text))))
}

// Focus focuses the element matching selector (DOM.focus), after
// scrolling it into view.
func (p *Page) Focus(ctx context.Context, selector string) error {
	el, err := p.element(ctx, selector)
	if err != nil {
		return err
	}
	defer p.release(el)
	if err := p.client.DOM.Focus(ctx, &dom.FocusArgs{ObjectID: &el}); err != nil {
		if p.lost() || ctx.Err() != nil {
			return p.wrap(ctx, "focus", err)
		}
		return &InputError{Msg: fmt.Sprintf("element %s cannot be focused", selector)}
	}
	return nil
}
