package cdpdriver

import "context"

// deepFocusJS defines deepFocus(): the element that has focus, through
// open shadow roots and same-origin frames; null when nothing has, or
// when another origin's frame has it.
const deepFocusJS = `
	const deepFocus = () => {
		let el = document.activeElement;
		for (;;) {
			if (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
			else if (el && (el.localName === "iframe" || el.localName === "frame")) {
				const doc = el.contentDocument;
				if (!doc) return null; // another origin's frame: its own page decides
				el = doc.activeElement;
			} else return el;
		}
	};
`

// focusOnJS defines focusOn(el, where): scrolls el into view and focuses
// it as a user would reach it, answering {el: the element that then has
// focus, part, focused: whether it had focus before}, or a refusal that
// says why el cannot be focused (disabled, inert, not shown, hidden, the
// page moved focus away, or not focusable at all). A host that delegates
// focus gives it to the element inside it; a part of editable content
// that cannot take focus itself (a paragraph of an editor) focuses its
// editor, and is the part.
const focusOnJS = deepFocusJS + `
	const focusOn = (el, where) => {
		const refuse = (reason) => ({error: "input", reason});
		if (el.scrollIntoViewIfNeeded) el.scrollIntoViewIfNeeded(true);
		else el.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
		if (el.matches(":disabled")) return refuse(where + " is disabled");
		const before = deepFocus();
		if (typeof el.focus === "function") el.focus();
		let now = deepFocus();
		if (now !== el && el.isContentEditable && !(now && now.isContentEditable && now.contains(el))) {
			let host = el;
			while (host.parentElement && host.parentElement.isContentEditable) host = host.parentElement;
			host.focus();
			now = deepFocus();
		}
		const inside = now && (now === el || (el.shadowRoot && el.shadowRoot.contains(now)) || (el.isContentEditable && now.contains(el)));
		if (!inside) {
			if (el.closest("[inert]")) return refuse(where + " is inert (inside an element with the inert attribute): a user cannot reach it");
			if (!el.getClientRects().length) return refuse(where + " is not shown (display:none, or not rendered)");
			if (getComputedStyle(el).visibility !== "visible") return refuse(where + " is hidden (visibility:hidden)");
			if (now !== before && now && now !== el.ownerDocument.body) return refuse(where + " did not keep focus: the page moved it to " + describe(now));
			return refuse(where + " cannot be focused: it is not a field, a link, editable content or an element with a tabindex");
		}
		return {el: now, part: now !== el && now.contains(el) ? el : null, focused: before === now};
	};
`

