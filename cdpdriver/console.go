package cdpdriver

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mafredri/cdp/protocol/log"
	"github.com/mafredri/cdp/protocol/runtime"
)

// Console messages are read on demand, not followed. The browser keeps a
// document's console messages and uncaught exceptions itself (V8's
// console message storage, the last 1000; Blink's own messages, such as a
// failed resource, likewise), and replays them to a client that enables
// Runtime or Log: that is how DevTools, opened late, shows what came
// before. So Console enables both for one round trip each, collects the
// replay, and disables them again. While a page runs, framebus keeps
// Runtime and Log off: a page logging in a loop costs the node nothing
// (no event per message, no memory), and a page cannot tell from its
// console that a debugger listens (Runtime.enable's serialization of
// logged objects is a known tell).

// ConsoleTextLimit is the most bytes of one message's text kept; a longer
// one is cut and marked truncated.
const ConsoleTextLimit = 10 << 10

// consoleCollecting bounds what one Console call collects: the replay
// (V8's and Blink's stores) and what the page logs during it.
const consoleCollecting = 4000

// v8ConsoleKept is how many messages V8 keeps per page: a replay of that
// many means older ones were dropped.
const v8ConsoleKept = 1000

// ConsoleMessage is one console message, uncaught exception or browser
// message (a resource that failed to load, a security warning).
type ConsoleMessage struct {
	// Level is error, warning, info, log or debug.
	Level string `json:"level"`
	// Source is "console" (console.log and the like), "exception" (an
	// uncaught error or rejected promise), or the browser's own kind of
	// message: network, security, violation, deprecation, intervention, ...
	Source string `json:"source"`
	// Text is the message as DevTools shows it: the arguments joined by
	// spaces, format specifiers (%s, %d, %o, ...) applied, objects by
	// their description (Object, Array(3), Error: boom and its stack).
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"` // Text was cut at ConsoleTextLimit
	URL       string `json:"url,omitempty"`
	// Line and Column are where it was logged, from 1 (0: unknown).
	Line   int       `json:"line,omitempty"`
	Column int       `json:"column,omitempty"`
	Time   time.Time `json:"time"`
}

// ConsoleLog is what Console read.
type ConsoleLog struct {
	Messages []ConsoleMessage // oldest first
	// Full: the browser's store was full, so messages older than the
	// first were dropped (how many, it does not say).
	Full bool
}

// consoleCollector gathers the console events of one Console call, in
// the connection's reader goroutine.
type consoleCollector struct {
	mu       sync.Mutex
	messages []ConsoleMessage
	v8       int // console and exception messages: V8's store
	over     bool
}

func (c *consoleCollector) add(method string, params json.RawMessage) {
	m, ok := decodeConsole(method, params)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Source == "console" || m.Source == "exception" {
		c.v8++
	}
	if len(c.messages) >= consoleCollecting {
		c.over = true
		return
	}
	c.messages = append(c.messages, m)
}

// Console returns the console messages of the page's current document,
// oldest first (see the top of this file); clear empties the browser's
// stores after reading them.
func (p *Page) Console(ctx context.Context, clear bool) (ConsoleLog, error) {
	c := &consoleCollector{}
	p.decoder.console.Store(c)
	defer p.decoder.console.Store(nil)
	err := p.readConsole(ctx, clear)
	if err != nil {
		return ConsoleLog{}, p.wrap(ctx, "read the console", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs := c.messages
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].Time.Before(msgs[j].Time) })
	return ConsoleLog{Messages: msgs, Full: c.v8 >= v8ConsoleKept || c.over}, nil
}

// readConsole has the browser replay its stored messages, and leaves
// Runtime and Log disabled however it ends.
func (p *Page) readConsole(ctx context.Context, clear bool) error {
	c := p.client
	defer func() {
		// On a context of its own: an action past its deadline still
		// leaves the domains off. The objects the replay made for
		// logged arguments are released with them.
		dctx, cancel := context.WithTimeout(p.conn.Context(), 5*time.Second)
		defer cancel()
		_ = c.Runtime.ReleaseObjectGroup(dctx, runtime.NewReleaseObjectGroupArgs("console"))
		_ = c.Runtime.Disable(dctx)
		_ = c.Log.Disable(dctx)
	}()
	// The replay comes before each enable's reply, and the codec takes
	// events off the wire before a reply reaches its caller.
	if err := c.Runtime.Enable(ctx); err != nil {
		return err
	}
	if err := c.Log.Enable(ctx); err != nil {
		return err
	}
	if !clear {
		return nil
	}
	if err := c.Runtime.DiscardConsoleEntries(ctx); err != nil {
		return err
	}
	return c.Log.Clear(ctx)
}

