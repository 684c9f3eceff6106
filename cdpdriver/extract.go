package cdpdriver

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"time"

	"github.com/mafredri/cdp/protocol/page"
)

// visibleTextJS defines visibleText(root): root's innerText (rendering
// aware: hidden content left out, blocks on lines of their own), with
// what innerText leaves out put where it shows: the content of open
// shadow roots, the nodes slotted into them, and same-origin frames'
// documents. The elements on the way to those are walked here, the rest
// is left to innerText; a page with none of them is innerText alone.
const visibleTextJS = `
	const visibleText = (root) => {
		const walked = new Set();
		const mark = (n) => {
			for (let p = n; p && !walked.has(p); p = p.parentNode || p.host || (p.defaultView && p.defaultView.frameElement)) walked.add(p);
		};
		const find = (scope, inShadow) => {
			for (const el of scope.querySelectorAll("*")) {
				if (el.shadowRoot) { mark(el); find(el.shadowRoot, true); }
				else if (inShadow && el.localName === "slot") mark(el);
				else if (el.localName === "iframe" || el.localName === "frame") {
					const d = el.contentDocument; // null for another origin's
					if (d) { mark(el); find(d, false); }
				}
			}
		};
		find(root.shadowRoot || root, !!root.shadowRoot);
		if (root.shadowRoot) mark(root);
		if (!walked.has(root)) return root.innerText;
		const styleOf = (el) => el.ownerDocument.defaultView.getComputedStyle(el);
		const isBlock = (el) => { const d = styleOf(el).display; return d !== "contents" && !d.startsWith("inline"); };
		const nodes = (list, style) => {
			let out = "";
			for (const c of list) {
				if (c.nodeType === 3) {
					if (style.visibility === "visible") out += /^pre/.test(style.whiteSpace) ? c.data : c.data.replace(/\s+/g, " ");
				} else if (c.nodeType === 1) {
					if (c.localName === "br") { out += "\n"; continue; }
					const t = textOf(c);
					out += t && isBlock(c) ? "\n" + t + "\n" : t;
				}
			}
			return out;
		};
		const textOf = (el) => {
			const style = styleOf(el);
			if (style.display === "none") return ""; // whose innerText is its textContent
			if (!walked.has(el)) return el.innerText || "";
			if (el.shadowRoot) return nodes(el.shadowRoot.childNodes, style);
			if (el.localName === "slot") {
				const assigned = el.assignedNodes({flatten: true});
				return nodes(assigned.length ? assigned : el.childNodes, style);
			}
			if (el.localName === "iframe" || el.localName === "frame") {
				const body = el.contentDocument.body;
				return body ? textOf(body) : "";
			}
			return nodes(el.childNodes, style);
		};
		return textOf(root).replace(/[ \t]*\n[ \t]*/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
	};
`

// textJS is the visible text (visibleText) of the element or the body,
// whitespace collapsed; none for an element not rendered (display:none,
// itself or by an ancestor), whose innerText would be all its text.
const textJS = `function (selector, max) {` + visibleTextJS + tooLargeJS + `
	const shown = (n) => !n.checkVisibility || n.checkVisibility();
	const text = (n) => n && shown(n) ? visibleText(n).replace(/\s+/g, " ").trim() : "";
	const answer = (t) => tooLarge("the text", t, max) || {text: t};
	if (!selector) return answer(text(document.body || document.documentElement));` + findElementJS + `
	return answer(text(el));
}`

// Text returns the visible text of the element matching selector, or of
// the whole page when selector is empty, with whitespace collapsed.
func (p *Page) Text(ctx context.Context, selector string) (string, error) {
	var r struct {
		elementReply
		Text string `json:"text"`
	}
	err := p.callOnDocument(ctx, "read text", selector, textJS, false, &r, p.resultLimit)
	return r.Text, err
}

// outerHTMLJS defines outerHTML(el): el.outerHTML, with the open shadow
// roots in it (el's own included) serialized as declarative shadow DOM
// (<template shadowrootmode="open">), so a page built of web components
// does not read as empty hosts. The start tag is written here rather than
// taken from a clone, since cloning a custom element runs the page's
// constructor.
const outerHTMLJS = `
	const outerHTML = (el) => {
		const roots = [];
		const find = (scope) => {
			for (const e of scope.querySelectorAll("*")) if (e.shadowRoot) { roots.push(e.shadowRoot); find(e.shadowRoot); }
		};
		if (el.shadowRoot) { roots.push(el.shadowRoot); find(el.shadowRoot); }
		find(el);
		if (!roots.length || !el.getHTML) return el.outerHTML;
		const name = el.namespaceURI === "http://www.w3.org/1999/xhtml" ? el.localName : el.tagName;
		let start = "<" + name;
		for (const a of el.attributes)
			start += " " + a.name + '="' + a.value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/\u00a0/g, "&nbsp;").replace(/</g, "&lt;").replace(/>/g, "&gt;") + '"';
		return start + ">" + el.getHTML({shadowRoots: roots}) + "</" + name + ">";
	};
`

