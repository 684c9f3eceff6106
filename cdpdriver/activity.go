package cdpdriver

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
)

// Settling on the page's own activity. What an action does to a page
// often comes a moment after it: an autocomplete waits for typing to
// pause (a timer), then asks its server (a request), then draws its
// suggestions (DOM changes). A fixed wait after every action is either
// too short for such a page or wasted on the many that do nothing.
// SettleActivity waits for exactly what the action started: the short
// timers set since it began, the requests in flight, and then for the
// DOM to stay still for a moment.
//
// Timers are set in the page's own world, so the tracker runs there: it
// wraps setTimeout and clearTimeout and watches the DOM with a
// MutationObserver. It is installed in a document the first time a
// settle asks for it (a person's own browser is not touched otherwise),
// and from then on sees the timers the page sets; every later document
// of the page gets it before its own scripts run. A page can see or undo
// the wrapper; the most it can do is make a settle wait its whole bound.

// activityJS installs the tracker (once per document) and answers
// [pending short timers set between since and until, ms since the last
// DOM change, whether it was installed just now, whether the page has
// rendered twice since after].
var activityJS = `(since, until, after) => {
	const key = "` + activityKey + `";
	let fresh = false;
	if (!Object.getOwnPropertyDescriptor(window, key)) {
		fresh = true;
		// Its own references, taken at the install (at a document's
		// start, the browser's own): what the page changes later is not
		// called.
		const set = window.setTimeout, clear = window.clearTimeout, Observer = window.MutationObserver;
		const dateNow = Date.now, frame = window.requestAnimationFrame.bind(window);
		const hidden = Object.getOwnPropertyDescriptor(Document.prototype, "hidden").get;
		const readyState = Object.getOwnPropertyDescriptor(Document.prototype, "readyState").get;
		const pending = new Map(); // id -> {made, due}
		let inTimer = 0, changed = 0, observing = false;
		const wrapped = {
			setTimeout(handler, delay, ...rest) {
				const d = Number(delay) || 0;
				let id;
				const run = typeof handler === "function"
					? function () { pending.delete(id); inTimer++; try { return handler.apply(this, arguments); } finally { inTimer--; } }
					: handler;
				id = set.call(this, run, delay, ...rest);
				// A timer a timer sets is a loop (a poll, an animation):
				// not the action's doing.
				if (inTimer === 0 && d <= ` + strconv.Itoa(int(activityTimerMax/time.Millisecond)) + `) {
					const now = dateNow.call(Date);
					pending.set(id, {made: now, due: now + d});
				}
				return id;
			},
			clearTimeout(id) { pending.delete(id); return clear.call(this, id); },
		};
		for (const name of ["setTimeout", "clearTimeout"]) {
			const native = window[name];
			Object.defineProperty(wrapped[name], "toString", {value: () => native.toString()});
			window[name] = wrapped[name];
		}
		// The DOM is watched once it is parsed: a record for every node
		// of a large page as it is parsed slows its load by a tenth.
		// Until then it counts as changing, and its parse's end is its
		// last change.
		const observe = parsed => {
			if (observing || readyState.call(document) === "loading") return;
			observing = true;
			changed = parsed ? 0 : dateNow.call(Date);
			new Observer(() => { changed = dateNow.call(Date); })
				.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
		};
		observe(true);
		document.addEventListener("DOMContentLoaded", () => observe(false));
		// The page renders twice after it is asked: what runs at a
		// rendering (an IntersectionObserver loading more as the page
		// scrolls, a ResizeObserver, an animation frame) has run.
		let rendered = 0, asked = 0;
		Object.defineProperty(window, key, {value: (since, until, after) => {
			let timers = 0;
			const now = dateNow.call(Date);
			for (const [id, t] of pending) {
				if (now > t.due + 1000) pending.delete(id); // a string handler's, or one the page lost
				else if (t.made >= since && t.made <= until) timers++;
			}
			if (hidden.call(document)) rendered = now; // a hidden page does not render
			else if (asked < after && rendered < after) {
				const at = asked = now;
				frame(() => frame(() => { if (at > rendered) rendered = at; }));
			}
			observe(false);
			return [timers, !observing ? 0 : changed ? now - changed : 1e9, rendered >= after ? 1 : 0];
		}});
	}
	// Numbers only, read with operators (the page's Math and Number are
	// its own): whatever answers there.
	let timers = 0, still = ` + strconv.Itoa(int(activityStill/time.Millisecond)) + `, rendered = 1;
	try {
		const seen = window[key](since, until, after);
		if (typeof seen[0] === "number" && seen[0] > 0) timers = seen[0] > 1e6 ? 1e6 : seen[0];
		if (typeof seen[1] === "number" && seen[1] >= 0) still = seen[1];
		rendered = seen[2] === 0 ? 0 : 1;
	} catch (e) { /* a broken tracker: the DOM and the network only */ }
	return [timers, still, fresh, rendered];
}`