// decodeConsole is the message of a console event, if params are one.
func decodeConsole(method string, params json.RawMessage) (ConsoleMessage, bool) {
	switch method {
	case "Runtime.consoleAPICalled":
		var ev runtime.ConsoleAPICalledReply
		if json.Unmarshal(params, &ev) != nil {
			return ConsoleMessage{}, false
		}
		level, ok := consoleLevels[ev.Type]
		if !ok {
			return ConsoleMessage{}, false // endGroup, clear, profile: no message
		}
		m := ConsoleMessage{Level: level, Source: "console", Time: epochMillis(float64(ev.Timestamp))}
		m.Text, m.Truncated = capText(formatConsoleArgs(ev.Args))
		if ev.Type == "assert" {
			m.Text, m.Truncated = capText("Assertion failed: " + m.Text)
		}
		if ev.StackTrace != nil && len(ev.StackTrace.CallFrames) > 0 {
			f := ev.StackTrace.CallFrames[0]
			m.URL, m.Line, m.Column = f.URL, f.LineNumber+1, f.ColumnNumber+1
		}
		return m, true
	case "Runtime.exceptionThrown":
		var ev runtime.ExceptionThrownReply
		if json.Unmarshal(params, &ev) != nil {
			return ConsoleMessage{}, false
		}
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + remoteText(*d.Exception)
		}
		m := ConsoleMessage{Level: "error", Source: "exception", Time: epochMillis(float64(ev.Timestamp)), Line: d.LineNumber + 1, Column: d.ColumnNumber + 1}
		if d.URL != nil {
			m.URL = *d.URL
		}
		m.Text, m.Truncated = capText(text)
		return m, true
	case "Log.entryAdded":
		var ev log.EntryAddedReply
		if json.Unmarshal(params, &ev) != nil {
			return ConsoleMessage{}, false
		}
		e := ev.Entry
		level := e.Level
		if level == "verbose" {
			level = "debug"
		}
		m := ConsoleMessage{Level: level, Source: e.Source, Time: epochMillis(float64(e.Timestamp))}
		if e.URL != nil {
			m.URL = *e.URL
		}
		if e.LineNumber != nil {
			m.Line = *e.LineNumber + 1
		}
		m.Text, m.Truncated = capText(e.Text)
		return m, true
	}
	return ConsoleMessage{}, false
}

// consoleLevels maps console API calls to their level, as DevTools
// files them.
var consoleLevels = map[string]string{
	"log": "log", "dir": "log", "dirxml": "log", "table": "log", "trace": "log", "count": "log", "timeEnd": "log",
	"startGroup": "log", "startGroupCollapsed": "log",
	"debug": "debug", "info": "info", "warning": "warning", "error": "error", "assert": "error",
}

// formatConsoleArgs renders a console call's arguments as DevTools does:
// a first argument that is a string applies its format specifiers to the
// ones after it; the rest follow, joined by spaces.
func formatConsoleArgs(args []runtime.RemoteObject) string {
	var b strings.Builder
	rest := args
	if len(args) > 0 && args[0].Type == "string" {
		format := remoteText(args[0])
		rest = args[1:]
		for i := 0; i < len(format); i++ {
			if format[i] != '%' || i+1 == len(format) {
				b.WriteByte(format[i])
				continue
			}
			verb := format[i+1]
			if verb == '%' {
				b.WriteByte('%')
				i++
				continue
			}
			if !strings.ContainsRune("sdifoOc", rune(verb)) || len(rest) == 0 {
				b.WriteByte('%')
				continue
			}
			arg := rest[0]
			rest = rest[1:]
			i++
			switch verb {
			case 'c': // CSS: no text
			case 'd', 'i':
				b.WriteString(integerText(arg))
			default:
				b.WriteString(remoteText(arg))
			}
			if b.Len() > ConsoleTextLimit {
				return b.String()
			}
		}
	}
	for _, a := range rest {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(remoteText(a))
		if b.Len() > ConsoleTextLimit {
			break
		}
	}
	return b.String()
}

// remoteText is a value as DevTools prints it: strings bare, other
// primitives as written in JavaScript, objects by their description.
func remoteText(o runtime.RemoteObject) string {
	switch o.Type {
	case "string":
		var s string
		if json.Unmarshal(o.Value, &s) == nil {
			return s
		}
	case "undefined":
		return "undefined"
	case "object":
		if o.Subtype != nil && *o.Subtype == "null" {
			return "null"
		}
	}
	if o.UnserializableValue != nil {
		return string(*o.UnserializableValue)
	}
	if o.Description != nil {
		return *o.Description
	}
	if len(o.Value) > 0 {
		return string(o.Value)
	}
	return o.Type
}

// integerText is %d of a value: a number's integer part, else NaN.
func integerText(o runtime.RemoteObject) string {
	var f float64
	if o.Type != "number" || json.Unmarshal(o.Value, &f) != nil {
		if o.Type == "bigint" {
			return remoteText(o)
		}
		return "NaN"
	}
	return strconv.FormatFloat(math.Trunc(f), 'f', -1, 64)
}

// capText cuts s at ConsoleTextLimit, on a character boundary.
func capText(s string) (string, bool) { return capTextAt(s, ConsoleTextLimit) }

// capTextAt cuts s at n bytes, on a character boundary, and says whether
// it did.
func capTextAt(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// epochMillis is a CDP timestamp in milliseconds since the epoch.
func epochMillis(ms float64) time.Time {
	return time.UnixMilli(0).Add(time.Duration(ms * float64(time.Millisecond))).UTC()
}
