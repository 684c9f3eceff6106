package cdpdriver

// offPageJS defines offPageChecker(styleOf): a function offPage(el) that
// answers where el lies when no scrolling a user can do brings it onto
// the screen ({x, y, side, area}), or null when it can be reached (or has
// no box, which is another question). A user scrolls the page only along
// the axes its root does not hide (html or body with overflow-x: hidden
// does not scroll sideways, though a script can), and never to the left
// of the page's start or above its top: an off-canvas menu at
// left:-300px, or moved out by transform: translateX(-100%), or placed
// beyond the right edge of a page that does not scroll sideways, is out
// of reach, while an element below the fold is not.
//
// The point judged is the centre of the element's first box (the point
// a click aims at), moved into each ancestor that clips its content: a
// scrolling pane on the page can bring its content in, so what matters
// is where the pane is. A fixed box stays where it is on the screen,
// whatever the scroll (fixed). x, y are the centre in page coordinates;
// side names the edges it lies beyond ("left", "right", "top", "bottom",
// or two of them, "top-left"); area is the part of the page a user can
// scroll to, [left, top, right, bottom], or for a fixed box the part on
// the screen. styleOf is the caller's
// computed-style lookup (the snapshot caches its own).
//
// The checker caches each document's area: make one per call into the
// page, as the page may change between calls.
const offPageJS = `
	const offPageChecker = (styleOf) => {
		const areas = new Map();
		const hides = (v) => v === "hidden" || v === "clip";
		const areaOf = (doc) => {
			let a = areas.get(doc);
			if (a) return a;
			const w = doc.defaultView, root = doc.documentElement, se = doc.scrollingElement || root;
			const rs = styleOf(root);
			// The viewport takes the root's overflow, or the body's when
			// the root's is visible.
			const vs = doc.body && rs.overflowX === "visible" && rs.overflowY === "visible" ? styleOf(doc.body) : rs;
			let left = w.scrollX, right = w.scrollX + w.innerWidth, top = w.scrollY, bottom = w.scrollY + w.innerHeight;
			if (!hides(vs.overflowX)) {
				// Right to left, the page starts at the right and scrolls leftwards.
				if (rs.direction === "rtl") { right = w.innerWidth; left = right - Math.max(se.scrollWidth, w.innerWidth); }
				else { left = 0; right = Math.max(se.scrollWidth, w.innerWidth); }
			}
			if (!hides(vs.overflowY)) { top = 0; bottom = Math.max(se.scrollHeight, w.innerHeight); }
			a = {left, top, right, bottom};
			areas.set(doc, a);
			return a;
		};
		return (el) => {
			let r = null;
			for (const c of el.getClientRects()) if (c.width > 0 && c.height > 0) { r = c; break; }
			if (!r) return null;
			const doc = el.ownerDocument, w = doc.defaultView;
			let x = r.left + r.width / 2, y = r.top + r.height / 2, fixed = false;
			for (let n = el; n && n !== doc.body && n !== doc.documentElement; ) {
				const s = styleOf(n);
				if (n !== el && (s.overflowX !== "visible" || s.overflowY !== "visible")) {
					const b = n.getBoundingClientRect();
					x = Math.min(Math.max(x, b.left), b.right);
					y = Math.min(Math.max(y, b.top), b.bottom);
				}
				if (s.position === "fixed") { fixed = true; break; }
				n = n.parentElement || (n.parentNode && n.parentNode.host);
			}
			const a = areaOf(doc);
			// A fixed box is judged where it is on the screen.
			const px = x + w.scrollX, py = y + w.scrollY;
			const fa = fixed ? {left: w.scrollX, top: w.scrollY, right: w.scrollX + w.innerWidth, bottom: w.scrollY + w.innerHeight} : a;
			const sides = [];
			if (py < fa.top) sides.push("top");
			else if (py > fa.bottom) sides.push("bottom");
			if (px < fa.left) sides.push("left");
			else if (px > fa.right) sides.push("right");
			if (!sides.length) return null;
			return {x: Math.round(px), y: Math.round(py), side: sides.join("-"), fixed, area: [fa.left, fa.top, fa.right, fa.bottom].map(Math.round)};
		};
	};
`