const htmlJS = `function (selector, max) {` + outerHTMLJS + tooLargeJS + `
	const answer = (h) => tooLarge("the HTML", h, max) || {html: h};
	if (!selector) return answer(document.documentElement ? outerHTML(document.documentElement) : "");` + findElementJS + `
	return answer(outerHTML(el));
}`

// HTML returns the outer HTML of the element matching selector, or of the
// whole document when selector is empty; open shadow roots are in it as
// declarative shadow DOM.
func (p *Page) HTML(ctx context.Context, selector string) (string, error) {
	var r struct {
		elementReply
		HTML string `json:"html"`
	}
	err := p.callOnDocument(ctx, "read html", selector, htmlJS, false, &r, p.resultLimit)
	return r.HTML, err
}

// Title returns the document's title.
func (p *Page) Title(ctx context.Context) (string, error) {
	_, title, err := p.Location(ctx)
	return title, err
}

// ReadyState returns document.readyState: "loading", "interactive" or
// "complete".
func (p *Page) ReadyState(ctx context.Context) (string, error) {
	var s string
	err := p.evalValue(ctx, "read readyState", "document.readyState", &s)
	return s, err
}

// ScreenshotOptions choose what a screenshot covers.
type ScreenshotOptions struct {
	FullPage bool   // the whole scrollable page, not only the viewport
	Selector string // only this element's box
}

// regionJS answers the region to capture in page coordinates: the
// element's border box (scrolled into view) or the whole document. An
// element no user can scroll to (offPageJS) is refused as a click on it
// is.
const regionJS = `function (selector, fullPage) {
	if (!selector) {
		const d = document.documentElement;
		return {x: 0, y: 0, width: Math.max(d.scrollWidth, innerWidth), height: Math.max(d.scrollHeight, innerHeight)};
	}` + findElementJS + offPageJS + `
	const off = offPageChecker((n) => getComputedStyle(n))(el);
	if (off) return {error: "offpage", offpage: off};
	el.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
	const r = el.getBoundingClientRect();
	if (r.width <= 0 || r.height <= 0) return {error: "invisible"};
	// Only what lies on the page can be captured: the box is cut to it, and
	// one wholly off it (placed there to hide it) is refused, not taken
	// as some other part of the page.
	const d = document.documentElement;
	const left = Math.max(0, r.left + scrollX), top = Math.max(0, r.top + scrollY);
	const right = Math.min(Math.max(d.scrollWidth, innerWidth), r.right + scrollX), bottom = Math.min(Math.max(d.scrollHeight, innerHeight), r.bottom + scrollY);
	if (right <= left || bottom <= top) return {error: "invisible", reason: "it is outside the page, at " + Math.round(r.left + scrollX) + "," + Math.round(r.top + scrollY)};
	return {x: left, y: top, width: right - left, height: bottom - top};
}`

// Screenshot captures a PNG of the viewport, the full page or an element.
func (p *Page) Screenshot(ctx context.Context, o ScreenshotOptions) ([]byte, error) {
	if p.frontWhenHidden {
		p.show(ctx)
	}
	args := page.NewCaptureScreenshotArgs().SetFormat("png")
	if o.FullPage || o.Selector != "" {
		var r struct {
			elementReply
			X, Y, Width, Height float64
		}
		if err := p.callOnDocument(ctx, "screenshot", o.Selector, regionJS, false, &r, o.FullPage); err != nil {
			return nil, err
		}
		args.SetClip(page.Viewport{X: r.X, Y: r.Y, Width: math.Ceil(r.Width), Height: math.Ceil(r.Height), Scale: 1}).
			SetCaptureBeyondViewport(true)
	}
	var shot *page.CaptureScreenshotReply
	err := whileInactive(ctx, func() (err error) {
		shot, err = p.client.Page.CaptureScreenshot(ctx, args)
		return err
	})
	if err != nil {
		return nil, p.wrap(ctx, "screenshot", err)
	}
	if len(shot.Data) == 0 {
		return nil, fmt.Errorf("screenshot: Chromium returned no image")
	}
	// Only Chromium can tell a PNG's size; in the reply it is base64.
	if n := base64.StdEncoding.EncodedLen(len(shot.Data)); p.resultLimit > 0 && n > p.resultLimit {
		return nil, &ResultTooLargeError{What: "the screenshot (base64)", Size: n, Limit: p.resultLimit}
	}
	return shot.Data, nil
}

