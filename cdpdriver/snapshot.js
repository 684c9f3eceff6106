// The accessibility snapshot, computed in the page in one pass over the
// DOM (light and open shadow trees, same-origin iframes). It is called with
// Runtime.callFunctionOn on the document, with the options as its one
// argument after the subtree's selector, and answers {root, nodes, interactive, truncated} by value.
//
// Roles follow HTML-AAM's implicit mappings (an explicit role attribute
// wins), names follow the accessible name computation in the order the
// spec gives (aria-labelledby, aria-label, native label, content, title),
// and hidden content (display:none, visibility:hidden, aria-hidden, hidden,
// inert, zero size) is left out, as are presentational images and generic
// wrappers, whose children take their place.
//
// Refs: every interactive element gets a ref (e1, e2, ...) kept in a
// per-document registry, so the same element keeps its ref across
// snapshots and an action can find it again, or learn that it is gone.
function (selector, opts) {
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

	const landmarkScoped = (el) => !!el.closest("article, aside, main, nav, section, [role=article], [role=complementary], [role=main], [role=navigation], [role=region]");

	const inputRole = (el) => {
		const t = (el.getAttribute("type") || "text").toLowerCase();
		switch (t) {
		case "button": case "submit": case "reset": case "image": return "button";
		case "checkbox": return "checkbox";
		case "radio": return "radio";
		case "range": return "slider";
		case "number": return "spinbutton";
		case "search": return el.hasAttribute("list") ? "combobox" : "searchbox";
		case "hidden": return null;
		case "color": case "date": case "datetime-local": case "month": case "time": case "week": case "file": return t === "file" ? "button" : "textbox";
		}
		return el.hasAttribute("list") ? "combobox" : "textbox";
	};

	const implicitRole = (el) => {
		const tag = el.localName;
		switch (tag) {
		case "a": case "area": return el.hasAttribute("href") ? "link" : null;
		case "button": return "button";
		case "input": return inputRole(el);
		case "textarea": return "textbox";
		case "select": return el.multiple || el.size > 1 ? "listbox" : "combobox";
		case "option": return "option";
		case "optgroup": return "group";
		case "h1": case "h2": case "h3": case "h4": case "h5": case "h6": return "heading";
		case "ul": case "ol": case "menu": return "list";
		case "li": return "listitem";
		case "dl": return "list";
		case "dt": return "term";
		case "dd": return "definition";
		case "nav": return "navigation";
		case "main": return "main";
		case "aside": return "complementary";
		case "header": return landmarkScoped(el.parentElement || el) ? null : "banner";
		case "footer": return landmarkScoped(el.parentElement || el) ? null : "contentinfo";
		case "form": return hasOwnName(el) ? "form" : null;
		case "section": return hasOwnName(el) ? "region" : null;
		case "article": return "article";
		case "table": return "table";
		case "caption": return "caption";
		case "thead": case "tbody": case "tfoot": return "rowgroup";
		case "tr": return "row";
		case "td": return el.closest("table") && el.closest("table").getAttribute("role") === "grid" ? "gridcell" : "cell";
		case "th": return thRole(el);
		case "img": return el.getAttribute("alt") === "" && !el.hasAttribute("title") ? "presentation" : "img";
		case "svg": return el.hasAttribute("aria-label") || el.querySelector(":scope > title") ? "img" : null;
		case "dialog": return "dialog";
		case "details": return "group";
		case "summary": return "button";
		case "fieldset": return "group";
		case "p": return "paragraph";
		case "hr": return "separator";
		case "progress": return "progressbar";
		case "meter": return "meter";
		case "output": return "status";
		case "blockquote": return "blockquote";
		case "figure": return "figure";
		case "iframe": return "iframe";
		case "code": return "code";
		case "strong": return "strong";
		case "em": return "emphasis";
		case "time": return "time";
		case "math": return "math";
		case "legend": return "legend";
		}
		return null;
	};

	const thRole = (el) => {
		const scope = (el.getAttribute("scope") || "").toLowerCase();
		if (scope === "row" || scope === "rowgroup") return "rowheader";
		if (scope === "col" || scope === "colgroup") return "columnheader";
		const row = el.parentElement;
		if (row && row.parentElement && row.parentElement.localName === "thead") return "columnheader";
		if (row && Array.from(row.children).every(c => c.localName === "th")) return "columnheader";
		return "rowheader";
	};

	const validRoles = new Set(("alert alertdialog application article banner blockquote button caption cell checkbox code columnheader combobox complementary contentinfo definition deletion dialog directory document emphasis feed figure form generic grid gridcell group heading img insertion link list listbox listitem log main marquee math menu menubar menuitem menuitemcheckbox menuitemradio meter navigation none note option paragraph presentation progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox separator slider spinbutton status strong subscript superscript switch tab table tablist tabpanel term textbox time timer toolbar tooltip tree treegrid treeitem").split(" "));

	const roleOf = (el) => {
		const explicit = el.getAttribute("role");
		if (explicit) {
			for (const r of explicit.trim().toLowerCase().split(/\s+/)) {
				if (validRoles.has(r)) return r === "none" ? "presentation" : r;
			}
		}
		return implicitRole(el);
	};

	const interactiveRoles = new Set(["button", "link", "checkbox", "radio", "textbox", "searchbox", "combobox", "listbox", "option", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider", "spinbutton", "treeitem", "gridcell"]);
	const nameFromContentRoles = new Set(["button", "cell", "checkbox", "columnheader", "gridcell", "heading", "link", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "radio", "row", "rowheader", "switch", "tab", "tooltip", "treeitem", "caption", "legend", "term", "label"]);

	const hasOwnName = (el) => el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby") || el.hasAttribute("title");

	// hidden: left out with its subtree.
	const hidden = (el, style) => {
		if (el.getAttribute("aria-hidden") === "true" || el.inert) return true;
		if (style.display === "none" || style.visibility === "hidden" || style.visibility === "collapse" || style.contentVisibility === "hidden") return true;
		return false;
	};

	const textOfIds = (el, attr, seen) => {
		const ids = (el.getAttribute(attr) || "").trim().split(/\s+/).filter(Boolean);
		const root = el.getRootNode();
		return ids.map(id => {
			const t = (root.getElementById ? root.getElementById(id) : null) || el.ownerDocument.getElementById(id);
			return t ? nameFromContent(t, seen, true) : "";
		}).filter(Boolean).join(" ");
	};

	const labelsText = (el, seen) => {
		if (!el.labels || !el.labels.length) return "";
		return Array.from(el.labels).map(l => nameFromContent(l, seen, true, el)).filter(Boolean).join(" ");
	};

	// nameFromContent: the text of a subtree for names, with hidden parts
	// left out and embedded controls represented by their value.
	const nameFromContent = (node, seen, force, skip) => {
		if (seen.has(node)) return "";
		seen.add(node);
		let out = "";
		for (const child of childNodesOf(node)) {
			if (child.nodeType === 3) { out += child.data; continue; }
			if (child.nodeType !== 1 || child === skip) continue;
			const style = getComputedStyle(child);
			if (!force && hidden(child, style)) continue;
			if (style.display === "none") continue;
			const tag = child.localName;
			let part;
			if (child.hasAttribute("aria-label") && norm(child.getAttribute("aria-label"))) part = child.getAttribute("aria-label");
			else if (tag === "img" || (tag === "input" && child.type === "image")) part = child.getAttribute("alt") || "";
			else if (tag === "input" || tag === "textarea") part = child.type === "checkbox" || child.type === "radio" ? "" : child.value;
			else if (tag === "select") part = child.selectedOptions[0] ? child.selectedOptions[0].text : "";
			else if (tag === "br") part = " ";
			else part = nameFromContent(child, seen, force);
			const block = style.display !== "inline" && style.display !== "contents";
			out += block ? " " + part + " " : part;
		}
		return norm(out);
	};

	const accessibleName = (el, role) => {
		const seen = new Set();
		let name = "";
		if (el.hasAttribute("aria-labelledby")) name = textOfIds(el, "aria-labelledby", seen);
		if (!name && el.hasAttribute("aria-label")) name = norm(el.getAttribute("aria-label"));
		if (!name) {
			const tag = el.localName;
			if (tag === "input" || tag === "textarea" || tag === "select" || tag === "meter" || tag === "progress" || tag === "output") {
				const type = (el.getAttribute("type") || "").toLowerCase();
				if (tag === "input" && (type === "submit" || type === "reset" || type === "button")) {
					name = el.hasAttribute("value") ? el.value : type === "submit" ? "Submit" : type === "reset" ? "Reset" : "";
				} else if (tag === "input" && type === "image") {
					name = el.getAttribute("alt") || el.getAttribute("value") || "Submit";
				} else {
					name = labelsText(el, seen);
					if (!name && el.hasAttribute("title")) name = el.getAttribute("title");
					if (!name && el.hasAttribute("placeholder")) name = el.getAttribute("placeholder");
				}
			} else if (tag === "img" || tag === "area") {
				name = el.getAttribute("alt") || "";
			} else if (tag === "fieldset") {
				const legend = el.querySelector(":scope > legend");
				if (legend) name = nameFromContent(legend, seen);
			} else if (tag === "table") {
				const cap = el.querySelector(":scope > caption");
				if (cap) name = nameFromContent(cap, seen);
			} else if (tag === "figure") {
				const cap = el.querySelector(":scope > figcaption");
				if (cap) name = nameFromContent(cap, seen);
			} else if (tag === "svg") {
				const t = el.querySelector(":scope > title");
				if (t) name = t.textContent;
			} else if (tag === "iframe") {
				name = el.getAttribute("title") || "";
			}
		}
		let fromContent = false;
		if (!name && role && nameFromContentRoles.has(role)) { name = nameFromContent(el, seen); fromContent = !!name; }
		if (!name && el.hasAttribute("title")) name = el.getAttribute("title");
		return [norm(name), fromContent];
	};

	// phrasing: nodes that only carry text, which a name from content
	// already says.
	const phrasingRoles = new Set(["text", "strong", "emphasis", "generic", "code", "time", "subscript", "superscript", "deletion", "insertion"]);
	const onlyPhrasing = (list) => list.every(n => !n.ref && phrasingRoles.has(n.role) && (!n.children || onlyPhrasing(n.children)));

	const clickable = (el, style) => {
		if (el.hasAttribute("onclick") || typeof el.onclick === "function") return true;
		if (style.cursor === "pointer") {
			const p = el.parentElement;
			return !p || getComputedStyle(p).cursor !== "pointer";
		}
		return false;
	};

	const isInteractive = (el, role, style) => {
		if (role && interactiveRoles.has(role)) return true;
		const tag = el.localName;
		if (tag === "summary" || (tag === "a" && el.hasAttribute("href"))) return true;
		if (el.isContentEditable && (!el.parentElement || !el.parentElement.isContentEditable)) return true;
		const ti = el.getAttribute("tabindex");
		if (ti !== null && +ti >= 0) return true;
		return clickable(el, style);
	};

	const focused = (() => {
		let a = document.activeElement;
		while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
		return a;
	})();

	const states = (el, role, node) => {
		const aria = (n) => el.getAttribute("aria-" + n);
		const tag = el.localName;
		if (role === "checkbox" || role === "radio" || role === "switch" || role === "menuitemcheckbox" || role === "menuitemradio") {
			if (tag === "input") node.checked = el.indeterminate ? "mixed" : el.checked;
			else if (aria("checked") !== null) node.checked = aria("checked") === "mixed" ? "mixed" : aria("checked") === "true";
			else node.checked = false;
		}
		if (el.disabled === true || aria("disabled") === "true" || (el.closest && el.closest("fieldset:disabled") && "disabled" in el)) node.disabled = true;
		if (aria("expanded") !== null) node.expanded = aria("expanded") === "true";
		else if (tag === "summary" && el.parentElement && el.parentElement.localName === "details") node.expanded = el.parentElement.open;
		else if (tag === "details") node.expanded = el.open;
		if (role === "option" && tag === "option") node.selected = el.selected;
		else if (aria("selected") !== null) node.selected = aria("selected") === "true";
		if (aria("pressed") !== null) node.pressed = aria("pressed") === "mixed" ? "mixed" : aria("pressed") === "true";
		if (el.required === true || aria("required") === "true") node.required = true;
		if (el === focused) node.focused = true;
		if (role === "heading") {
			const lvl = aria("level") || (/^h[1-6]$/.test(tag) ? tag[1] : "2");
			node.level = +lvl;
		}
		if (tag === "input" || tag === "textarea") {
			const type = (el.getAttribute("type") || "").toLowerCase();
			if (type !== "checkbox" && type !== "radio" && type !== "submit" && type !== "button" && type !== "reset" && type !== "image" && type !== "file") {
				node.value = type === "password" ? (el.value ? "••••" : "") : el.value;
			}
		} else if (tag === "select" && role === "combobox") {
			node.value = el.selectedOptions[0] ? norm(el.selectedOptions[0].text) : "";
		} else if (role === "slider" || role === "spinbutton" || role === "progressbar" || role === "meter") {
			const v = aria("valuenow") ?? el.value;
			if (v !== undefined && v !== null && v !== "") node.value = "" + v;
		}
	};

	const locators = (el, node) => {
		const a = {};
		if (el.id) a.id = el.id;
		if (el.hasAttribute("aria-label")) a.ariaLabel = el.getAttribute("aria-label");
		if (el.hasAttribute("data-testid")) a.testId = el.getAttribute("data-testid");
		if (el.hasAttribute("name")) a.name = el.getAttribute("name");
		if (el.localName === "a" && el.hasAttribute("href")) a.href = el.getAttribute("href");
		if (Object.keys(a).length) node.attrs = a;
	};

	// childNodesOf: the children that render: a shadow host's shadow tree,
	// a slot's assigned nodes, an iframe's document body (same origin).
	const childNodesOf = (node) => {
		if (node.nodeType === 1) {
			if (node.shadowRoot) return node.shadowRoot.childNodes;
			if (node.localName === "slot") {
				const assigned = node.assignedNodes({flatten: true});
				return assigned.length ? assigned : node.childNodes;
			}
			if (node.localName === "iframe") {
				try {
					const d = node.contentDocument;
					return d && d.body ? [d.body] : [];
				} catch (e) { return []; }
			}
		}
		return node.childNodes;
	};

	const zeroSize = (el) => {
		const r = el.getBoundingClientRect();
		return r.width === 0 && r.height === 0;
	};

	// walk returns the snapshot nodes for a DOM node: one node, or the
	// children of a node that is left out but whose content is kept.
	const walk = (dom, depth, out) => {
		if (truncated) return;
		if (dom.nodeType === 3) {
			const t = norm(dom.data);
			if (t) push(out, {role: "text", name: t});
			return;
		}
		if (dom.nodeType !== 1 && dom.nodeType !== 11) return;
		if (dom.nodeType === 11) { for (const c of dom.childNodes) walk(c, depth, out); return; }
		const el = dom;
		const tag = el.localName;
		if (tag === "script" || tag === "style" || tag === "noscript" || tag === "template" || tag === "head" || tag === "title" || tag === "meta" || tag === "link") return;
		const style = getComputedStyle(el);
		if (hidden(el, style)) return;
		if (style.display === "contents") { for (const c of childNodesOf(el)) walk(c, depth, out); return; }
		const role = roleOf(el);
		const interactive = isInteractive(el, role, style);
		if (zeroSize(el) && (interactive || !el.firstElementChild) && tag !== "iframe" && el.localName !== "body") return;
		if (role === "presentation" && !interactive) {
			if (tag === "img") return; // decorative
			for (const c of childNodesOf(el)) walk(c, depth, out);
			return;
		}
		if (!role && !interactive) { // a generic wrapper: its children take its place
			for (const c of childNodesOf(el)) walk(c, depth, out);
			return;
		}
		const node = {role: role || "generic"};
		const [name, nameFromText] = accessibleName(el, role);
		if (name) node.name = name;
		if (interactive) {
			node.ref = refOf(el);
			interactiveCount++;
			locators(el, node);
		}
		states(el, role, node);
		if (!push(out, node)) return;
		if (depth + 1 >= maxDepth) return;
		// Leaf controls: their content is their name or value.
		if (tag === "input" || tag === "textarea" || tag === "select" || tag === "img") {
			if (tag === "select" && role === "listbox") {
				const kids = [];
				for (const c of el.children) walk(c, depth + 1, kids);
				if (kids.length) node.children = kids;
			}
			return;
		}
		const kids = [];
		for (const c of childNodesOf(el)) walk(c, depth + 1, kids);
		// A name made of its content says that content once.
		if (nameFromText && onlyPhrasing(kids)) return;
		if (kids.length) node.children = kids;
	};

	const push = (out, node) => {
		if (count >= maxNodes) { truncated = true; return false; }
		count++;
		out.push(node);
		return true;
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
	if (selector) walk(rootEl, 0, nodes);
	else for (const c of childNodesOf(rootEl)) walk(c, 0, nodes);

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
		return {title: document.title, url: location.href, nodes: keep(nodes), interactive: interactiveCount, count, truncated};
	}
	return {title: document.title, url: location.href, nodes, interactive: interactiveCount, count, truncated};
}