// activityKey is the window property the tracker is kept under: of this
// process's run (installToken), so a page cannot put a function of its
// own there beforehand for framebus to call.
var activityKey = "__framebusActivity" + installToken[:16]

// Bounds of the settle.
const (
	// activityTimerMax: longer timers are not waited for (a session
	// timeout, a carousel's next slide).
	activityTimerMax = time.Second
	// activityStill is how long the DOM must stay unchanged.
	activityStill = 50 * time.Millisecond
	// activityPoll is the pause between looks; activityFramePoll, while
	// the page has not rendered since the action.
	activityPoll      = 25 * time.Millisecond
	activityFramePoll = 8 * time.Millisecond
	// activitySlack: a timer set this long before the action's start
	// may still be its doing (the page's clock is not the node's).
	activitySlack = 100 * time.Millisecond
	// activityChain: timers set this long after the action's start are
	// waited for (its debounce's request's handler may set one); later
	// ones are the page's own doing (a poll, a clock), whenever the
	// settle comes.
	activityChain = 2 * time.Second
)

// ActivityWait says what a settle waited for.
type ActivityWait struct {
	// Waited: how long it took; Timers and Requests, the most timers
	// and requests it saw pending.
	Waited   time.Duration
	Timers   int
	Requests int
	// Fresh: the tracker was installed by this settle, so timers set
	// before it were not seen.
	Fresh bool
	// RanOut: the page was still busy when ctx ended; it was read as it
	// was. Later settles in the same document are Restless.
	RanOut bool
	// Restless: a settle ran out in this document before, so this one
	// waited only for two renderings and the requests in flight when it
	// began (a page that animates its DOM or polls never settles).
	Restless bool
}

// TrackActivity installs the tracker in the current document, if it has
// none, so that a settle after the next action sees the timers it sets;
// and, the first time, in every document the page makes from then on,
// before the page's own scripts run (Page.addScriptToEvaluateOnNewDocument):
// there it sees every timer the page sets, and keeps the builtins it
// uses as they were before the page could replace them. A document made
// after that needs no call here.
func (p *Page) TrackActivity(ctx context.Context) error {
	if p.trackedAfter > 0 && p.Document() > p.trackedAfter {
		return nil
	}
	if p.trackedAfter == 0 {
		_, err := p.client.Page.AddScriptToEvaluateOnNewDocument(ctx, page.NewAddScriptToEvaluateOnNewDocumentArgs("if (window === window.top) ("+activityJS+")(0, 0, 0);"))
		if err != nil {
			return p.wrap(ctx, "track activity", err)
		}
		// A document committing as the script was added may lack it:
		// the next one is installed here too (at once if it has it).
		p.trackedAfter = p.Document() + 1
	}
	_, err := p.client.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs("("+activityJS+")(0, 0, 0)").SetReturnByValue(true).SetSilent(true))
	return p.wrap(ctx, "track activity", err)
}

