// The accessibility snapshot, computed in the page in one pass over the
// DOM (light and open shadow trees, same-origin iframes). It is called with
// Runtime.callFunctionOn on the document, with the subtree's selector and
// the options as its arguments, and answers
// {json: JSON of {title, url, nodes, interactive, count, truncated}} by
// value (one string travels much faster than a deep object), or {error}.
//
// Roles follow HTML-AAM's implicit mappings (an explicit role attribute
// wins), names follow the accessible name computation the way Chromium does
// it (aria-labelledby, aria-label, native label, content, title; in a name
// from content, inline parts are joined as they render, block parts and
// embedded names with a space, and landmarks, groups, tables and other
// containers are left out). Testdata fixtures check both against
// Chromium's own tree (snapshot_fidelity_test.go).
//
// Left out, with their subtree: display:none, aria-hidden=true, inert (and
// everything outside an open modal dialog), content-visibility:hidden
// content, the content of a closed <details> but its summary, zero-size
// boxes that clip their content, and zero-size controls (unless a label
// makes them usable). visibility:hidden leaves the element out but not a
// descendant that sets visibility:visible again. Shown: content that is
// only off-screen, visually hidden (the 1px clip pattern) or transparent
// (opacity:0; Chromium keeps it, and pages put transparent native controls
// over custom drawings). Decoration is left out too: presentational
// images, images without alt inside named content, and generic wrappers,
// whose children take their place.
//
// The tree is compacted: adjacent inline text is one text node; phrasing
// markup (strong, em, code, ...) is text; the text of a label, legend,
// caption or figcaption that names a shown element is left out (it is
// that element's name); a node whose name comes from its content and
// whose children add nothing but that text (and images) has no children;
// a non-interactive node whose children hold refs (a cell, a heading with
// a link) has no name, its children say it; rows have no name from
// content; table row groups (thead, tbody, tfoot) are left out.
//
// Refs: every interactive element gets a ref (e1, e2, ...) kept in a
// per-document registry, so the same element keeps its ref across
// snapshots and an action can find it again, or learn that it is gone.
function (selector, opts) {
	"use strict";
	const reg = window.__framebusRefs || (() => {
		const r = {next: 1, byRef: new Map(), byEl: new WeakMap()};
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

	const norm = (s) => (s || "").replace(/\s+/g, " ").trim();
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

	// Roles.

	const validRoles = new Set(("alert alertdialog application article banner blockquote button caption cell checkbox code columnheader combobox complementary contentinfo definition deletion dialog directory document emphasis feed figure form generic grid gridcell group heading img insertion link list listbox listitem log main marquee math menu menubar menuitem menuitemcheckbox menuitemradio meter navigation none note option paragraph presentation progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox separator slider spinbutton status strong subscript superscript switch tab table tablist tabpanel term textbox time timer toolbar tooltip tree treegrid treeitem").split(" "));

	const inputRole = (el) => {
		const t = (el.getAttribute("type") || "text").toLowerCase();
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
		for (const c of row.children) if (c.localName !== "th") return "rowheader";
		return "columnheader";
	};

	// implicitRole: HTML-AAM. table is the kind of table an element is in
	// ("table", "grid", "layout" or ""), scoped whether a header or footer
	// is inside sectioning content (then it is no landmark).
	const implicitRole = (el, tag, table, scoped) => {
		switch (tag) {
		case "a": case "area": return el.hasAttribute("href") ? "link" : null;
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
		case "form": return hasOwnName(el) ? "form" : null;
		case "section": return hasOwnName(el) ? "region" : null;
		case "article": return "article";
		case "table": return "table";
		case "caption": return table === "layout" ? null : "caption";
		case "tr": return table === "layout" ? null : "row";
		case "td": return table === "layout" ? null : table === "grid" ? "gridcell" : "cell";
		case "th": return table === "layout" ? null : thRole(el);
		case "img": return el.getAttribute("alt") === "" && !el.hasAttribute("title") ? "presentation" : "img";
		case "svg": return el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby") || el.querySelector(":scope > title") ? "img" : null;
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

	const roleOf = (el, tag, table, scoped) => {
		const explicit = el.getAttribute("role");
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
		return implicitRole(el, tag, table, scoped);
	};

	const interactiveRoles = new Set(["button", "link", "checkbox", "radio", "textbox", "searchbox", "combobox", "listbox", "option", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider", "spinbutton", "treeitem", "gridcell"]);
	const nameFromContentRoles = new Set(["button", "cell", "checkbox", "columnheader", "gridcell", "heading", "link", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "radio", "row", "rowheader", "switch", "tab", "tooltip", "treeitem", "caption", "term"]);
	// Roles whose content a name from content leaves out (as Chromium
	// does): landmarks, containers, composite widgets.
	const skippedInNameRoles = new Set(["alert", "alertdialog", "application", "article", "banner", "blockquote", "complementary", "contentinfo", "dialog", "document", "feed", "figure", "grid", "group", "listbox", "log", "main", "marquee", "menu", "menubar", "navigation", "note", "radiogroup", "region", "row", "rowgroup", "search", "separator", "status", "table", "tablist", "tabpanel", "timer", "toolbar", "tree", "treegrid", "form", "scrollbar", "progressbar", "meter", "slider", "spinbutton", "combobox", "img"]);
	// Roles whose children are presentational: leaves in the snapshot.
	const leafRoles = new Set(["img", "progressbar", "meter", "slider", "separator", "scrollbar"]);

	// Visibility.

	// gone: the element and its subtree are left out.
	const gone = (el, style) => el.getAttribute("aria-hidden") === "true" || el.inert ||
		style.display === "none";

	const textboxValue = (el, tag) => {
		if (tag === "input" || tag === "textarea") return el.value;
		return el.textContent;
	};

	const rangeValue = (el) => {
		const vt = el.getAttribute("aria-valuetext");
		if (vt) return vt;
		const v = el.getAttribute("aria-valuenow");
		if (v !== null) return v;
		return el.value !== undefined && el.value !== null ? "" + el.value : "";
	};

	// closedDetailsContent: a child of a closed <details> other than its
	// summary, which does not render.
	const closedDetailsContent = (parent, child) => parent.localName === "details" && !parent.open && parent.nodeType === 1 &&
		!(child.localName === "summary" && parent.querySelector(":scope > summary") === child);

	// Names.

	// embeddedName: what an element contributes to a name from content
	// when it is a control or an image, or undefined when its content
	// counts instead.
	const embeddedName = (el, tag, role) => {
		if (tag === "img" || (tag === "input" && (el.getAttribute("type") || "").toLowerCase() === "image")) return el.getAttribute("alt") || "";
		if (tag === "input") {
			const t = (el.getAttribute("type") || "text").toLowerCase();
			if (t === "checkbox" || t === "radio" || t === "hidden") return "";
			if (t === "submit" || t === "reset" || t === "button") return el.hasAttribute("value") ? el.value : t === "submit" ? "Submit" : t === "reset" ? "Reset" : "";
			return el.value;
		}
		if (tag === "textarea") return el.value;
		if (tag === "select") return Array.from(el.selectedOptions, (o) => o.text).join(" ");
		switch (role) {
		case "textbox": case "searchbox": return textboxValue(el, tag);
		case "combobox": return "";
		case "slider": case "spinbutton": case "progressbar": case "meter": case "scrollbar": return rangeValue(el);
		}
		return undefined;
	};

	// contentName: the text of a subtree for a name from content. force
	// includes hidden content (a hidden element named by aria-labelledby).
	// skip is an element to leave out (the control a label names).
	const contentName = (node, force, skip, seen) => {
		if (seen.has(node)) return "";
		seen.add(node);
		let out = "";
		for (const child of childNodesOf(node)) {
			if (child.nodeType === 3) { out += child.data; continue; }
			if (child.nodeType !== 1 || child === skip) continue;
			if (node.nodeType === 1 && closedDetailsContent(node, child)) continue;
			const tag = child.localName;
			if (tag === "script" || tag === "style" || tag === "template" || tag === "noscript") continue;
			const style = styleOf(child);
			if (!force && (style.display === "none" || child.getAttribute("aria-hidden") === "true" || child.inert || style.visibility !== "visible")) continue;
			if (tag === "br") { out += " "; continue; }
			const label = child.getAttribute("aria-label");
			if (label && label.trim()) { out += " " + label + " "; continue; }
			const role = roleOf(child, tag, "", true);
			const embedded = embeddedName(child, tag, role);
			if (embedded !== undefined) { out += " " + embedded + " "; continue; }
			if (role && skippedInNameRoles.has(role)) continue;
			const part = contentName(child, force, skip, seen);
			const d = style.display;
			out += d === "inline" || d === "contents" ? part : " " + part + " ";
		}
		return node.nodeType === 1 ? norm(out) : out;
	};

	const textOfIds = (el, attr) => {
		const ids = (el.getAttribute(attr) || "").trim().split(/\s+/).filter(Boolean);
		const root = el.getRootNode();
		const parts = [];
		for (const id of ids) {
			const t = (root.getElementById ? root.getElementById(id) : null) || el.ownerDocument.getElementById(id);
			if (!t) continue;
			const label = t.getAttribute("aria-label");
			const part = label && label.trim() ? label : (embeddedName(t, t.localName, roleOf(t, t.localName, "", true)) ?? contentName(t, true, null, new Set()));
			if (part) parts.push(part);
		}
		return norm(parts.join(" "));
	};

	const labelsText = (el) => {
		const labels = el.labels;
		if (!labels || !labels.length) return "";
		const parts = [];
		for (const l of labels) {
			const t = contentName(l, false, el, new Set());
			if (t) parts.push(t);
		}
		return parts.join(" ");
	};

	const firstChild = (el, tag) => {
		for (const c of el.children) if (c.localName === tag) return c;
		return null;
	};

	// accessibleName answers [name, fromContent].
	const accessibleName = (el, tag, role) => {
		let name = "";
		if (el.hasAttribute("aria-labelledby")) name = textOfIds(el, "aria-labelledby");
		if (!name) {
			const label = el.getAttribute("aria-label");
			if (label) name = norm(label);
		}
		if (!name) {
			switch (tag) {
			case "input": case "textarea": case "select": case "meter": case "progress": case "output": {
				const type = tag === "input" ? (el.getAttribute("type") || "").toLowerCase() : "";
				if (type === "submit" || type === "reset" || type === "button") {
					name = el.hasAttribute("value") ? el.value : type === "submit" ? "Submit" : type === "reset" ? "Reset" : "";
				} else if (type === "image") {
					name = el.getAttribute("alt") || el.getAttribute("value") || "Submit";
				} else {
					name = labelsText(el);
					if (!name && el.hasAttribute("title")) name = el.getAttribute("title");
					if (!name && el.hasAttribute("placeholder")) name = el.getAttribute("placeholder");
				}
				break;
			}
			case "img": case "area":
				name = el.getAttribute("alt") || "";
				break;
			case "fieldset": {
				const legend = firstChild(el, "legend");
				if (legend) name = contentName(legend, false, null, new Set());
				break;
			}
			case "table": {
				const cap = firstChild(el, "caption");
				if (cap) name = contentName(cap, false, null, new Set());
				break;
			}
			case "figure": {
				const cap = firstChild(el, "figcaption");
				if (cap) name = contentName(cap, false, null, new Set());
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
		}
		let fromContent = false;
		if (!name && role && role !== "row" && nameFromContentRoles.has(role)) {
			name = contentName(el, false, null, new Set());
			fromContent = !!name;
		}
		if (!name && el.hasAttribute("title")) name = el.getAttribute("title");
		return [norm(name), fromContent];
	};

	// names: the element whose text a labelling child (label, legend,
	// caption, figcaption) gives as its name, if it is shown; the child's
	// text is then left out of the tree.
	const names = (el, tag) => {
		let owner = null;
		switch (tag) {
		case "label":
			owner = el.control;
			break;
		case "legend":
			owner = el.parentElement && el.parentElement.localName === "fieldset" && firstChild(el.parentElement, "legend") === el ? el.parentElement : null;
			break;
		case "caption":
			owner = el.parentElement && el.parentElement.localName === "table" && firstChild(el.parentElement, "caption") === el ? el.parentElement : null;
			break;
		case "figcaption":
			owner = el.parentElement && el.parentElement.localName === "figure" && firstChild(el.parentElement, "figcaption") === el ? el.parentElement : null;
			break;
		}
		if (!owner || owner.hasAttribute("aria-label") || owner.hasAttribute("aria-labelledby")) return false;
		if (tag !== "label") return true;
		if (owner.getAttribute("aria-hidden") === "true") return false;
		return owner.checkVisibility ? owner.checkVisibility({visibilityProperty: true}) : owner.getClientRects().length > 0;
	};

	// Interactivity.

	const clickable = (el, tag, style) => {
		if (el.hasAttribute("onclick") || typeof el.onclick === "function") return true;
		if (tag === "label" || tag === "body" || tag === "html") return false;
		if (style.cursor === "pointer") {
			const p = el.parentElement;
			return !p || styleOf(p).cursor !== "pointer";
		}
		return false;
	};

	const isInteractive = (el, tag, role, style) => {
		if (role && interactiveRoles.has(role)) return true;
		if (el.isContentEditable && (!el.parentElement || !el.parentElement.isContentEditable)) return true;
		const ti = el.getAttribute("tabindex");
		if (ti !== null && +ti >= 0) return true;
		return clickable(el, tag, style);
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

	const states = (el, tag, role, node) => {
		const aria = (n) => el.getAttribute("aria-" + n);
		if (role === "checkbox" || role === "radio" || role === "switch" || role === "menuitemcheckbox" || role === "menuitemradio") {
			if (tag === "input" && (el.type === "checkbox" || el.type === "radio")) node.checked = el.indeterminate ? "mixed" : el.checked;
			else {
				const c = aria("checked");
				node.checked = c === "mixed" ? "mixed" : c === "true";
			}
		}
		if (aria("disabled") === "true" || (formTags.has(tag) && el.matches(":disabled"))) node.disabled = true;
		const expanded = aria("expanded");
		if (expanded !== null) node.expanded = expanded === "true";
		else if (tag === "summary" && role === "button") node.expanded = el.parentElement.open;
		if (tag === "option") node.selected = el.selected;
		else {
			const s = aria("selected");
			if (s !== null) node.selected = s === "true";
		}
		const pressed = aria("pressed");
		if (pressed !== null) node.pressed = pressed === "mixed" ? "mixed" : pressed === "true";
		if (el.required === true || aria("required") === "true") node.required = true;
		if (el === focused) node.focused = true;
		if (role === "heading") {
			const lvl = +aria("level");
			node.level = lvl >= 1 ? Math.floor(lvl) : /^h[1-6]$/.test(tag) ? +tag[1] : 2;
		}
		if (tag === "input" || tag === "textarea") {
			const type = (el.getAttribute("type") || "").toLowerCase();
			if (type !== "checkbox" && type !== "radio" && type !== "submit" && type !== "button" && type !== "reset" && type !== "image" && type !== "file") {
				node.value = type === "password" ? (el.value ? "••••" : "") : el.value;
			}
		} else if (tag === "select" && role === "combobox") {
			node.value = el.selectedOptions[0] ? norm(el.selectedOptions[0].text) : "";
		} else if (role === "slider" || role === "spinbutton" || role === "progressbar" || role === "meter" || role === "scrollbar") {
			const v = rangeValue(el);
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

	// childNodesOf: the children that render: a shadow host's shadow tree,
	// a slot's assigned nodes, an iframe's document body (same origin).
	const childNodesOf = (node) => {
		if (node.nodeType === 1) {
			if (node.shadowRoot) return node.shadowRoot.childNodes;
			const tag = node.localName;
			if (tag === "slot") {
				const assigned = node.assignedNodes({flatten: true});
				return assigned.length ? assigned : node.childNodes;
			}
			if (tag === "iframe" || tag === "frame") {
				try {
					const d = node.contentDocument;
					return d && d.body ? [d.body] : [];
				} catch (e) { return []; }
			}
		}
		return node.childNodes;
	};

	// Sizes: zero-size boxes. offsetWidth and offsetHeight are cheaper than
	// a bounding rectangle; SVG and MathML elements have no offset sizes.
	const sizeOf = (el) => {
		if (el.offsetWidth !== undefined) return [el.offsetWidth, el.offsetHeight];
		const r = el.getBoundingClientRect();
		return [r.width, r.height];
	};
	const clips = (style) => style.overflow !== "visible";

	// The modal dialog, if one is open: everything else is inert.
	let modal = null;
	try { modal = document.querySelector(":modal"); } catch (e) { /* old browser */ }

	// Text merging: adjacent inline text becomes one text node. lastText is
	// the text node the next text may extend (null after anything else),
	// lastSpace whether the text so far ended with white space.
	let lastText = null, lastSpace = false, lastOut = null;

	const pushText = (out, data) => {
		const n = data.length;
		let i = 0, j = n;
		while (i < n && isSpace(data.charCodeAt(i))) i++;
		if (i === n) { if (n) lastSpace = true; return; }
		while (j > i && isSpace(data.charCodeAt(j - 1))) j--;
		const t = norm(data.slice(i, j));
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
	const brk = () => { lastText = null; lastSpace = false; };

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
	const hasRef = (list) => {
		for (const n of list) if (n.ref || (n.children && hasRef(n.children))) return true;
		return false;
	};

	// Context of the walk, changed only where it changes: the kind of
	// table we are in, whether we are inside sectioning content, inside the
	// modal dialog, inside a labelling element whose text is left out.
	const rootCtx = {table: "", scoped: false, inModal: !modal, dropText: false};
	const derive = (ctx, k, v) => {
		if (ctx[k] === v) return ctx;
		const c = {table: ctx.table, scoped: ctx.scoped, inModal: ctx.inModal, dropText: ctx.dropText};
		c[k] = v;
		return c;
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
		if (type === 11) { for (const c of dom.childNodes) walk(c, depth, out, ctx, visible); return; }
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
		const style = styleOf(el);
		if (gone(el, style)) return;
		const display = style.display;
		if (display === "contents") {
			for (const c of childNodesOf(el)) walk(c, depth, out, ctx, visible);
			return;
		}
		const shown = style.visibility === "visible";
		const kidsHidden = style.contentVisibility === "hidden";
		let role = roleOf(el, tag, ctx.table, ctx.scoped);
		const interactive = shown && isInteractive(el, tag, role, style);
		// Zero size: measured only where it can matter (boxes are rarely
		// empty, and measuring every element is a good part of the cost).
		if ((interactive || role === "img" || clips(style)) && tag !== "option" && tag !== "optgroup" && tag !== "body" && tag !== "iframe") {
			const [w, h] = sizeOf(el);
			if (w === 0 || h === 0) {
				if (clips(style)) return; // its content is cut off
				if (w === 0 && h === 0 && (interactive ? !(el.labels && el.labels.length) : !el.firstElementChild)) return;
			}
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
			if (names(el, tag)) kctx = derive(kctx, "dropText", true);
			break;
		}
		if (!kctx.scoped && (role === "article" || role === "complementary" || role === "main" || role === "navigation" || role === "region")) kctx = derive(kctx, "scoped", true);
		if (kctx.dropText && !ctx.dropText) role = null; // a labelling element is left out, its text too
		const inline = display === "inline";

		// Left out, content kept: invisible elements (a child may be
		// visible), presentational and generic wrappers, row groups.
		if (!shown || (!interactive && (!role || role === "presentation" || role === "generic" && !hasOwnName(el) ||
			(role === "rowgroup" && (tag === "thead" || tag === "tbody" || tag === "tfoot"))))) {
			if (role === "presentation" && (tag === "img" || tag === "svg")) return; // decorative
			if (kidsHidden) return;
			if (!inline) brk();
			const closedDetails = tag === "details" && !el.open;
			for (const c of childNodesOf(el)) {
				if (closedDetails && closedDetailsContent(el, c)) continue;
				walk(c, depth, out, kctx, shown);
			}
			if (!inline) brk();
			return;
		}
		brk();
		const node = {role: role || "generic"};
		const [name, fromContent] = accessibleName(el, tag, role);
		if (name && role !== "row" || name && !fromContent) node.name = name;
		if (interactive) {
			node.ref = refOf(el);
			interactiveCount++;
		}
		states(el, tag, role, node);
		if (interactive) locators(el, tag, node);
		if (!push(out, node)) return;
		if (depth + 1 >= maxDepth || kidsHidden) return;
		// Leaf controls: their content is their name or value.
		if (tag === "input" || tag === "textarea" || tag === "img" || tag === "svg" || leafRoles.has(role)) return;
		if (tag === "select" && role !== "listbox") return;
		const kids = [];
		const closedDetails = tag === "details" && !el.open;
		for (const c of childNodesOf(el)) {
			if (closedDetails && closedDetailsContent(el, c)) continue;
			walk(c, depth + 1, kids, kctx, true);
		}
		brk();
		if (!kids.length) return;
		if (fromContent) {
			// A name made of the content says that content once.
			if (onlyText(kids)) return;
			if (!interactive && hasRef(kids)) delete node.name;
		}
		node.children = kids;
	};

	let rootEl = document.body || document.documentElement;
	if (selector) {
		if (/^e\d+$/.test(selector)) {
			const w = reg.byRef.get(selector);
			rootEl = w && w.deref();
			if (!rootEl || !rootEl.isConnected) return {error: "staleref"};
		} else {
			try { rootEl = document.querySelector(selector); } catch (e) { return {error: "invalid", reason: "" + e.message}; }
			if (!rootEl) return {error: "notfound"};
		}
	}
	const nodes = [];
	if (selector) walk(rootEl, 0, nodes, rootCtx, true);
	else for (const c of childNodesOf(rootEl)) walk(c, 0, nodes, rootCtx, true);

	let result = nodes;
	if (opts.interactiveOnly) {
		// Keep interactive nodes and the named structure (headings,
		// landmarks) leading to them; drop the rest.
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
	return {json: JSON.stringify({title: document.title, url: location.href, nodes: result, interactive: interactiveCount, count, truncated})};
}
