package cdpdriver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mafredri/cdp/protocol/dom"
)

// selectJS chooses the option of a native <select> whose value, or else
// whose visible text, is the wanted one, and fires input and change as a
// user's choice would. A disabled select or option is refused, as a user
// could not choose it either.
const selectJS = `function (selector, want) {` + findElementJS + `
	if (el.localName !== "select") return {error: "input", reason: "element " + selector + " is a <" + el.localName + ">, not a <select>"};
	if (el.disabled) return {error: "input", reason: "element " + selector + " is disabled"};
	let opt = Array.from(el.options).find(o => o.value === want);
	if (!opt) opt = Array.from(el.options).find(o => o.text.trim() === want.trim());
	if (!opt) return {error: "nooption", reason: want};
	const group = opt.parentElement;
	if (opt.disabled || group && group.localName === "optgroup" && group.disabled) {
		return {error: "input", reason: "option " + JSON.stringify(want) + " of " + selector + " is disabled"};
	}
	el.value = opt.value;
	opt.selected = true;
	el.dispatchEvent(new Event("input", {bubbles: true}));
	el.dispatchEvent(new Event("change", {bubbles: true}));
	return {};
}`

// Select chooses an option of a native <select> by value, or by its text
// when no value matches (DR-013's select, with input and change events).
func (p *Page) Select(ctx context.Context, selector, value string) error {
	return p.callOnDocument(ctx, "select", selector, selectJS, false, nil, value)
}

// scrollIntoViewJS scrolls an element to the centre of the viewport,
// instantly (DR-013).
const scrollIntoViewJS = `function (selector) {` + findElementJS + `
	el.scrollIntoView({block: "center", inline: "nearest", behavior: "instant"});
	return {};
}`

// scrollJS scrolls an element (the selector's) or the page to or by a
// position, instantly, and answers where its scroller is then. The page
// is the window, unless the window cannot move (html and body keep
// overflow hidden, as apps with a scrolling pane do): then it is the
// scroller a mouse wheel in the middle of the viewport would move.
const scrollJS = `function (selector, by, x, y) {` + lookupJS + describeJS + `
	const move = (s) => { const o = {left: x, top: y, behavior: "instant"}; if (by) s.scrollBy(o); else s.scrollTo(o); };
	const answer = (el) => el ? {scroller: describe(el), x: el.scrollLeft, y: el.scrollTop} : {scroller: "window", x: scrollX, y: scrollY};
	if (selector) {
		const found = lookup(this, selector);
		if (found.error) return found;
		const el = found.el;
		if (el === document.documentElement || el === document.body || el === document.scrollingElement) {
			move(window);
			return answer(null);
		}
		move(el);
		return answer(el);
	}
	const before = [scrollX, scrollY];
	move(window);
	const asked = by ? x !== 0 || y !== 0 : x !== before[0] || y !== before[1];
	if (!asked || scrollX !== before[0] || scrollY !== before[1]) return answer(null);
	const scrolls = (el) => {
		const s = getComputedStyle(el);
		return (/(auto|scroll|overlay)/.test(s.overflowY) && el.scrollHeight > el.clientHeight) ||
			(/(auto|scroll|overlay)/.test(s.overflowX) && el.scrollWidth > el.clientWidth);
	};
	for (let el = document.elementFromPoint(innerWidth / 2, innerHeight / 2); el; el = el.parentElement || el.getRootNode().host || null) {
		if (el !== document.documentElement && el !== document.body && scrolls(el)) {
			move(el);
			return answer(el);
		}
	}
	return answer(null);
}`

// ScrollPosition is where a scroll left the scroller it moved: "window",
// or the element (div#app), and its scroll offsets.
type ScrollPosition struct {
	Scroller string  `json:"scroller"`
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
}

// ScrollIntoView scrolls the element matching selector into view.
func (p *Page) ScrollIntoView(ctx context.Context, selector string) error {
	return p.callOnDocument(ctx, "scroll", selector, scrollIntoViewJS, false, nil)
}

// Scroll scrolls the element matching selector, or with selector "" the
// page (see scrollJS), to x,y, or by x,y when by is set.
func (p *Page) Scroll(ctx context.Context, selector string, x, y float64, by bool) (ScrollPosition, error) {
	var r struct {
		elementReply
		ScrollPosition
	}
	err := p.callOnDocument(ctx, "scroll", selector, scrollJS, false, &r, by, x, y)
	return r.ScrollPosition, err
}

// fileInputJS checks the element is a file input that can take the files.
const fileInputJS = `function (selector, count) {` + findElementJS + `
	if (el.localName !== "input" || el.type !== "file") return {error: "input", reason: "element " + selector + " is not an <input type=file>"};
	if (el.disabled) return {error: "input", reason: "element " + selector + " is disabled"};
	if (count > 1 && !el.multiple) return {error: "input", reason: "element " + selector + " takes one file (no multiple attribute), got " + count};
	return {};
}`

// Upload sets the files of an <input type=file> (DOM.setFileInputFiles);
// the page sees input and change events as after a user's choice. The
// paths are on the machine the browser runs on; each must be a readable
// file.
func (p *Page) Upload(ctx context.Context, selector string, files []string) error {
	abs := make([]string, len(files))
	for i, f := range files {
		a, err := readableFile(f)
		if err != nil {
			return &InputError{Msg: fmt.Sprintf("upload file %s: %v", f, err)}
		}
		abs[i] = a
	}
	if err := p.callOnDocument(ctx, "upload", selector, fileInputJS, false, nil, len(files)); err != nil {
		return err
	}
	el, err := p.element(ctx, selector)
	if err != nil {
		return err
	}
	defer p.release(el)
	args := dom.NewSetFileInputFilesArgs(abs).SetObjectID(el)
	return p.wrap(ctx, "upload", p.client.DOM.SetFileInputFiles(ctx, args))
}

// readableFile is name's absolute path, or why it is not a file framebus
// can read: "no such file or directory", not the stat call that said so.
func readableFile(name string) (string, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	f, err := os.Open(abs)
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil && fi.IsDir() {
			err = errors.New("is a directory")
		}
		f.Close()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return abs, err
}
