package cdpdriver

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/rpcc"
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
	// FromBrowser: the browser's reply itself was too long, Size and
	// Limit are its bytes and the most framebus reads (see
	// replyTooLongMessage).
	FromBrowser bool
}

func (e *ResultTooLargeError) Error() string {
	if e.FromBrowser {
		return fmt.Sprintf("%s: the browser's reply is %d bytes, more than the %d framebus reads: ask for less (a selector, a part of the value)", e.What, e.Size, e.Limit)
	}
	return fmt.Sprintf("%s is %d characters, more than the %d bytes a reply carries: ask for less (a selector, a part of the value)", e.What, e.Size, e.Limit)
}

// replyTooLongFormat is the error a command gets when the browser's reply
// to it is longer than the transport reads (pipe.go discards it as it
// streams): its size and the bound, in bytes.
const replyTooLongFormat = "framebus: the browser's reply is %d bytes; framebus reads at most %d from the browser (ask for less)"

func replyTooLongMessage(size, limit int) string {
	return fmt.Sprintf(replyTooLongFormat, size, limit)
}

// replyTooLong recognises that error, whether a session's command got it
// (as an error reply) or the transport's own: what it was the reply for
// is then a *ResultTooLargeError.
func replyTooLong(err error, what string) (*ResultTooLargeError, bool) {
	if err == nil {
		return nil, false
	}
	msg := err.Error()
	var rerr *rpcc.ResponseError
	if errors.As(err, &rerr) {
		msg = rerr.Message
	}
	i := strings.Index(msg, "framebus: the browser's reply is ")
	var size, limit int
	if i < 0 {
		return nil, false
	}
	if n, _ := fmt.Sscanf(msg[i:], replyTooLongFormat, &size, &limit); n != 2 {
		return nil, false
	}
	return &ResultTooLargeError{What: what, Size: size, Limit: limit, FromBrowser: true}, true
}

// boundMessages bounds the page's messages over the pipe (not over an
// attach profile's websocket, which rpcc reads whole): three times the
// larger limit, and 1 MiB for the rest of the reply. Chromium sends a
// string value twice (as value and as its deep serialization), each
// non-ASCII character as a \uXXXX escape that the answer keeps; so a
// value whose answer fits a reply takes at most twice that in
// Chromium's, and the third is room for a deep serialization's types.
func (p *Page) boundMessages() {
	if p.codec == nil {
		return
	}
	session, ok := p.codec.conn.(*pipeConn)
	if !ok {
		return
	}
	if n := max(p.resultLimit, p.contentLimit); n > 0 {
		session.setMessageLimit(3*n + 1<<20)
	} else {
		session.setMessageLimit(0)
	}
}

// SetResultLimit sets the size above which an action's value is refused
// with a *ResultTooLargeError (0: no limit), for the values this page
// returns to an action: Eval, Text, HTML, Snapshot and Screenshot. (A
// frame's content, which travels in chunks, has its own limit:
// SetContentLimit.)
func (p *Page) SetResultLimit(n int) { p.resultLimit = n; p.boundMessages() }

// SetContentLimit sets the size above which Content refuses the page's
// content with a *ResultTooLargeError (0: no limit), in the page, so a
// page of a gigabyte costs the node nothing.
func (p *Page) SetContentLimit(n int) { p.contentLimit = n; p.boundMessages() }

// tooLargeJS defines tooLarge(what, s, max): null when the string s fits
// max (0: no limit), else the answer an element function gives for it.
const tooLargeJS = `
	const tooLarge = (what, s, max) => max > 0 && s.length > max ? {error: "toolarge", reason: what, size: s.length, limit: max} : null;
`

// evalGuardPrefix starts an expression whose value the page measures
// before it is returned (the expression follows as an arrow's body, on
// lines of its own so a trailing line comment cannot swallow the closing
// parenthesis). The measure is what Chromium's deep serialization would
// send, walked with a visited set and stopped as soon as it is over the
// limit: strings' lengths, BigInts' digits, own enumerable properties
// (toJSON is not called: deep serialization ignores it), array items,
// Map and Set entries, a node's attributes, and, for the value itself
// only, a function's source and an error's stack (its description crosses
// too; nested ones travel as their type alone, so a webpack chunk list of
// functions is small). Windows (frames') are left out, as the JSON does;
// an array's hole is a null. A thrown value is
// measured as well (its description crosses), and a promise's value or
// reason when it settles, as awaitPromise then returns it. A walk that
// throws (a getter, a proxy) stops where it is. It is kept short: every
// eval carries it, and V8 parses it each time.
const evalGuardPrefix = `((m, f) => {
const z = (v) => {
let n = 0, q = [v], s = new Set, r = v;
const a = (x, d) => (q.push(x), (n += d) > m);
try { while (q.length && n <= m) {
v = q.pop();
const t = typeof v;
if (t == "string") n += v.length + 2;
else if (t == "function") n += v === r ? Function.prototype.toString.call(v).length : 10;
else if (t == "symbol") n += 8;
else if (v === undefined) n += 4;
else if (t != "object" || !v) n += String(v).length;
else if (v !== globalThis && !s.has(v) && Object.prototype.toString.call(v) != "[object Window]") {
s.add(v); n += 2;
if (v === r && typeof v.stack == "string") n += v.stack.length;
if (v instanceof Node) { n += (v.nodeValue || "").length; for (const x of v.attributes || []) n += x.name.length + x.value.length + 4 }
else if (v instanceof Map) { for (const [k, x] of v) if (a(k, 1) || a(x, 1)) break }
else if (v instanceof Set || Array.isArray(v)) { for (const x of v) if (a(x, 1)) break }
else if (!ArrayBuffer.isView(v)) for (const k of Object.keys(v)) if (a(v[k], k.length + 4)) break
} } } catch (e) {}
return n };
const c = (v, w = "") => { const n = z(v); if (n > m) throw new RangeError("` + tooLargeMark + `" + n + ":" + m + w); return v };
const e = (x) => { c(x, ":thrown"); throw x };
let v; try { v = f() } catch (x) { e(x) }
return v instanceof Promise ? v.then(c, e) : c(v) })(`

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
	return evalGuardPrefix + strconv.Itoa(limit) + ", () => (\n" + t + "\n))", true
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
	size, rest, _ := strings.Cut(rest, ":")
	limit, thrown := strings.CutSuffix(rest, ":thrown")
	n, err1 := strconv.Atoi(size)
	max, err2 := strconv.Atoi(limit)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	what := "the eval value"
	if thrown {
		what = "the exception the eval threw (or its promise's reason)"
	}
	return &ResultTooLargeError{What: what, Size: n, Limit: max}, true
}