// fieldJS makes ready the field that type and fill put text into: the
// selector's element, focused after it is scrolled into view, or with no
// selector the element that has focus (see focusOnJS); for a part of
// editable content, the editor, with the caret in that part. A field
// focused here, and not before, gets the caret at its end,
// where a user appending to it puts it.
//
// It refuses what would drop the text unseen: an element that cannot
// be focused, is read-only or takes no text (a button, a
// checkbox, the page's body), a number input given letters, and text
// longer than the field's maxlength allows (unless typed key by key).
//
// Inputs whose value is not typed character by character (date, time,
// color, range, ...) take the whole value, set as a user's picker would,
// with input and change events; only when replacing (fill, type --clear),
// and only a value the input keeps: one it would not is refused before
// the field is touched. With replace, a text field's content
// is selected, for the text to replace it, as a user's typing over a
// selection does (or for the Backspace that clears it, given no text).
//
// The field and its content are kept for fieldCheckJS, which checks
// that the clearing and the typing took.
//
// Elements are told apart by localName, not instanceof: a ref may name an
// element of a frame's document, whose classes are another realm's.
const fieldJS = `function (selector, text, replace, keys) {` + lookupJS + describeJS + focusOnJS + pickedJS + `
	const refuse = (reason) => ({error: "input", reason});
	window.__framebusField = null;
	let el, where, part = null, focused = true;
	if (selector) {
		const found = lookup(this, selector);
		if (found.error) return found;
		where = "element " + selector;
		const f = focusOn(found.el, where);
		if (f.error) return f;
		el = f.el, part = f.part, focused = f.focused;
	} else {
		el = deepFocus();
		if (el === null) return {}; // another origin's frame
		if (!el) return refuse("nothing has focus: give a selector");
		where = "the focused element (" + describe(el) + ")";
	}
	const kind = el.localName === "input" ? (el.type || "text") : el.localName;
	const keep = (editable) => { window.__framebusField = {el, where, editable, replace, text, before: editable ? el.textContent : el.value}; };
	if (el.isContentEditable) {
		if (replace || !focused) {
			const doc = el.ownerDocument, r = doc.createRange();
			r.selectNodeContents(part || el);
			if (!replace) r.collapse(false);
			const s = doc.getSelection();
			s.removeAllRanges();
			s.addRange(r);
		}
		keep(true);
		return {selected: replace};
	}
	if (el.localName === "select") {
		return refuse(where + " is a <select>, which takes no text: choose an option with select");
	}
	const typed = ["text", "search", "url", "tel", "email", "password", "number"];
	const isInput = el.localName === "input";
	if (isInput && kind in picked) {
		if (!replace) return refuse(where + " is an <input type=" + kind + ">, which takes a whole value: set it with fill (or type --clear)");
		if (el.readOnly) return refuse(where + " is read-only");
		// A refused value leaves the field untouched.
		const refused = pickedRefusal(el, kind, text, where);
		if (refused) return refuse(refused);
		el.value = text;
		el.dispatchEvent(new Event("input", {bubbles: true, composed: true}));
		el.dispatchEvent(new Event("change", {bubbles: true}));
		return {set: true};
	}
	if (!(isInput && typed.includes(kind)) && el.localName !== "textarea") {
		const what = isInput ? "an <input type=" + kind + ">" : "a <" + el.localName + ">";
		return refuse(where + " is " + what + ", which takes no text: type and fill write into inputs, textareas and editable content; press keys with key");
	}
	if (el.readOnly) return refuse(where + " is read-only");
	if (kind === "number") {
		const t = text.trim();
		if (replace ? t !== "" && isNaN(Number(t)) : /[^0-9eE+\-.]/.test(t)) {
			return refuse(JSON.stringify(text) + " is not a number, and " + where + " (an <input type=number>) takes only numbers");
		}
	}
	// Only text-like inputs have a caret to move (email and number throw).
	const caret = kind !== "email" && kind !== "number";
	if (!replace && !focused && caret) el.setSelectionRange(el.value.length, el.value.length);
	if (!keys && kind !== "number" && el.maxLength >= 0) {
		const selected = caret ? el.selectionEnd - el.selectionStart : 0;
		const held = replace ? 0 : el.value.length - selected;
		if (held + text.length > el.maxLength) {
			return refuse(JSON.stringify(text) + " is " + text.length + " characters, but " + where + " takes at most " + el.maxLength +
				(held ? ", and holds " + held + " already" : "") + " (maxlength): shorten it, or type it with --keys, a key per character (pages that split a code over several boxes move focus on as each is typed)");
		}
	}
	if (replace) el.select();
	keep(false);
	return {selected: replace};
}`

// pickedJS defines picked, the kinds of input that take a whole value
// (as a picker sets it) with an example value of each, and
// pickedRefusal(el, kind, text, where): why the input would not keep
// text as its value, or "" when it would. It tries a detached copy (same
// type and attributes, so the same sanitizing), leaving the field as it
// is.
const pickedJS = `
	const picked = {date: "2024-01-31", time: "13:45", "datetime-local": "2024-01-31T13:45", month: "2024-01", week: "2024-W05", color: "#ff0000", range: ""};
	const pickedRefusal = (el, kind, text, where) => {
		const probe = el.cloneNode(false);
		probe.value = text;
		const kept = kind === "color" ? probe.value === text.toLowerCase() : probe.value === text;
		if (kept) return "";
		const like = kind === "range"
			? "a number from " + (el.min || 0) + " to " + (el.max || 100) + (el.step && el.step !== "any" ? " in steps of " + el.step : "")
			: "e.g. " + picked[kind];
		return JSON.stringify(text) + " is not a value for " + where + " (an <input type=" + kind + ">): " + like;
	};
`

