package cdpdriver

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/mafredri/cdp/protocol/runtime"
)

// A value too large to return is refused where it is made, in the page,
// before Chromium serializes it: carrying 100 MB over the DevTools
// connection takes longer than any deadline (17 MB already takes seconds),
// and then the bus could not carry it either. The page compares a
// string's length, or an object's JSON length, with the limit: a string
// of n UTF-16 units is at least n bytes as UTF-8 JSON, so a value over
// the limit by length is over it in bytes. A value under it by length
// but over in bytes (escapes, non-ASCII) is still caught after it
// arrives, by the reply's own size check.

// ResultTooLargeError: an action's value is larger than a reply carries.
// The action ran (an eval's expression was evaluated); only its value is
// left out.
type ResultTooLargeError struct {
	What  string // "the eval value", "the page's text", ...
	Size  int    // characters (a string's length, an object's JSON length) or bytes
	Limit int
}

func (e *ResultTooLargeError) Error() string {
	return fmt.Sprintf("%s is %d characters, more than the %d bytes a reply carries: ask for less (a selector, a part of the value)", e.What, e.Size, e.Limit)
}

// SetResultLimit sets the size above which an action's value is refused
// with a *ResultTooLargeError (0: no limit), for the values this page
// returns to an action: Eval, Text, HTML, Snapshot and Screenshot. (A
// frame's content, which travels in chunks, has its own limit:
// SetContentLimit.)
func (p *Page) SetResultLimit(n int) { p.resultLimit = n }

// SetContentLimit sets the size above which Content refuses the page's
// content with a *ResultTooLargeError (0: no limit), in the page, so a
// page of a gigabyte costs the node nothing.
func (p *Page) SetContentLimit(n int) { p.contentLimit = n }

// tooLargeJS defines tooLarge(what, s, max): null when the string s fits
// max (0: no limit), else the answer an element function gives for it.
const tooLargeJS = `
	const tooLarge = (what, s, max) => max > 0 && s.length > max ? {error: "toolarge", reason: what, size: s.length, limit: max} : null;
`

// evalGuardPrefix starts an expression whose value the page checks before
// it is returned (the expression follows in parentheses, on lines of its
// own so a trailing line comment cannot swallow the closing one). A
// promise is checked when it settles, as awaitPromise then returns its
// value. An object's JSON length is a cheap stand-in for its serialized
// size; a value JSON cannot carry (a cycle, a BigInt) is left to
// Chromium, and so is the window (which eval leaves out). It is kept
// short: every eval carries it, and V8 parses it each time.
const evalGuardPrefix = `((m, v) => {
const c = (v) => {
let n = typeof v == "string" ? v.length : 0;
if (typeof v == "object" && v && v !== globalThis) try { n = JSON.stringify(v).length } catch (e) {}
if (n > m) throw new RangeError("` + tooLargeMark + `" + n + ":" + m);
return v };
return v instanceof Promise ? v.then(c) : c(v) })(`

const tooLargeMark = "framebus:result_too_large:"

// declaration matches a script that starts by declaring a function or a
// class: in parentheses it would be an expression and declare nothing.
var declaration = regexp.MustCompile(`^(async\s+)?(function|class)\b`)

// guardedExpression wraps expression in the size check, or says it
// cannot: a declaration, or no limit. A script of statements also cannot
// be wrapped, which only evaluating it tells (a syntax error; see Eval).
func guardedExpression(expression string, limit int) (string, bool) {
	t := strings.TrimSpace(expression)
	if limit <= 0 || declaration.MatchString(t) {
		return expression, false
	}
	// "document.title;" is an expression too.
	t = strings.TrimRight(t, "; \t\r\n")
	return evalGuardPrefix + strconv.Itoa(limit) + ", (\n" + t + "\n))", true
}

// tooLargeException recognises the size check's exception.
func tooLargeException(d *runtime.ExceptionDetails) (*ResultTooLargeError, bool) {
	if d.Exception == nil || d.Exception.Description == nil {
		return nil, false
	}
	rest, ok := strings.CutPrefix(*d.Exception.Description, "RangeError: "+tooLargeMark)
	if !ok {
		return nil, false
	}
	rest, _, _ = strings.Cut(rest, "\n")
	size, limit, _ := strings.Cut(rest, ":")
	n, err1 := strconv.Atoi(size)
	max, err2 := strconv.Atoi(limit)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	return &ResultTooLargeError{What: "the eval value", Size: n, Limit: max}, true
}
