// The accessibility snapshot, computed in the page in one pass over the
// DOM (light and open shadow trees, same-origin iframes). It is called with
// Runtime.callFunctionOn on the document, with the subtree's selector and
// the options as its arguments, and answers {wire: the snapshot in a
// compact line format (see the end of the function)} by value, or {error}.
//
// Roles follow HTML-AAM's implicit mappings (an explicit role attribute
// wins), names follow the accessible name computation the way Chromium does
// it (aria-labelledby, aria-label, native label, content, title; in a name
// from content, inline parts are joined as they render, block parts and
// embedded names with a space, CSS generated content is read, and
// landmarks, groups, tables and other containers are left out). The
// fixtures in testdata/snapshot check both against Chromium's own tree
// (snapshot_fidelity_test.go).
//
// Left out, with their subtree: display:none (the hidden attribute),
// aria-hidden=true, inert, everything outside an open modal dialog,
// content-visibility:hidden content, all of a closed <details> but its
// summary, the content of a box with no width or no height that clips its
// overflow, controls, images, iframes and empty elements of zero size (a
// zero-size control with a label stays: the label makes it usable;
// content overflowing a zero-size box that does not clip stays).
// visibility:hidden leaves the element out but not a descendant that is
// visible again. Shown:
// content that is only off-screen, visually hidden (the 1px clip pattern)
// or transparent (opacity:0: Chromium keeps it, and pages put transparent
// native controls over custom drawings). Decoration is left out too:
// presentational images and SVG, and generic wrappers (div, span,
// unnamed section and form, presentational tables), whose children take
// their place. Closed shadow roots and cross-origin frames are out of
// reach.
//
// The tree is compacted: adjacent inline text is one text node (phrasing
// markup like strong, em and code is text; a block or a line break starts
// a new one); the text of a label, legend, caption or figcaption that
// names a shown element is left out (it is that element's name); a node
// whose name comes from its content and whose children add nothing but
// that text (and images) has no children; a non-interactive node whose
// only child is a link (or control) of its name (a heading that is a
// link) has no name, the link says it; rows have no name; table row
// groups (thead, tbody, tfoot) are left out; images, sliders, progress
// bars, meters and separators have no children.
//
// Interactive (a ref): widget roles (button, link, checkbox, textbox,
// option, tab, gridcell, ...), the root of a contenteditable region, an
// element with tabindex >= 0, one with an onclick attribute, and the
// outermost of nested elements with cursor:pointer. (The function runs in
// framebus's isolated world, where handlers the page set as properties,
// el.onclick = ..., are not visible; cursor:pointer usually comes with
// them.)
//
// Speed (a 1,000-row table in a few tens of milliseconds): children are
// read with firstChild/nextSibling, attributes only of elements that have
// any, one computed style per element, sizes only where they matter, a
// name from content computed once per element (a cell's name reads its
// link's), and the answer is a compact line format instead of JSON.
//
// Refs: every interactive element gets a ref (e1, e2, ...) kept in a
// per-document registry, so the same element keeps its ref across
// snapshots and an action can find it again, or learn that it is gone.
function (selector, opts) {
	"use strict";
	const reg = window.__framebusRefs || (() => {
		// Numbering goes on from the tab's last document (opts.firstRef),
		// so a ref from an earlier page names nothing here, rather than
		// whatever this page's element of that number is.
		const r = {next: Math.max(1, opts.firstRef | 0), byRef: new Map(), byEl: new WeakMap()};
		Object.defineProperty(window, "__framebusRefs", {value: r, enumerable: false});
		return r;
	})();
	const refOf = (el) => {
		let ref = reg.byEl.get(el);
		if (!ref) {
			ref = "e" + reg.next++;
			reg.byEl.set(el, ref);
			reg.byRef.set(ref, new WeakRef(el));
		}
		return ref;
	};

	const maxDepth = opts.maxDepth > 0 ? opts.maxDepth : Infinity;
	const maxNodes = opts.maxNodes > 0 ? opts.maxNodes : Infinity;
	let count = 0, truncated = false, interactiveCount = 0;

	// norm collapses white space; most strings need nothing done.
	const messy = /[\t\n\r\f]| {2}|^ | $/;
	const norm = (s) => !s ? "" : messy.test(s) ? s.replace(/\s+/g, " ").trim() : s;
	const isSpace = (c) => c === 32 || c === 10 || c === 9 || c === 13 || c === 12;

	// One computed style per element: names from content visit elements
	// the walk visits too.
	const styles = new Map();
	const styleOf = (el) => {
		let s = styles.get(el);
		if (s === undefined) {
			s = getComputedStyle(el);
			styles.set(el, s);
		}
		return s;
	};

	// attr reads an attribute of an element that has any (attrs is
	// el.hasAttributes(): most elements have none, and then no attribute
	// is looked up).
	const attr = (el, attrs, name) => attrs ? el.getAttribute(name) : null;

	// Roles.

	const validRoles = new Set(("alert alertdialog application article banner blockquote button caption cell checkbox code columnheader combobox complementary contentinfo definition deletion dialog directory document emphasis feed figure form generic grid gridcell group heading img insertion link list listbox listitem log main marquee math menu menubar menuitem menuitemcheckbox menuitemradio meter navigation none note option paragraph presentation progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox separator slider spinbutton status strong subscript superscript switch tab table tablist tabpanel term textbox time timer toolbar tooltip tree treegrid treeitem").split(" "));

	const inputType = (el) => (el.getAttribute("type") || "text").toLowerCase();

	const inputRole = (el) => {
		const t = inputType(el);
		switch (t) {
		case "button": case "submit": case "reset": case "image": case "file": case "color": return "button";
		case "checkbox": return "checkbox";
		case "radio": return "radio";
		case "range": return "slider";
		case "number": return "spinbutton";
		case "hidden": return null;
		case "search": return el.hasAttribute("list") ? "combobox" : "searchbox";
		case "date": case "datetime-local": case "month": case "time": case "week": return "textbox";
		}
		return el.hasAttribute("list") ? "combobox" : "textbox";
	};

	// hasOwnName: a name from attributes (a section or form is a landmark
	// only with one).
	const hasOwnName = (el) => el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby") || el.hasAttribute("title");

	const thRole = (el) => {
		const scope = (el.getAttribute("scope") || "").toLowerCase();
		if (scope === "row" || scope === "rowgroup") return "rowheader";
		if (scope === "col" || scope === "colgroup") return "columnheader";
		const row = el.parentElement;
		if (!row) return "columnheader";
		if (row.parentElement && row.parentElement.localName === "thead") return "columnheader";
		for (let c = row.firstElementChild; c; c = c.nextElementSibling) if (c.localName !== "th") return "rowheader";
		return "columnheader";
	};

	// implicitRole: HTML-AAM. table is the kind of table an element is in
	// ("table", "grid", "layout" or ""), scoped whether a header or footer
	// is inside sectioning content (then it is no landmark).
	const implicitRole = (el, tag, attrs, table, scoped) => {
		switch (tag) {
		case "div": case "span": case "b": case "i": case "u": case "s": case "small": case "strong": case "em": case "code":
		case "label": case "font": case "center": case "pre": case "abbr": case "cite": case "q": case "mark": case "time":
		case "body": case "html": case "sub": case "sup": case "del": case "ins": case "kbd": case "samp": case "var":
			return null;
		case "a": case "area": return attrs && el.hasAttribute("href") ? "link" : null;
		case "button": return "button";
		case "input": return inputRole(el);
		case "textarea": return "textbox";
		case "select": return el.multiple || el.size > 1 ? "listbox" : "combobox";
		case "option": return "option";
		case "optgroup": return "group";
		case "h1": case "h2": case "h3": case "h4": case "h5": case "h6": return "heading";
		case "ul": case "ol": case "menu": case "dl": return "list";
		case "li": return "listitem";
		case "dt": return "term";
		case "dd": return "definition";
		case "nav": return "navigation";
		case "main": return "main";
		case "aside": return "complementary";
		case "search": return "search";
		case "header": return scoped ? null : "banner";
		case "footer": return scoped ? null : "contentinfo";
		case "form": return attrs && hasOwnName(el) ? "form" : null;
		case "section": return attrs && hasOwnName(el) ? "region" : null;
		case "article": return "article";
		case "table": return "table";
		case "caption": return table === "layout" ? null : "caption";
		case "thead": case "tbody": case "tfoot": return table === "layout" ? null : "rowgroup";
		case "tr": return table === "layout" ? null : "row";
		case "td": return table === "layout" ? null : table === "grid" ? "gridcell" : "cell";
		case "th": return table === "layout" ? null : thRole(el);
		case "img": return el.getAttribute("alt") === "" && !el.hasAttribute("title") ? "presentation" : "img";
		case "svg": return attrs && (el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby")) || el.querySelector(":scope > title") ? "img" : null;
		case "dialog": return "dialog";
		case "details": return "group";
		case "summary": return el.parentElement && el.parentElement.localName === "details" ? "button" : null;
		case "fieldset": return "group";
		case "p": return "paragraph";
		case "hr": return "separator";
		case "progress": return "progressbar";
		case "meter": return "meter";
		case "output": return "status";
		case "blockquote": return "blockquote";
		case "figure": return "figure";
		case "iframe": return "iframe";
		case "math": return "math";
		}
		return null;
	};

	// focusableTag: natively focusable, so role=presentation does not
	// apply (an author's presentation role never hides a control).
	const focusableTag = (el, tag) => tag === "button" || tag === "input" || tag === "select" || tag === "textarea" ||
		((tag === "a" || tag === "area") && el.hasAttribute("href")) || el.hasAttribute("tabindex");

	const roleOf = (el, tag, attrs, table, scoped) => {
		const explicit = attr(el, attrs, "role");
		if (explicit) {
			for (let r of explicit.trim().toLowerCase().split(/\s+/)) {
				if (r === "image") r = "img";
				if (!validRoles.has(r)) continue;
				if (r === "none" || r === "presentation") {
					if (focusableTag(el, tag)) break;
					return "presentation";
				}
				return r;
			}
		}
		return implicitRole(el, tag, attrs, table, scoped);
	};

	const interactiveRoles = new Set(["button", "link", "checkbox", "radio", "textbox", "searchbox", "combobox", "listbox", "option", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider", "spinbutton", "treeitem", "gridcell"]);
	const nameFromContentRoles = new Set(["button", "cell", "checkbox", "columnheader", "gridcell", "heading", "link", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "radio", "rowheader", "switch", "tab", "tooltip", "treeitem", "caption", "term"]);
	// Roles whose content a name from content leaves out (as Chromium
	// does): landmarks, containers, composite widgets; and images, named
	// by their alt text or label only.
	const skippedInNameRoles = new Set(["alert", "alertdialog", "application", "article", "banner", "blockquote", "complementary", "contentinfo", "dialog", "document", "feed", "figure", "grid", "group", "listbox", "log", "main", "marquee", "menu", "menubar", "navigation", "note", "radiogroup", "region", "row", "rowgroup", "search", "separator", "status", "table", "tablist", "tabpanel", "timer", "toolbar", "tree", "treegrid", "form", "img"]);
	// Roles whose children are presentational: leaves in the snapshot.
	const leafRoles = new Set(["img", "progressbar", "meter", "slider", "separator", "scrollbar"]);
	// Replaced elements: their content is not their children.
	const replaced = new Set(["input", "textarea", "select", "img", "iframe", "svg", "video", "audio", "canvas", "object", "embed", "progress", "meter"]);
	// Containers left out when they are empty, unnamed and without states.
	const droppedWhenEmpty = new Set(["group", "list", "listitem", "paragraph", "blockquote", "figure", "toolbar", "menu", "menubar", "tablist", "radiogroup", "tree", "article", "region", "search", "navigation", "main", "complementary", "banner", "contentinfo", "form", "definition", "term", "tabpanel", "math", "generic", "rowgroup", "document", "application", "note", "feed"]);
	// Landmarks and sectioning roles: a header or footer inside is no
	// banner or contentinfo.
	const scopingRoles = new Set(["article", "complementary", "main", "navigation", "region"]);

	// Values.

	const rangeValue = (el, attrs) => {
		const vt = attr(el, attrs, "aria-valuetext");
		if (vt) return vt;
		const v = attr(el, attrs, "aria-valuenow");
		if (v !== null) return v;
		return el.value !== undefined && el.value !== null ? "" + el.value : "";
	};

	// Children.

	// childSource: where the children that render are: a shadow host's
	// shadow root, a slot's assigned nodes (an array), an iframe's document
	// body (same origin; an array), or the node itself. Children are then
	// read with firstChild and nextSibling, much faster than iterating a
	// NodeList.
	const none = [];
	const childSource = (node) => {
		if (node.nodeType === 1) {
			if (node.shadowRoot) return node.shadowRoot;
			const tag = node.localName;
			if (tag === "slot") {
				const assigned = node.assignedNodes({flatten: true});
				return assigned.length ? assigned : node;
			}
			if (tag === "iframe" || tag === "frame") {
				try {
					const d = node.contentDocument;
					return d && d.body ? [d.body] : none;
				} catch (e) { return none; }
			}
		}
		return node;
	};

	// summaryOf: a <details>'s summary, the only child that renders while
	// it is closed.
	const summaryOf = (details) => {
		for (let c = details.firstElementChild; c; c = c.nextElementSibling) if (c.localName === "summary") return c;
		return null;
	};

	const firstChild = (el, tag) => {
		for (let c = el.firstElementChild; c; c = c.nextElementSibling) if (c.localName === tag) return c;
		return null;
	};

	// Names.

	// embeddedName: what an element contributes to a name from content
	// when it is a control or an image, or undefined when its content
	// counts instead.
	const embeddedName = (el, tag, attrs, role) => {
		// An image without alt text is named by its title (alt="" says it
		// is decoration).
		if (tag === "img") return el.hasAttribute("alt") ? el.getAttribute("alt") : el.getAttribute("title") || "";
		if (tag === "svg") {
			// An icon names its button or link by its <title>.
			const t = firstChild(el, "title");
			if (t) return t.textContent;
		}
		if (tag === "input") {
			const t = inputType(el);
			if (t === "image") return el.getAttribute("alt") || "";
			if (t === "checkbox" || t === "radio" || t === "hidden") return "";
			if (t === "submit" || t === "reset" || t === "button") return el.hasAttribute("value") ? el.value : t === "submit" ? "Submit" : t === "reset" ? "Reset" : "";
			return el.value;
		}
		if (tag === "textarea") return el.value;
		if (tag === "select") return Array.from(el.selectedOptions, (o) => o.text).join(" ");
		switch (role) {
		case "textbox": case "searchbox": return el.textContent;
		case "combobox": return "";
		case "slider": case "spinbutton": case "progressbar": case "meter": case "scrollbar": return rangeValue(el, attrs);
		}
		return undefined;
	};

	// Names from content join their parts as Chromium does: a space goes
	// between two parts when either is a box of its own (a block, an
	// inline-block, an image, a control: not on the same line of inline
	// text; display:contents too, having no box) or is named by other than
	// its content (aria-label, alt text, a title, a value, generated
	// content's alt text), unless white space is already there. So
	// <span>Split</span><span>words</span> is "Splitwords",
	// <div>A</div><div>B</div> is "A B", and text right next to a link is
	// joined to the link's text as it renders.
	const join = (j, part, boxed, named) => {
		if (part) {
			const t = j.text;
			if (t && (boxed || named || j.boxed || j.named) && !isSpace(t.charCodeAt(t.length - 1)) && !isSpace(part.charCodeAt(0))) j.text += " ";
			j.text += part;
			j.named = named;
		}
		j.boxed = boxed;
	};

	// CSS generated content (::before, ::after) is part of a name, as
	// Chromium reads it: its strings (attr() comes resolved) and quotes,
	// or its alt text (content: "★" / "Starred") in their place; counters
	// are not read, and an image (url()) is an image with no name. The
	// computed value is parsed: a list of CSS strings, identifiers and
	// functions.
	const cssEscape = /\\(?:([0-9a-fA-F]{1,6})[ \t\n\r\f]?|\n|(.))/g;
	const codePoint = (hex) => {
		const n = parseInt(hex, 16);
		return String.fromCodePoint(n > 0 && n <= 0x10ffff && (n < 0xd800 || n > 0xdfff) ? n : 0xfffd);
	};
	const unescapeCSS = (s) => s.replace(cssEscape, (m, hex, c) => hex ? codePoint(hex) : c || "");
	const cssStrings = (v) => {
		const out = [];
		for (let i = 0; i < v.length;) {
			const q = v[i];
			if (q !== '"' && q !== "'") { i++; continue; }
			let k = i + 1;
			while (k < v.length && v[k] !== q) k += v[k] === "\\" ? 2 : 1;
			out.push(unescapeCSS(v.slice(i + 1, k)));
			i = k + 1;
		}
		return out;
	};
	// Quote marks where the page sets none: English's (Chromium picks
	// them by the language; other languages' are not modelled).
	const defaultQuotes = ["\u201c", "\u201d", "\u2018", "\u2019"];
	// generatedInto joins the generated content of el's pseudo-element
	// (which: "::before" or "::after") into j. depth is the quote depth
	// (q.depth), carried from ::before to ::after.
	const generatedInto = (j, el, which, q) => {
		const s = getComputedStyle(el, which);
		const c = s.content;
		if (c === "none" || c === "normal" || s.display === "none" || s.visibility !== "visible") return;
		const boxed = s.display !== "inline";
		// Split at the top-level slash: the content, then its alt text.
		let slash = -1;
		for (let i = 0, quote = "", paren = 0; i < c.length; i++) {
			const ch = c[i];
			if (quote) { if (ch === "\\") i++; else if (ch === quote) quote = ""; }
			else if (ch === '"' || ch === "'") quote = ch;
			else if (ch === "(") paren++;
			else if (ch === ")") paren--;
			else if (ch === "/" && !paren) { slash = i; break; }
		}
		if (slash >= 0) {
			join(j, cssStrings(c.slice(slash + 1)).join(""), boxed, true);
			return;
		}
		// The content's parts, joined as inline text inside the pseudo-
		// element; an image is a box of its own with no name.
		const inner = {text: "", boxed: false, named: false};
		let marks = null;
		const mark = (open) => {
			if (!marks) marks = s.quotes === "auto" ? defaultQuotes : s.quotes === "none" ? [] : cssStrings(s.quotes);
			const d = open ? q.depth++ : --q.depth;
			if (d < 0) { q.depth = 0; return ""; }
			const pairs = marks.length >> 1;
			if (!pairs) return "";
			return marks[2 * Math.min(d, pairs - 1) + (open ? 0 : 1)] || "";
		};
		for (let i = 0; i < c.length;) {
			const ch = c[i];
			if (ch === '"' || ch === "'") {
				let k = i + 1;
				while (k < c.length && c[k] !== ch) k += c[k] === "\\" ? 2 : 1;
				join(inner, unescapeCSS(c.slice(i + 1, k)), false, false);
				i = k + 1;
				continue;
			}
			if (isSpace(c.charCodeAt(i))) { i++; continue; }
			let k = i;
			while (k < c.length && /[-\w]/.test(c[k])) k++;
			const word = c.slice(i, k);
			if (c[k] === "(") {
				// A function: skip to its closing parenthesis.
				let depth = 0;
				for (; k < c.length; k++) {
					const x = c[k];
					if (x === '"' || x === "'") { k++; while (k < c.length && c[k] !== x) k += c[k] === "\\" ? 2 : 1; }
					else if (x === "(") depth++;
					else if (x === ")" && --depth === 0) { k++; break; }
				}
				if (word !== "counter" && word !== "counters") join(inner, "", true, false); // an image
			} else if (word === "open-quote" || word === "close-quote") {
				join(inner, mark(word === "open-quote"), false, false);
			} else if (word === "no-open-quote") q.depth++;
			else if (word === "no-close-quote") q.depth = Math.max(0, q.depth - 1);
			i = Math.max(k, i + 1);
		}
		join(j, inner.text, boxed, false);
	};

	// Reading generated content costs a style lookup per pseudo-element,
	// a few microseconds each: most of the time a big table's snapshot
	// takes. So the document's style sheets are read once for the rules
	// that set content on ::before or ::after, indexed by the id, class or
	// tag their originating element must have, and only an element such
	// a rule may match is looked up (plus <q>, quoted by the browser's own
	// sheet). Where that cannot be known (a sheet from another origin, an
	// element in a shadow tree, with sheets of its own) every element is
	// looked up.
	const pseudoRuleSelector = /::?(?:before|after)(?![-\w])/i;
	const cssIdent = /^(?:\\[0-9a-fA-F]{1,6}[ \t\n\r\f]?|\\.|[-\w\u0080-\uffff])+/;
	// splitTop splits a selector list at its top-level commas.
	const splitTop = (list) => {
		const out = [];
		let depth = 0, quote = "", from = 0;
		for (let i = 0; i < list.length; i++) {
			const ch = list[i];
			if (ch === "\\") { i++; continue; }
			if (quote) { if (ch === quote) quote = ""; continue; }
			if (ch === '"' || ch === "'") quote = ch;
			else if (ch === "(" || ch === "[") depth++;
			else if (ch === ")" || ch === "]") depth--;
			else if (ch === "," && !depth) { out.push(list.slice(from, i)); from = i + 1; }
		}
		out.push(list.slice(from));
		return out;
	};
	// indexSelector files one selector of a rule that generates content
	// under its pseudo-element and what its originating element's last
	// compound requires.
	const simpleClassRule = /^\s*\.([-\w]+)::?(before|after)\s*$/i; // .fa-github::before, icon fonts' thousands
	const indexSelector = (index, sel) => {
		const simple = simpleClassRule.exec(sel);
		if (simple) { index[simple[2].toLowerCase()].classes.add(simple[1]); return; }
		const m = pseudoRuleSelector.exec(sel);
		const ix = index[/before/i.test(m[0]) ? "before" : "after"];
		const base = sel.slice(0, m.index).trim();
		if (!base || /[>+~]$/.test(base)) { ix.generic.push("*"); return; }
		// The last compound: after the last top-level combinator.
		let depth = 0, start = 0;
		for (let i = 0; i < base.length; i++) {
			const ch = base[i];
			if (ch === "\\") { i++; continue; }
			if (ch === "(" || ch === "[") depth++;
			else if (ch === ")" || ch === "]") depth--;
			else if (!depth && (ch === " " || ch === ">" || ch === "+" || ch === "~")) start = i + 1;
		}
		const compound = base.slice(start);
		let id = "", cls = "";
		const t = /^[a-zA-Z]/.test(compound) && cssIdent.exec(compound);
		const tag = t && compound[t[0].length] !== "|" ? t[0] : ""; // not a namespace
		for (let i = 0, d = 0; i < compound.length; i++) {
			const ch = compound[i];
			if (ch === "\\") { i++; continue; }
			if (ch === "(" || ch === "[") d++;
			else if (ch === ")" || ch === "]") d--;
			else if (!d && (ch === "#" || ch === ".")) {
				const n = cssIdent.exec(compound.slice(i + 1));
				if (n && ch === "#" && !id) id = unescapeCSS(n[0]);
				if (n && ch === "." && !cls) cls = unescapeCSS(n[0]);
			}
		}
		if (id) ix.ids.add(id);
		else if (cls) ix.classes.add(cls);
		else if (tag) ix.tags.add(tag.toLowerCase());
		else ix.generic.push(base);
	};
	// indexPseudoRules reads a document's sheets: the index of each
	// pseudo-element's rules, or null when a sheet cannot be read.
	const indexPseudoRules = (doc) => {
		const part = () => ({ids: new Set(), classes: new Set(), tags: new Set(["q"]), generic: [], matches: ""});
		const ix = {before: part(), after: part()};
		const visit = (rules) => {
			for (const r of rules) {
				if (r.styleSheet) visit(r.styleSheet.cssRules); // @import
				if (r.selectorText !== undefined && pseudoRuleSelector.test(r.selectorText) && r.style.getPropertyValue("content")) {
					for (const sel of splitTop(r.selectorText)) if (pseudoRuleSelector.test(sel)) indexSelector(ix, sel);
				}
				// @media, @supports, @layer, @container, nested rules:
				// their conditions are not judged (a rule too many is
				// only a lookup too many).
				if (r.cssRules) visit(r.cssRules);
			}
		};
		try {
			for (const sheet of doc.styleSheets) visit(sheet.cssRules);
			for (const sheet of doc.adoptedStyleSheets || none) visit(sheet.cssRules);
			for (const p of [ix.before, ix.after]) {
				p.matches = p.generic.join(",");
				if (p.matches) doc.documentElement.matches(p.matches);
			}
		} catch (e) { return null; }
		return ix;
	};
	const mayMatch = (p, el) => {
		if (p.tags.has(el.localName) || el.id && p.ids.has(el.id)) return true;
		const cl = el.classList;
		for (let i = 0; i < cl.length; i++) if (p.classes.has(cl[i])) return true;
		return p.matches !== "" && el.matches(p.matches);
	};
	// mayGenerate says which of el's pseudo-elements to look up: 1 for
	// ::before, 2 for ::after, 3 both.
	const pseudoIndexes = new Map();
	const mayGenerate = (el) => {
		const root = el.getRootNode();
		if (root.nodeType !== 9) return 3; // a shadow tree
		let ix = pseudoIndexes.get(root);
		if (ix === undefined) {
			ix = indexPseudoRules(root);
			pseudoIndexes.set(root, ix);
		}
		return !ix ? 3 : (mayMatch(ix.before, el) ? 1 : 0) | (mayMatch(ix.after, el) ? 2 : 0);
	};

	// Roles that take no name from their author (a title on them is not
	// read either).
	const nameProhibitedRoles = new Set(["caption", "code", "deletion", "emphasis", "generic", "insertion", "paragraph", "presentation", "strong", "subscript", "superscript"]);

	// Chromium reads at most about a hundred objects of a subtree for a
	// name (its kMaxDescendantsForTextAlternativeComputation): the named
	// element, then every text and every element its tree keeps (not a
	// plain inline span or b, nor white space that does not render), and
	// stops at the first child after more than 100. A link around a whole
	// card list is named by what comes first; here the count is kept the
	// same way (nameRead: objects read by the name being computed).
	const nameBudget = 100;
	let nameRead = 0, nameCuts = 0;
	const plainInline = new Set(["span", "b", "i", "u", "s", "small", "big", "font", "kbd", "samp", "var", "tt", "bdi", "bdo"]);

	// contentName: the text of a subtree for a name from content, not yet
	// normalized: its generated content, text and the names of what it
	// embeds. force includes hidden content (a hidden element named by
	// aria-labelledby, whose own references are then not followed); skip is
	// an element to leave out (the control a label names).
	const contentName = (node, force, skip) => {
		if (nameRead) return contentParts(node, force, skip); // a part of the name being computed
		nameRead = 1;
		try {
			return contentParts(node, force, skip);
		} finally {
			nameRead = 0;
		}
	};
	// Cached (a cell's name reads its link's, which is named too), with
	// the objects it read, where no cut fell inside it.
	const contentNames = new Map();
	const contentParts = (node, force, skip) => {
		const cache = !force && !skip, start = nameRead, cuts = nameCuts;
		if (cache) {
			const known = contentNames.get(node);
			if (known !== undefined && start + known.read <= nameBudget) {
				nameRead += known.read;
				return known.text;
			}
		}
		const j = {text: "", boxed: false, named: false}, q = {depth: 0};
		const gen = node.nodeType === 1 ? mayGenerate(node) : 0;
		if (gen & 1) generatedInto(j, node, "::before", q);
		const src = childSource(node), list = Array.isArray(src);
		const summary = node.nodeType === 1 && node.localName === "details" && !node.open ? summaryOf(node) || node : null;
		for (let i = 0, child = list ? src[0] : src.firstChild; child; child = list ? src[++i] : child.nextSibling) {
			if (summary && child !== summary) continue; // a closed <details>: only its summary renders
			if (nameRead > nameBudget) { nameCuts++; break; }
			const type = child.nodeType;
			if (type === 3) {
				const data = child.data;
				// White space renders between inline content only.
				if (/[^ \t\n\r\f]/.test(data) || j.text && !j.boxed && child.nextSibling) nameRead++;
				join(j, data, false, false);
				continue;
			}
			if (type !== 1 || child === skip) continue;
			const tag = child.localName;
			if (tag === "script" || tag === "style" || tag === "template" || tag === "noscript") continue;
			const attrs = child.hasAttributes();
			const style = styleOf(child);
			if (!force && (style.display === "none" || style.visibility !== "visible" || attrs && (child.getAttribute("aria-hidden") === "true" || child.inert))) continue;
			const d = style.display;
			if (d !== "inline" || !plainInline.has(tag) || attrs && child.hasAttribute("role")) nameRead++;
			if (tag === "br") { join(j, "\n", false, false); continue; }
			const boxed = d !== "inline" || replaced.has(tag);
			if (attrs && !force && child.hasAttribute("aria-labelledby")) {
				const by = textOfIds(child, "aria-labelledby");
				if (by) { join(j, by, boxed, true); continue; }
			}
			const label = attr(child, attrs, "aria-label");
			if (label && label.trim()) { join(j, label, boxed, true); continue; }
			const role = roleOf(child, tag, attrs, "", true);
			const embedded = embeddedName(child, tag, attrs, role);
			if (embedded !== undefined) { join(j, embedded, boxed, true); continue; }
			if (role && skippedInNameRoles.has(role)) { join(j, "", boxed, false); continue; }
			const part = contentParts(child, force, skip);
			// A title names an element with no content (an icon link)
			// where its role takes a name.
			if (!part.trim() && attrs && role && !nameProhibitedRoles.has(role) && child.hasAttribute("title")) join(j, child.getAttribute("title"), boxed, true);
			else join(j, part, boxed, false);
		}
		if (gen & 2 && nameRead <= nameBudget) generatedInto(j, node, "::after", q);
		if (cache && nameCuts === cuts) contentNames.set(node, {text: j.text, read: nameRead - start});
		return j.text;
	};

	const textOfIds = (el, name) => {
		const ids = (el.getAttribute(name) || "").trim().split(/\s+/).filter(Boolean);
		const root = el.getRootNode();
		const parts = [];
		for (const id of ids) {
			const t = (root.getElementById ? root.getElementById(id) : null) || el.ownerDocument.getElementById(id);
			if (!t) continue;
			const label = t.getAttribute("aria-label");
			const attrs = t.hasAttributes();
			const part = label && label.trim() ? label : (embeddedName(t, t.localName, attrs, roleOf(t, t.localName, attrs, "", true)) ?? contentName(t, true, null));
			if (part) parts.push(part);
		}
		return norm(parts.join(" "));
	};

	const labelsText = (el) => {
		const labels = el.labels;
		if (!labels || !labels.length) return "";
		const parts = [];
		for (const l of labels) {
			const t = norm(contentName(l, false, el));
			if (t) parts.push(t);
		}
		return parts.join(" ");
	};

	// nativelyNamed: elements named by something other than their own
	// attributes.
	const nativelyNamed = new Set(["input", "textarea", "select", "meter", "progress", "output", "fieldset", "table", "figure", "svg"]);

	// nativeName: the name from aria-labelledby, aria-label or the host
	// language (labels, legends, captions, alt text); the name from
	// content and the title come after it.
	const nativeName = (el, tag, attrs) => {
		let name = "";
		if (!attrs && !nativelyNamed.has(tag)) return "";
		if (attrs && el.hasAttribute("aria-labelledby")) name = textOfIds(el, "aria-labelledby");
		if (!name) {
			const label = attr(el, attrs, "aria-label");
			if (label) name = norm(label);
		}
		if (name) return name;
		switch (tag) {
		case "input": case "textarea": case "select": case "meter": case "progress": case "output": {
			const type = tag === "input" ? inputType(el) : "";
			if (type === "submit" || type === "reset" || type === "button") {
				name = el.hasAttribute("value") ? el.value : type === "submit" ? "Submit" : type === "reset" ? "Reset" : "";
			} else if (type === "image") {
				name = el.getAttribute("alt") || el.getAttribute("value") || "Submit";
			} else {
				name = labelsText(el);
				if (!name && attrs && el.hasAttribute("title")) name = el.getAttribute("title");
				if (!name && attrs && el.hasAttribute("placeholder")) name = el.getAttribute("placeholder");
			}
			break;
		}
		case "img": case "area":
			name = el.getAttribute("alt") || "";
			break;
		case "fieldset": case "table": case "figure": {
			const cap = firstChild(el, tag === "fieldset" ? "legend" : tag === "table" ? "caption" : "figcaption");
			if (cap) name = contentName(cap, false, null);
			break;
		}
		case "optgroup":
			name = el.getAttribute("label") || "";
			break;
		case "svg": {
			const t = el.querySelector(":scope > title");
			if (t) name = t.textContent;
			break;
		}
		case "iframe":
			name = el.getAttribute("title") || "";
			break;
		}
		return norm(name);
	};

	// labels: whether a labelling element (label, legend, caption,
	// figcaption) names an element that is shown; its text is then left
	// out of the tree, as that element's name says it.
	const labels = (el, tag) => {
		let owner = null;
		const parent = el.parentElement;
		switch (tag) {
		case "label":
			owner = el.control;
			break;
		case "legend":
			owner = parent && parent.localName === "fieldset" && firstChild(parent, "legend") === el ? parent : null;
			break;
		case "caption":
			owner = parent && parent.localName === "table" && firstChild(parent, "caption") === el ? parent : null;
			break;
		case "figcaption":
			owner = parent && parent.localName === "figure" && firstChild(parent, "figcaption") === el ? parent : null;
			break;
		}
		if (!owner || owner.hasAttribute("aria-label") || owner.hasAttribute("aria-labelledby")) return false;
		if (tag !== "label") return true;
		if (owner.getAttribute("aria-hidden") === "true") return false;
		return owner.checkVisibility ? owner.checkVisibility({visibilityProperty: true}) : owner.getClientRects().length > 0;
	};

	// Interactivity.

	const clickable = (el, tag, attrs, style) => {
		if (attrs && el.hasAttribute("onclick")) return true;
		if (tag === "label" || tag === "body" || tag === "html") return false;
		if (style.cursor === "pointer") {
			const p = el.parentElement;
			return !p || styleOf(p).cursor !== "pointer";
		}
		return false;
	};

	// editableRoot: the root of a contenteditable region (its descendants
	// are editable too, but one ref types into all of it).
	const editableRoot = (el, attrs) => attrs && el.hasAttribute("contenteditable") && el.isContentEditable &&
		!(el.parentElement && el.parentElement.isContentEditable);

	const isInteractive = (el, tag, attrs, role, style) => {
		if (role && interactiveRoles.has(role)) return true;
		if (attrs) {
			if (editableRoot(el, attrs)) return true;
			const ti = el.getAttribute("tabindex");
			if (ti !== null && +ti >= 0) return true;
		}
		return clickable(el, tag, attrs, style);
	};

	const focused = (() => {
		let a = document.activeElement;
		for (;;) {
			if (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
			else if (a && a.localName === "iframe") {
				let d = null;
				try { d = a.contentDocument; } catch (e) { /* cross-origin */ }
				if (!d || !d.activeElement || d.activeElement === d.body) break;
				a = d.activeElement;
			} else break;
		}
		return a;
	})();

	const formTags = new Set(["button", "input", "select", "textarea", "option", "optgroup", "fieldset"]);

	const states = (el, tag, attrs, role, node) => {
		if (role === "checkbox" || role === "radio" || role === "switch" || role === "menuitemcheckbox" || role === "menuitemradio") {
			if (tag === "input" && (el.type === "checkbox" || el.type === "radio")) node.checked = el.indeterminate ? "mixed" : el.checked;
			else {
				const c = attr(el, attrs, "aria-checked");
				node.checked = c === "mixed" ? "mixed" : c === "true";
			}
		}
		if (attrs) {
			if (el.getAttribute("aria-disabled") === "true") node.disabled = true;
			const expanded = el.getAttribute("aria-expanded");
			if (expanded !== null) node.expanded = expanded === "true";
			const selected = el.getAttribute("aria-selected");
			if (selected !== null && tag !== "option") node.selected = selected === "true";
			const pressed = el.getAttribute("aria-pressed");
			if (pressed !== null) node.pressed = pressed === "mixed" ? "mixed" : pressed === "true";
			if (el.getAttribute("aria-required") === "true") node.required = true;
		}
		if (formTags.has(tag)) {
			if (el.matches(":disabled")) node.disabled = true;
			if (el.required === true) node.required = true;
		}
		if (tag === "summary" && role === "button" && node.expanded === undefined) node.expanded = el.parentElement.open;
		if (tag === "option") node.selected = el.selected;
		if (el === focused) node.focused = true;
		// Editable content that no role calls a text field (an editor's
		// root, which carries the attribute): say it takes text.
		if (attrs && role !== "textbox" && role !== "searchbox" && el.hasAttribute("contenteditable") && el.isContentEditable &&
			!(el.parentElement && el.parentElement.isContentEditable)) node.editable = true;
		if (role === "heading") {
			const lvl = +attr(el, attrs, "aria-level");
			node.level = lvl >= 1 ? Math.floor(lvl) : /^h[1-6]$/.test(tag) ? +tag[1] : 2;
		}
		if (tag === "input" || tag === "textarea") {
			const type = tag === "input" ? inputType(el) : "";
			if (type !== "checkbox" && type !== "radio" && type !== "submit" && type !== "button" && type !== "reset" && type !== "image" && type !== "file") {
				node.value = type === "password" ? (el.value ? "••••" : "") : el.value;
			}
		} else if (tag === "select" && role === "combobox") {
			node.value = el.selectedOptions[0] ? norm(el.selectedOptions[0].text) : "";
		} else if (role === "slider" || role === "spinbutton" || role === "progressbar" || role === "meter" || role === "scrollbar") {
			const v = rangeValue(el, attrs);
			if (v !== "") node.value = v;
		}
	};

	const locators = (el, tag, node) => {
		let a = null;
		if (el.id) (a = a || {}).id = el.id;
		const label = el.getAttribute("aria-label");
		if (label !== null) (a = a || {}).ariaLabel = label;
		const testid = el.getAttribute("data-testid");
		if (testid !== null) (a = a || {}).testId = testid;
		const name = el.getAttribute("name");
		if (name !== null) (a = a || {}).name = name;
		if (tag === "a") {
			const href = el.getAttribute("href");
			if (href !== null) (a = a || {}).href = href;
		}
		if (a) node.attrs = a;
	};

	// Visibility.

	// The modal dialog, if one is open: everything else is inert.
	let modal = null;
	try { modal = document.querySelector(":modal"); } catch (e) { /* no :modal */ }

	// Text merging: adjacent inline text becomes one text node. lastText is
	// the text node the next text may extend (null after anything else),
	// lastOut the list it is in, lastSpace whether the text so far ended
	// with white space.
	let lastText = null, lastOut = null, lastSpace = false;

	const pushText = (out, data) => {
		const n = data.length;
		let i = 0, j = n;
		while (i < n && isSpace(data.charCodeAt(i))) i++;
		if (i === n) { if (n) lastSpace = true; return; }
		while (j > i && isSpace(data.charCodeAt(j - 1))) j--;
		const t = norm(i > 0 || j < n ? data.slice(i, j) : data);
		if (lastText && lastOut === out) {
			lastText.name += (lastSpace || i > 0 ? " " : "") + t;
		} else {
			const node = {role: "text", name: t};
			if (!push(out, node)) return;
			lastText = node;
			lastOut = out;
		}
		lastSpace = j < n;
	};
	const brk = () => { lastText = null; };

	const push = (out, node) => {
		if (count >= maxNodes) { truncated = true; return false; }
		count++;
		out.push(node);
		return true;
	};

	// onlyText: children that say nothing a name from content does not.
	const onlyText = (list) => {
		for (const n of list) {
			if (n.ref || (n.role !== "text" && n.role !== "img" && n.role !== "generic" && n.role !== "paragraph")) return false;
			if (n.children && !onlyText(n.children)) return false;
		}
		return true;
	};
	// offPage (offPageJS, defined where this function is installed) tells
	// an interactive element no scrolling reaches: a closed off-canvas menu.
	const offPage = offPageChecker(styleOf);

	// Context of the walk, a new object only where it changes: the kind of
	// table we are in, whether we are inside sectioning content, inside the
	// modal dialog, inside a labelling element whose text is left out.
	const rootCtx = {table: "", scoped: false, inModal: !modal, dropText: false};
	const derive = (ctx, k, v) => {
		if (ctx[k] === v) return ctx;
		const c = {table: ctx.table, scoped: ctx.scoped, inModal: ctx.inModal, dropText: ctx.dropText};
		c[k] = v;
		return c;
	};

	// walkKids walks the children that render of el.
	const walkKids = (el, depth, out, ctx, visible) => {
		const src = childSource(el);
		if (Array.isArray(src)) {
			for (let i = 0; i < src.length; i++) walk(src[i], depth, out, ctx, visible);
			return;
		}
		const summary = el.localName === "details" && !el.open ? summaryOf(el) || el : null;
		for (let c = src.firstChild; c; c = c.nextSibling) {
			if (summary && c !== summary) continue; // a closed <details>: only its summary renders
			walk(c, depth, out, ctx, visible);
		}
	};

	// walk adds the snapshot nodes of a DOM node to out: one node, or the
	// children of a node that is left out but whose content is kept.
	// visible says whether the parent's visibility is visible (text
	// inherits it).
	const walk = (dom, depth, out, ctx, visible) => {
		if (truncated) return;
		const type = dom.nodeType;
		if (type === 3) {
			if (visible && !ctx.dropText) pushText(out, dom.data);
			return;
		}
		if (type === 11) {
			for (let c = dom.firstChild; c; c = c.nextSibling) walk(c, depth, out, ctx, visible);
			return;
		}
		if (type !== 1) return;
		const el = dom;
		const tag = el.localName;
		switch (tag) {
		case "script": case "style": case "noscript": case "template": case "head": case "title": case "meta": case "link": case "datalist": case "desc":
			return;
		case "br":
			brk();
			return;
		}
		if (!ctx.inModal) {
			if (el === modal) ctx = derive(ctx, "inModal", true);
			else if (!el.contains(modal) && !(el.shadowRoot && el.shadowRoot.contains(modal))) return; // inert behind the modal
		}
		const attrs = el.hasAttributes();
		if (attrs && (el.getAttribute("aria-hidden") === "true" || el.inert)) return;
		const style = styleOf(el);
		const display = style.display;
		if (display === "none") return;
		if (display === "contents") {
			walkKids(el, depth, out, ctx, visible);
			return;
		}
		const shown = style.visibility === "visible";
		let role = roleOf(el, tag, attrs, ctx.table, ctx.scoped);
		const interactive = shown && isInteractive(el, tag, attrs, role, style);
		// Zero size: a box with no width or no height that clips its
		// overflow hides its content; a replaced element (a control, an
		// image, an iframe) or an empty element with neither is not seen
		// either. A control stays if a label makes it usable. Content that
		// overflows a zero-size box that does not clip it (floats in an
		// inline link) is seen. Measured only where it can matter: boxes
		// are rarely empty, and measuring is a good part of the cost.
		// (An inline element with content is never left out for its size,
		// so it is not measured: most links are.)
		if (tag !== "option" && tag !== "optgroup" && tag !== "body" &&
			!(display === "inline" && el.firstChild && !replaced.has(tag)) &&
			(interactive || role === "img" || tag === "iframe" || display !== "inline" && el.firstChild && style.overflow !== "visible")) {
			let w = el.offsetWidth, h;
			if (w === undefined) { // SVG, MathML
				const r = el.getBoundingClientRect();
				w = r.width;
				h = r.height;
			} else h = el.offsetHeight;
			if ((w === 0 || h === 0) &&
				(display !== "inline" && style.overflow !== "visible" || w === 0 && h === 0 && (replaced.has(tag) || !el.firstChild)) &&
				!(interactive && el.labels && el.labels.length)) return;
		}
		// The context for the children.
		let kctx = ctx;
		switch (tag) {
		case "table":
			kctx = derive(kctx, "table", role === "table" ? "table" : role === "grid" || role === "treegrid" ? "grid" : "layout");
			break;
		case "article": case "aside": case "main": case "nav": case "section":
			kctx = derive(kctx, "scoped", true);
			break;
		case "label": case "legend": case "caption": case "figcaption":
			if (!interactive && labels(el, tag)) {
				kctx = derive(kctx, "dropText", true);
				role = null;
			}
			break;
		}
		if (role && !kctx.scoped && scopingRoles.has(role)) kctx = derive(kctx, "scoped", true);

		// Left out, content kept: invisible elements (a child may be
		// visible), presentational and generic wrappers, table row groups.
		if (!shown || !interactive && (!role || role === "presentation" || role === "generic" && !(attrs && hasOwnName(el)) ||
			role === "rowgroup" && tag !== "div" && tag !== "span")) {
			if (role === "presentation" && (tag === "img" || tag === "svg")) return; // decorative
			if (style.contentVisibility === "hidden") return;
			const inline = display === "inline";
			if (!inline) brk();
			walkKids(el, depth, out, kctx, shown);
			if (!inline) brk();
			return;
		}
		brk();
		const node = {role: role || "generic"};
		// The name: the whole of it, also when the content holds links
		// (a heading "Types — int, float" with two links).
		let name = nativeName(el, tag, attrs), fromContent = false;
		if (!name && role && nameFromContentRoles.has(role)) {
			name = norm(contentName(el, false, null));
			fromContent = !!name;
		}
		if (!name && attrs && el.hasAttribute("title")) name = norm(el.getAttribute("title"));
		if (name) node.name = name;
		if (interactive) {
			node.ref = refOf(el);
			const off = offPage(el);
			if (off) node.offpage = off.side;
		}
		states(el, tag, attrs, role, node);
		if (interactive && attrs) locators(el, tag, node);
		if (!push(out, node)) return;
		if (interactive) interactiveCount++;
		const leaf = depth + 1 >= maxDepth || tag === "input" || tag === "textarea" || tag === "img" || tag === "svg" ||
			leafRoles.has(role) || tag === "select" && role !== "listbox";
		const kids = [];
		const walked = !leaf && style.contentVisibility !== "hidden";
		if (walked) {
			walkKids(el, depth + 1, kids, kctx, true);
			brk();
		}
		// A heading or cell that holds nothing but one link (or control)
		// of the same name says it once, on the link: nothing is lost.
		if (fromContent && !interactive && kids.length === 1 && kids[0].ref && kids[0].name === name) {
			node.name = "";
			fromContent = false;
		}
		if (!kids.length) {
			// An empty container says nothing (an empty paragraph, a
			// group whose content is hidden).
			if (walked && !truncated && !interactive && droppedWhenEmpty.has(role) && Object.keys(node).length === 1 && out[out.length - 1] === node) {
				out.pop();
				count--;
			}
			return;
		}
		// A name made of the content says that content once.
		if (fromContent && onlyText(kids)) return;
		node.children = kids;
	};

	let rootEl = document.body || document.documentElement;
	if (selector) {
		if (/^e\d+$/.test(selector)) {
			const w = reg.byRef.get(selector);
			rootEl = w && w.deref();
			if (!rootEl || !rootEl.isConnected || !rootEl.ownerDocument.defaultView) return {error: "staleref"};
		} else {
			try { rootEl = document.querySelector(selector); } catch (e) { return {error: "invalid", reason: "" + e.message}; }
			if (!rootEl) return {error: "notfound"};
		}
	}
	const nodes = [];
	if (!rootEl) { /* an empty document */ }
	else if (selector) walk(rootEl, 0, nodes, rootCtx, true);
	else walkKids(rootEl, 0, nodes, rootCtx, true);

	let result = nodes;
	if (opts.interactiveOnly) {
		// Keep interactive nodes and headings; the rest gives its place
		// to what it holds of them.
		const keep = (list) => {
			const res = [];
			for (const n of list) {
				const kids = n.children ? keep(n.children) : [];
				if (n.ref || n.role === "heading") { if (kids.length) n.children = kids; else delete n.children; res.push(n); }
				else res.push(...kids);
			}
			return res;
		};
		result = keep(nodes);
	}
	// The answer: a JSON line with the snapshot's fields and a newline,
	// then one line per node in document order, separated by ~ (see
	// parseSnapshotWire in snapshot.go): depth | role, then |-separated fields, each a key letter and its
	// value: n name, r ref, l level, c checked, p pressed (1, 0 or m for
	// mixed), e expanded, s selected (1 or 0), d disabled, q required,
	// f focused, x editable, o off the page (the side), v value, and the locators i id, a aria-label, t test id,
	// m name attribute, h href. In values a backslash is \\, | is \p and
	// ~ is \w. Much smaller than the same
	// tree in JSON, so it crosses the protocol and is decoded in a fraction
	// of the time; the separators are printable so that the protocol's
	// JSON carries them as one byte, not as \t and \n escapes.
	const special = /[\\|~]/;
	const esc = (v) => special.test(v) ? v.replace(/[\\|~]/g, (c) => c === "\\" ? "\\\\" : c === "|" ? "\\p" : "\\w") : v;
	const tri = (v) => v === "mixed" ? "m" : v ? "1" : "0";
	const lines = [JSON.stringify({title: document.title, url: location.href, interactive: interactiveCount, count, truncated, nextRef: reg.next})];
	const emit = (list, depth) => {
		for (const n of list) {
			let l = depth + "|" + n.role;
			if (n.name) l += "|n" + esc(n.name);
			if (n.ref) l += "|r" + n.ref;
			if (n.level) l += "|l" + n.level;
			if (n.checked !== undefined) l += "|c" + tri(n.checked);
			if (n.pressed !== undefined) l += "|p" + tri(n.pressed);
			if (n.expanded !== undefined) l += "|e" + tri(n.expanded);
			if (n.selected !== undefined) l += "|s" + tri(n.selected);
			if (n.disabled) l += "|d";
			if (n.required) l += "|q";
			if (n.focused) l += "|f";
			if (n.editable) l += "|x";
			if (n.offpage) l += "|o" + n.offpage;
			if (n.value !== undefined) l += "|v" + esc(n.value);
			const a = n.attrs;
			if (a) {
				if (a.id !== undefined) l += "|i" + esc(a.id);
				if (a.ariaLabel !== undefined) l += "|a" + esc(a.ariaLabel);
				if (a.testId !== undefined) l += "|t" + esc(a.testId);
				if (a.name !== undefined) l += "|m" + esc(a.name);
				if (a.href !== undefined) l += "|h" + esc(a.href);
			}
			lines.push(l);
			if (n.children) emit(n.children, depth + 1);
		}
	};
	emit(result, 0);
	const wire = lines[0] + "\n" + lines.slice(1).join("~");
	// Too large to return: the head still says which refs were given out.
	if (opts.maxBytes > 0 && wire.length > opts.maxBytes) return {error: "toolarge", reason: "the snapshot", size: wire.length, limit: opts.maxBytes, head: lines[0]};
	return {wire};
}