// fieldCheckJS checks the field fieldJS readied: after the Backspace that
// clears it ("cleared"), that it is empty; after the typing ("took"),
// that it changed, or, replacing its content, holds the text. A page that handles Backspace itself, or refuses
// typed text (a field that filters characters drops a whole insert), is
// found out here instead of answering ok. Being a renderer round trip
// after the typing, "took" also answers the page's URL and title, as
// Location does, so the typing needs no other barrier.
const fieldCheckJS = `function (_, step) {
	const f = window.__framebusField;
	const at = step === "took" ? {url: location.href, title: document.title} : {};
	if (!f || !f.el.isConnected) return at;
	const refuse = (reason) => ({error: "input", reason});
	const now = f.editable ? f.el.textContent : f.el.value;
	if (step === "cleared") {
		if (now.replace(/[\s\u200b\ufeff]/g, "") !== "") return refuse(f.where + " could not be cleared: it still holds " + JSON.stringify(now) + " after select-all and Backspace (the page handles the keys itself)");
		f.before = now;
		return {};
	}
	window.__framebusField = null;
	if (now === f.before && !(f.replace && now === f.text)) return refuse(f.where + " did not take the text: it still holds " + JSON.stringify(now) + " (a script on the page refused the input; type --keys presses a key per character, as a user types)");
	return at;
}`

type fieldReply struct {
	elementReply
	Set      bool // the whole value was set: there is nothing to type
	Selected bool // the content is selected, to be deleted
}

// TypeOptions vary how Type puts text in.
type TypeOptions struct {
	// Replace: the text replaces the field's content, typed over it
	// selected, as a user does (one input event, as Playwright's fill
	// makes); with no text, Backspace deletes it: fill, type --clear.
	Replace bool
	// Keys: a key per character (TypeKeys) rather than one insert.
	Keys bool
}

// Type puts text into the field (see fieldJS): the element matching
// selector, focused, or with selector "" the focused one. An input that
// takes a whole value (a date, a colour, a range) takes text as that
// value. Clearing and typing are checked to have taken (fieldCheckJS).
//
// When the text was typed, the answer is where the page is after it (see
// fieldCheckJS); otherwise it is nil.
func (p *Page) Type(ctx context.Context, selector, text string, o TypeOptions) (*Location, error) {
	var r fieldReply
	if err := p.callOnDocument(ctx, "focus", selector, fieldJS, false, &r, text, o.Replace, o.Keys); err != nil {
		return nil, err
	}
	if r.Set {
		return nil, nil
	}
	gen := p.decoder.generation.Load()
	if r.Selected && text == "" {
		if err := p.press(ctx, namedKeys["Backspace"], 0); err != nil {
			return nil, err
		}
		if p.decoder.generation.Load() != gen {
			return nil, nil // the field went with its document
		}
		if err := p.callOnDocument(ctx, "check field", "", fieldCheckJS, false, nil, "cleared"); err != nil {
			return nil, &InputSentError{Err: err} // the field may have changed
		}
	}
	if text == "" {
		return nil, nil
	}
	var err error
	if o.Keys {
		err = p.TypeKeys(ctx, text)
	} else {
		err = p.InsertText(ctx, text)
	}
	if err != nil {
		return nil, err
	}
	if p.decoder.generation.Load() != gen {
		// A new document came while the text went in: there is no field
		// to check, and settling has the new page.
		return nil, nil
	}
	var took locationReply
	if err := p.callOnDocument(ctx, "check field", "", fieldCheckJS, false, &took, "took"); err != nil {
		return nil, &InputSentError{Err: err}
	}
	return took.location(), nil
}

const focusJS = `function (selector) {` + findElementJS + describeJS + focusOnJS + `
	const f = focusOn(el, "element " + selector);
	return f.error ? f : {};
}`

// Focus focuses the element matching selector, after scrolling it into
// view (see focusOnJS).
func (p *Page) Focus(ctx context.Context, selector string) error {
	return p.callOnDocument(ctx, "focus", selector, focusJS, false, nil)
}
