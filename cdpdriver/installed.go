package cdpdriver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
)

// Installed functions. An element function framebus calls often is
// installed once per document, as the refs registry is, and later calls
// send a short call of it: a function whose source is sent with every
// call is sent, parsed and compiled each time (pointJS is 6 KB: about a
// sixth of a click's locate round trip), and as a new closure each time
// V8 never keeps its optimised code (a 1,000-row snapshot took a third
// longer).
//
// It is installed in framebus's isolated world (element.go), out of the
// page's reach. As a second guard it carries a token made at start, so a
// function of that name that framebus did not install is never called:
// the call answers "uninstalled", and the install, if the property cannot
// be replaced, runs the function uninstalled.

// installToken marks the functions framebus installs.
var installToken = newInstallToken()

func newInstallToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	return hex.EncodeToString(b[:])
}

// installedFunction is a function installed as window[name] in
// framebus's world: call calls it, or answers {error: "uninstalled"} in a
// document that has none yet; install installs it and calls it.
type installedFunction struct {
	name          string
	call, install string
}

// newInstalledFunction makes the installed function name whose value is
// the JavaScript expression fn, called with this = document.
func newInstalledFunction(name, fn string) installedFunction {
	return installedFunction{
		name: name,
		call: `function (...args) {
	const f = Object.getOwnPropertyDescriptor(window, "` + name + `");
	return f && f.value && f.value.token === "` + installToken + `" ? f.value.apply(this, args) : {error: "uninstalled"};
}`,
		install: `function (...args) {
	const f = (` + fn + `);
	Object.defineProperty(f, "token", {value: "` + installToken + `"});
	try { Object.defineProperty(window, "` + name + `", {value: f}); } catch (e) { /* the page's own, fixed */ }
	return f.apply(this, args);
}`,
	}
}

// callInstalled is callOnDocument for an installed function. A new
// document has none yet: it is installed at once rather than asked for
// first. The generation can lag a navigation, so "uninstalled" still
// falls back to installing.
func (p *Page) callInstalled(ctx context.Context, op, selector string, fn installedFunction, await bool, out answer, args ...any) error {
	gen := p.decoder.generation.Load() + 1 // 0: never installed
	decl := fn.call
	if p.installed[fn.name] != gen {
		decl = fn.install
	}
	err := p.callOnDocument(ctx, op, selector, decl, await, out, args...)
	if errors.Is(err, errUninstalled) {
		decl = fn.install
		err = p.callOnDocument(ctx, op, selector, decl, await, out, args...)
	}
	if decl == fn.install {
		// Installed, or if the call never ran, the next one's
		// "uninstalled" says so.
		if p.installed == nil {
			p.installed = make(map[string]uint64)
		}
		p.installed[fn.name] = gen
	}
	return err
}
