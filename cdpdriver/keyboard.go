package cdpdriver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

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
// and what editing commands key off), the text it types, if any, whether
// Shift is down for it (a capital, "!"), and its location (1 for the left
// modifier keys).
type keyDef struct {
	key, code string
	vk        int
	text      string
	shift     bool
	location  int
}

// namedKeys are the keys named by their DOM key value.
var namedKeys = func() map[string]keyDef {
	m := map[string]keyDef{
		"Enter":      {key: "Enter", code: "Enter", vk: 13, text: "\r"},
		"Tab":        {key: "Tab", code: "Tab", vk: 9},
		"Escape":     {key: "Escape", code: "Escape", vk: 27},
		"Backspace":  {key: "Backspace", code: "Backspace", vk: 8},
		"Delete":     {key: "Delete", code: "Delete", vk: 46},
		"ArrowUp":    {key: "ArrowUp", code: "ArrowUp", vk: 38},
		"ArrowDown":  {key: "ArrowDown", code: "ArrowDown", vk: 40},
		"ArrowLeft":  {key: "ArrowLeft", code: "ArrowLeft", vk: 37},
		"ArrowRight": {key: "ArrowRight", code: "ArrowRight", vk: 39},
		"Home":       {key: "Home", code: "Home", vk: 36},
		"End":        {key: "End", code: "End", vk: 35},
		"PageUp":     {key: "PageUp", code: "PageUp", vk: 33},
		"PageDown":   {key: "PageDown", code: "PageDown", vk: 34},
		"Insert":     {key: "Insert", code: "Insert", vk: 45},
		"Space":      {key: " ", code: "Space", vk: 32, text: " "},
		"Shift":      {key: "Shift", code: "ShiftLeft", vk: 16, location: 1},
		"Control":    {key: "Control", code: "ControlLeft", vk: 17, location: 1},
		"Alt":        {key: "Alt", code: "AltLeft", vk: 18, location: 1},
		"Meta":       {key: "Meta", code: "MetaLeft", vk: 91, location: 1},
	}
	for i := 1; i <= 12; i++ {
		name := fmt.Sprintf("F%d", i)
		m[name] = keyDef{key: name, code: name, vk: 111 + i}
	}
	return m
}()

// modifierBits are the modifier keys' own bits: a modifier key held
// down is among the modifiers of its own keydown, as on a keyboard.
var modifierBits = map[string]int{"Shift": ModShift, "Control": ModCtrl, "Alt": ModAlt, "Meta": ModMeta}

// usKeys are the printable keys of a US layout that are not letters or
// digits: each key's character, its character with Shift, code and
// virtual key code.
var usKeys = []struct {
	plain, shifted rune
	code           string
	vk             int
}{
	{'`', '~', "Backquote", 192}, {'-', '_', "Minus", 189}, {'=', '+', "Equal", 187},
	{'[', '{', "BracketLeft", 219}, {']', '}', "BracketRight", 221}, {'\\', '|', "Backslash", 220},
	{';', ':', "Semicolon", 186}, {'\'', '"', "Quote", 222}, {',', '<', "Comma", 188},
	{'.', '>', "Period", 190}, {'/', '?', "Slash", 191},
}

// shiftedDigits are the characters Shift gives on the digit keys 0-9.
const shiftedDigits = ")!@#$%^&*("

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
	switch {
	case strings.EqualFold(name, "Esc"):
		return namedKeys["Escape"], nil
	case strings.EqualFold(name, "Return"):
		return namedKeys["Enter"], nil
	case name == " ":
		return namedKeys["Space"], nil
	}
	if r, size := utf8.DecodeRuneInString(name); size == len(name) && r != utf8.RuneError && unicode.IsPrint(r) {
		return charKey(r), nil
	}
	return keyDef{}, &InputError{Msg: fmt.Sprintf("unknown key %q: use %s", name, KeyNames())}
}

// charKey is the key that types r on a US layout, with Shift for a
// capital or a shifted symbol. A character the layout does not have (é,
// emoji) is a key with that character and no code, as an input method
// gives.
func charKey(r rune) keyDef {
	d := keyDef{key: string(r), text: string(r)}
	switch {
	case r >= 'a' && r <= 'z':
		d.code, d.vk = "Key"+string(unicode.ToUpper(r)), int(unicode.ToUpper(r))
	case r >= 'A' && r <= 'Z':
		d.code, d.vk, d.shift = "Key"+string(r), int(r), true
	case r >= '0' && r <= '9':
		d.code, d.vk = "Digit"+string(r), int(r)
	case r == ' ':
		return namedKeys["Space"]
	default:
		if i := strings.IndexRune(shiftedDigits, r); i >= 0 {
			d.code, d.vk, d.shift = fmt.Sprintf("Digit%d", i), '0'+i, true
		}
		for _, k := range usKeys {
			if r == k.plain || r == k.shifted {
				d.code, d.vk, d.shift = k.code, k.vk, r == k.shifted
			}
		}
	}
	return d
}