// AskRenderings has the tracker ask the page for the two renderings a
// settle on an action begun at since waits for, and returns without
// waiting for them: a read meanwhile (a new document's frame content,
// right after its load) overlaps them, and the settle after it finds
// them done. Where no tracker is, it is installed.
func (p *Page) AskRenderings(ctx context.Context, since time.Time) error {
	at := strconv.FormatInt(since.UnixMilli(), 10)
	_, err := p.client.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs("("+activityJS+")(0, 0, "+at+")").SetReturnByValue(true).SetSilent(true))
	return p.wrap(ctx, "ask renderings", err)
}

// SettleActivity waits until the short timers set since since (the
// action's start, up to activityChain after it) have run, no request is
// in flight (but long ones: a poll, a stream), the page has rendered
// twice since (what runs at a rendering has run: an IntersectionObserver
// loading more as the page scrolled), and the DOM has not changed for
// activityStill, or ctx ends (then it returns what it saw, without an
// error: the page is read as it is, and later settles in this document
// wait only for the renderings and the requests in flight as they
// begin: see ActivityWait.Restless).
func (p *Page) SettleActivity(ctx context.Context, since time.Time) (ActivityWait, error) {
	began := time.Now()
	doc := p.Document()
	w := ActivityWait{Restless: p.restless != 0 && p.restless == doc}
	var inFlight []string
	if w.Restless {
		inFlight = p.decoder.net.busyRequests()
	}
	// Timers set a little before the action began count (the page's
	// clock is read apart from the node's); the renderings must come
	// after it.
	expr := "(" + activityJS + ")(" + strconv.FormatInt(since.Add(-activitySlack).UnixMilli(), 10) + ", " +
		strconv.FormatInt(since.Add(activityChain).UnixMilli(), 10) + ", " + strconv.FormatInt(since.UnixMilli(), 10) + ")"
	for first := true; ; first = false {
		r, err := p.client.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(expr).SetReturnByValue(true).SetSilent(true))
		if err != nil {
			if ctx.Err() != nil {
				return p.ranOut(w, began, doc), nil
			}
			return w, p.wrap(ctx, "settle", err)
		}
		var seen [4]json.RawMessage
		var timers, rendered int
		var still float64
		var fresh bool
		if r.ExceptionDetails != nil || json.Unmarshal(r.Result.Value, &seen) != nil ||
			json.Unmarshal(seen[0], &timers) != nil || json.Unmarshal(seen[1], &still) != nil ||
			json.Unmarshal(seen[2], &fresh) != nil || json.Unmarshal(seen[3], &rendered) != nil {
			// A page that broke the tracker: the DOM and the network only.
			timers, still, rendered = 0, float64(activityStill/time.Millisecond), 1
		}
		if first {
			w.Fresh = fresh
		}
		requests := len(p.decoder.net.busyRequests())
		w.Timers, w.Requests = max(w.Timers, timers), max(w.Requests, requests)
		quiet := timers == 0 && requests == 0 && rendered == 1
		if w.Restless {
			quiet, still = rendered == 1 && p.decoder.net.ended(inFlight), float64(activityStill/time.Millisecond)
		}
		if quiet && time.Duration(still)*time.Millisecond >= activityStill {
			w.Waited = time.Since(began)
			return w, nil
		}
		pause := activityPoll
		if rest := activityStill - time.Duration(still)*time.Millisecond; quiet && rest < pause {
			pause = rest
		}
		if rendered == 0 {
			pause = min(pause, activityFramePoll)
		}
		select {
		case <-ctx.Done():
			if p.lost() {
				return w, ErrConnectionLost
			}
			return p.ranOut(w, began, doc), nil
		case <-time.After(pause):
		}
	}
}

// ranOut is w of a settle in document doc whose bound ended first: the
// document is restless from now on.
func (p *Page) ranOut(w ActivityWait, began time.Time, doc uint64) ActivityWait {
	w.Waited = time.Since(began)
	if !w.Restless && p.Document() == doc {
		w.RanOut, p.restless = true, doc
	}
	return w
}
