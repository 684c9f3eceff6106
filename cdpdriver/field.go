package cdpdriver

import "context"

// fieldJS makes ready the field that type and fill put text into: the
// selector's element, focused after it is scrolled into view, or with no
// selector the element that has focus (through shadow roots and
// same-origin frames). It refuses what would drop the text unseen: an
// element that is disabled, read-only or takes no text (a button, a
// checkbox, the page's body), and a number input given letters.
//
// Inputs whose value is not typed character by character (date, time,
// color, range, ...) take the whole value, set as a user's picker would,
// with input and change events; only when replacing (fill, type --clear),
// and only a value the input keeps. With replace, a text field's content
// is selected, for the Backspace that clears it.
//
// Elements are told apart by localName, not instanceof: a ref may name an
// element of a frame's document, whose classes are another realm's.
const fieldJS = `function (selector, text, replace) {` + lookupJS + describeJS + `
	const refuse = (reason) => ({error: "input", reason});
	let el, where;
	if (selector) {
		const found = lookup(this, selector);
		if (found.error) return found;
		el = found.el;
		where = "element " + selector;
		if (el.scrollIntoViewIfNeeded) el.scrollIntoViewIfNeeded(true);
		else el.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
		if (el.disabled) return refuse(where + " is disabled");
		if (typeof el.focus === "function") el.focus();
		if (el.getRootNode().activeElement !== el) return refuse(where + " cannot be focused");
	} else {
		el = document.activeElement;
		for (;;) {
			if (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
			else if (el && (el.localName === "iframe" || el.localName === "frame")) {
				const doc = el.contentDocument;
				if (!doc) return {}; // another origin's frame: its own page decides
				el = doc.activeElement;
			} else break;
		}
		if (!el) return refuse("nothing has focus: give a selector");
		where = "the focused element (" + describe(el) + ")";
	}
	const kind = el.localName === "input" ? (el.type || "text") : el.localName;
	if (el.isContentEditable) {
		if (replace) {
			const r = el.ownerDocument.createRange();
			r.selectNodeContents(el);
			const s = el.ownerDocument.getSelection();
			s.removeAllRanges();
			s.addRange(r);
		}
		return {selected: replace};
	}
	if (el.localName === "select") {
		return refuse(where + " is a <select>, which takes no text: choose an option with select");
	}
	const picked = {date: "2024-01-31", time: "13:45", "datetime-local": "2024-01-31T13:45", month: "2024-01", week: "2024-W05", color: "#ff0000", range: ""};
	const typed = ["text", "search", "url", "tel", "email", "password", "number"];
	const isInput = el.localName === "input";
	if (isInput && kind in picked) {
		if (!replace) return refuse(where + " is an <input type=" + kind + ">, which takes a whole value: set it with fill (or type --clear)");
		if (el.readOnly) return refuse(where + " is read-only");
		el.value = text;
		const kept = kind === "color" ? el.value === text.toLowerCase() : el.value === text;
		if (!kept) {
			const like = kind === "range"
				? "a number from " + (el.min || 0) + " to " + (el.max || 100) + (el.step && el.step !== "any" ? " in steps of " + el.step : "")
				: "e.g. " + picked[kind];
			return refuse(JSON.stringify(text) + " is not a value for " + where + " (an <input type=" + kind + ">): " + like);
		}
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
	if (replace) el.select();
	return {selected: replace};
}`

type fieldReply struct {
	elementReply
	Set      bool // the whole value was set: there is nothing to type
	Selected bool // the content is selected, to be deleted
}

// PrepareField readies the field text goes into (see fieldJS): the
// element matching selector, focused, or with selector "" the focused
// one. With replace its content is deleted (select all, Backspace, so
// input events fire), or for an input that takes a whole value (a date,
// a colour, a range) text is set as that value: set reports it, and then
// there is nothing to type.
func (p *Page) PrepareField(ctx context.Context, selector, text string, replace bool) (set bool, err error) {
	var r fieldReply
	if err := p.callOnDocument(ctx, "focus", selector, fieldJS, false, &r, text, replace); err != nil {
		return false, err
	}
	if r.Selected {
		return false, p.press(ctx, namedKeys["Backspace"], 0)
	}
	return r.Set, nil
}