// show brings the tab to the front of its window when it is hidden there:
// a link or window.open without window features opens its page as a tab
// in the opener's window, which hides the opener, and a hidden tab draws
// nothing new (a person would switch to the tab to look at it too). It
// is a best effort: when the page cannot say (it is being replaced, it
// lies), the screenshot is taken as it is.
func (p *Page) show(ctx context.Context) {
	var state string
	if p.evalValue(ctx, "screenshot", "document.visibilityState", &state) != nil || state != "hidden" {
		return
	}
	if err := p.client.Page.BringToFront(ctx); err != nil {
		p.log.Debug().Err(err).Msg("bring the tab to the front for a screenshot")
	}
}

// Wait states for WaitFor.
const (
	WaitAttached = "attached" // in the document
	WaitVisible  = "visible"  // in the document with a visible box
	WaitHidden   = "hidden"   // absent, or without a visible box
	WaitGone     = "gone"     // not in the document
)

// WaitTimeoutError: the element did not reach the state in time.
type WaitTimeoutError struct {
	Selector, State string
	After           time.Duration
}

func (e *WaitTimeoutError) Error() string {
	switch e.State {
	case WaitHidden:
		return fmt.Sprintf("timeout: %s still visible after %s", e.Selector, e.After)
	case WaitGone:
		return fmt.Sprintf("timeout: %s still in the page after %s", e.Selector, e.After)
	case WaitVisible:
		return fmt.Sprintf("element not visible: %s (waited %s for it to become visible)", e.Selector, e.After)
	}
	return fmt.Sprintf("element not found: %s (waited %s for it to appear)", e.Selector, e.After)
}

// waitJS polls in the page (every 20ms, or less often when a look is
// costly; no round trips) until the element reaches the state or the
// deadline passes.
const waitJS = `function (selector, state, timeoutMs) {
` + lookupJS + `
	const check = () => {
		const found = lookup(this, selector);
		if (found.error === "invalid") return found;
		const el = found.el; // a stale ref is gone
		let visible = false;
		if (el) {
			const s = getComputedStyle(el);
			if (s.visibility !== "hidden" && s.display !== "none")
				for (const r of el.getClientRects()) if (r.width > 0 && r.height > 0) { visible = true; break; }
		}
		const done = state === "attached" ? !!el : state === "visible" ? visible : state === "hidden" ? !visible : !el;
		return done ? {} : null;
	};
	return new Promise(resolve => {
		const deadline = Date.now() + timeoutMs;
		const tick = () => {
			const start = performance.now();
			const r = check();
			if (r) return resolve(r);
			if (Date.now() >= deadline) return resolve({error: "timeout"});
			// A look that costs (a selector matching nothing in a large
			// page searches every shadow root) waits longer before the
			// next, so the page keeps at least four fifths of its time.
			setTimeout(tick, Math.max(20, 4 * (performance.now() - start)));
		};
		tick();
	});
}`

// WaitFor waits until the element matching selector reaches state, for at
// most timeout; then it is a *WaitTimeoutError. The polling runs in the
// page and ends on its own at the deadline, so nothing is left behind.
// When the page navigates away meanwhile, the wait goes on in the new
// document, for the time that is left, as a user who waits for a result
// expects.
func (p *Page) WaitFor(ctx context.Context, selector, state string, timeout time.Duration) error {
	// The round trip gets a margin over the page's own deadline, so the
	// page's answer, not the context, says it timed out.
	ctx, cancel := context.WithTimeout(ctx, timeout+2*time.Second)
	defer cancel()
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return &WaitTimeoutError{Selector: selector, State: state, After: timeout}
		}
		err := p.callOnDocument(ctx, "wait for "+selector, selector, waitJS, true, nil, state, left.Milliseconds())
		if p.navigatedAway(err) {
			continue // in the new document
		}
		var in *InputError
		if asInput(err, &in) && in.Msg == "" {
			return &WaitTimeoutError{Selector: selector, State: state, After: timeout}
		}
		return err
	}
}

// Base64 is how binary results (screenshots) travel in JSON.
func Base64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }
