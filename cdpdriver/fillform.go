package cdpdriver

import (
	"context"
	"sort"
)

// Filling a form: FormFields checks every field before any is touched
// (it is there, it is a kind of field the value suits, the value is one
// it takes) and puts them in document order; the caller then fills each
// with the action that suits it (Type, Select, Click), so a form is
// filled exactly as the single actions fill a field.

// Kinds of form field, as FormFields tells them.
const (
	FieldText   = "text"   // typed or set as text: inputs, textareas, editable content, range and date pickers
	FieldSelect = "select" // a native <select>
	FieldCheck  = "check"  // a checkbox or a radio button
)

// FormField is one field of a form to fill.
type FormField struct {
	Selector, Value string
	Kind            string
	// Click: a checkbox or radio whose state must change (Check).
	Click bool
	// Check is the state a checkbox or radio is to have.
	Check bool
}

// formFieldsJS looks up each selector (or ref), checks its value suits
// it, and answers the fields in document order, or the first field that
// cannot be filled ("at": its index) and why.
const formFieldsJS = `function (_, selectors, values) {` + lookupJS + describeJS + pickedJS + `
	const fail = (at, error, reason) => ({error, reason, at});
	const textual = ["text", "search", "url", "tel", "email", "password", "number"];
	const fields = [];
	for (let i = 0; i < selectors.length; i++) {
		const selector = selectors[i], value = values[i];
		const found = lookup(this, selector);
		if (found.error) return fail(i, found.error, found.reason);
		const el = found.el, where = "element " + selector + " (" + describe(el) + ")";
		const dup = fields.find(f => f.el === el);
		if (dup) return fail(i, "input", selectors[dup.i] + " and " + selector + " are the same field (" + describe(el) + "): give it once");
		if (el.matches(":disabled")) return fail(i, "input", where + " is disabled");
		const type = el.localName === "input" ? (el.type || "text") : "";
		if (type === "checkbox" || type === "radio") {
			const v = value.trim().toLowerCase();
			if (v !== "true" && v !== "false") return fail(i, "input", JSON.stringify(value) + " is not a state for " + where + ", a " + type + ": give true or false");
			const want = v === "true";
			if (type === "radio" && !want && el.checked) return fail(i, "input", where + " is a checked radio button, which a click cannot uncheck: check another of its group instead");
			fields.push({i, el, kind: "check", check: want, click: el.checked !== want});
			continue;
		}
		if (el.localName === "select") {
			const opts = Array.from(el.options);
			if (!opts.some(o => o.value === value) && !opts.some(o => o.text.trim() === value.trim())) return fail(i, "nooption", value);
			fields.push({i, el, kind: "select"});
			continue;
		}
		if (type in picked) {
			const refused = pickedRefusal(el, type, value, where);
			if (refused) return fail(i, "input", refused);
		} else if (!(type && textual.includes(type)) && el.localName !== "textarea" && !el.isContentEditable) {
			const what = type ? "an <input type=" + type + ">" : "a <" + el.localName + ">";
			return fail(i, "input", where + " is " + what + ", which fill-form cannot fill: it fills text inputs, textareas, editable content, checkboxes, radio buttons, selects, range and date inputs");
		}
		if (el.readOnly) return fail(i, "input", where + " is read-only");
		if (type === "number" && value.trim() !== "" && isNaN(Number(value))) return fail(i, "input", JSON.stringify(value) + " is not a number, and " + where + " takes only numbers");
		fields.push({i, el, kind: "text"});
	}
	fields.sort((a, b) => a.el.compareDocumentPosition(b.el) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1);
	return {fields: fields.map(f => ({i: f.i, kind: f.kind, check: !!f.check, click: !!f.click}))};
}`

type formFieldsReply struct {
	elementReply
	At     int `json:"at"`
	Fields []struct {
		I     int    `json:"i"`
		Kind  string `json:"kind"`
		Check bool   `json:"check"`
		Click bool   `json:"click"`
	} `json:"fields"`
	none elementReply // what callOnDocument sees: no error
}

// head gives callOnDocument a head the answer's error does not reach:
// FormFields tells the error, naming the field it is about, which
// callOnDocument cannot.
func (r *formFieldsReply) head() *elementReply { return &r.none }

// FormFields checks the fields (selector or ref -> value) of a form to
// fill and returns them in document order (see formFieldsJS). A field
// that is missing, or cannot take its value, is an error naming it, and
// nothing is filled.
func (p *Page) FormFields(ctx context.Context, values map[string]string) ([]FormField, error) {
	selectors := make([]string, 0, len(values))
	for s := range values {
		selectors = append(selectors, s)
	}
	sort.Strings(selectors) // a fixed order for fields the page cannot order
	vals := make([]string, len(selectors))
	for i, s := range selectors {
		vals[i] = values[s]
	}
	var r formFieldsReply
	if err := p.callOnDocument(ctx, "fill-form", "", formFieldsJS, false, &r, selectors, vals); err != nil {
		return nil, err
	}
	if r.Error != "" {
		if r.At < 0 || r.At >= len(selectors) {
			return nil, &InputError{Msg: "fill-form: " + r.Reason}
		}
		return nil, p.refError(r.elementReply.err(selectors[r.At]))
	}
	fields := make([]FormField, 0, len(r.Fields))
	for _, f := range r.Fields {
		if f.I < 0 || f.I >= len(selectors) {
			return nil, &InputError{Msg: "fill-form: the page answered a field it was not asked for"}
		}
		fields = append(fields, FormField{Selector: selectors[f.I], Value: vals[f.I], Kind: f.Kind, Check: f.Check, Click: f.Click})
	}
	return fields, nil
}

const checkedJS = `function (selector) {` + findElementJS + `
	return {checked: !!el.checked};
}`

// Checked says whether the checkbox or radio the selector names is
// checked.
func (p *Page) Checked(ctx context.Context, selector string) (bool, error) {
	var r struct {
		elementReply
		Checked bool `json:"checked"`
	}
	err := p.callOnDocument(ctx, "read checked", selector, checkedJS, false, &r)
	return r.Checked, err
}