// shifted is the key d types with Shift held: the capital, or the
// symbol over a digit or punctuation key.
func (d keyDef) shifted() keyDef {
	if d.text == "" || d.shift {
		return d
	}
	r, _ := utf8.DecodeRuneInString(d.text)
	switch {
	case r >= 'a' && r <= 'z':
		r = unicode.ToUpper(r)
	case r >= '0' && r <= '9':
		r = rune(shiftedDigits[r-'0'])
	default:
		for _, k := range usKeys {
			if r == k.plain {
				r = k.shifted
			}
		}
	}
	s := charKey(r)
	s.shift = true
	return s
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
	down, up := keyEvents(d, modifiers)
	p.UnpinDocument()
	if err := p.awaitInput(ctx, func(ctx context.Context) error { return p.client.Input.DispatchKeyEvent(ctx, down) }); err != nil {
		return sent(p.wrap(ctx, "key "+d.key, err))
	}
	if err := p.awaitInput(ctx, func(ctx context.Context) error { return p.client.Input.DispatchKeyEvent(ctx, up) }); err != nil {
		return &InputSentError{Err: p.wrap(ctx, "key "+d.key, err)} // the key went down
	}
	return nil
}

// keyEvents are the keydown and keyup of d with the modifier bitmap held:
// Shift with a character types its shifted one, and a character that
// needs Shift holds it. A character key types its character, unless
// Ctrl, Alt or Meta is held (then it is a shortcut, as on a keyboard).
func keyEvents(d keyDef, modifiers int) (down, up *input.DispatchKeyEventArgs) {
	if modifiers&ModShift != 0 {
		d = d.shifted()
	}
	if d.shift {
		modifiers |= ModShift
	}
	downMods := modifiers | modifierBits[d.key] // a modifier is down in its own keydown
	text := d.text
	if modifiers&(ModCtrl|ModAlt|ModMeta) != 0 {
		text = ""
	}
	down = input.NewDispatchKeyEventArgs("rawKeyDown")
	if text != "" {
		down = input.NewDispatchKeyEventArgs("keyDown").SetText(text).SetUnmodifiedText(text)
	}
	down.SetKey(d.key).SetModifiers(downMods)
	up = input.NewDispatchKeyEventArgs("keyUp").SetKey(d.key).SetModifiers(modifiers)
	for _, ev := range []*input.DispatchKeyEventArgs{down, up} {
		if d.code != "" {
			ev.SetCode(d.code)
		}
		if d.vk != 0 {
			ev.SetWindowsVirtualKeyCode(d.vk).SetNativeVirtualKeyCode(d.vk)
		}
		if d.location != 0 {
			ev.SetLocation(d.location)
		}
	}
	return down, up
}

// TypeKeys types text a key at a time, as a user does: each character
// is a keydown (with keypress and input) and keyup, on whichever element
// has focus then, so a page that filters, formats or moves focus as
// characters come (one-digit code boxes) sees them one by one. A newline
// is Enter. The keys are posted in order and only the last is awaited
// (see Click).
func (p *Page) TypeKeys(ctx context.Context, text string) error {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var posted []uint64
	p.UnpinDocument()
	n := utf8.RuneCountInString(text)
	for i, r := range []rune(text) {
		d := charKey(r)
		if r == '\n' || r == '\r' {
			d = namedKeys["Enter"]
		}
		down, up := keyEvents(d, 0)
		for j, ev := range []*input.DispatchKeyEventArgs{down, up} {
			if i == n-1 && j == 1 {
				err := p.awaitInput(ctx, func(ctx context.Context) error { return p.client.Input.DispatchKeyEvent(ctx, ev) })
				return typed(p.postedOutcome(ctx, "type keys", posted, p.wrap(ctx, "type keys", err)), len(posted) > 0)
			}
			id, err := p.codec.post("Input.dispatchKeyEvent", ev)
			if err != nil {
				return typed(p.postedOutcome(ctx, "type keys", posted, p.wrap(ctx, "type keys", err)), len(posted) > 0)
			}
			posted = append(posted, id)
		}
	}
	return nil
}

// typed marks err as an *InputSentError when some keys went.
func typed(err error, some bool) error {
	if err != nil && some && !errors.As(err, new(*InputSentError)) {
		return &InputSentError{Err: err}
	}
	return sent(err)
}

// InsertText types text into the focused element as an input method
// would: beforeinput and input events fire, no key events.
func (p *Page) InsertText(ctx context.Context, text string) error {
	p.UnpinDocument()
	return sent(p.wrap(ctx, "insert text", p.awaitInput(ctx, func(ctx context.Context) error {
		return p.client.Input.InsertText(ctx, input.NewInsertTextArgs(text))
	})))
}
