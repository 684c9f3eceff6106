package actors

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// The page's logs: console (its console messages and uncaught errors)
// and network (its requests), both of the current document, both
// read-only. Neither is followed by the tab: the browser keeps the
// console (see cdpdriver/console.go), and the driver's request log is a
// bounded ring kept off the tab's goroutine (cdpdriver/requestlog.go).

// consoleValue is the value of a console action.
type consoleValue struct {
	Messages []cdpdriver.ConsoleMessage `json:"messages"`
	// Omitted is how many messages of the level asked for were left out
	// of this answer, the oldest: past limit, or more than one reply
	// carries.
	Omitted int `json:"omitted,omitempty"`
	// Full: the browser keeps the last protocol.ConsoleKept messages of a
	// document, and had that many: older ones were dropped, uncounted.
	Full bool `json:"full,omitempty"`
}

// consoleSeverity orders the levels; info and log are one.
var consoleSeverity = map[string]int{"error": 4, "warning": 3, "info": 2, "log": 2, "debug": 1}

func (t *Tab) console(ctx context.Context, a protocol.Action) (any, error) {
	log, err := t.page.Console(ctx, a.Clear)
	if err != nil {
		return nil, err
	}
	least := consoleSeverity[a.Level] // 0 with no level: every message
	var msgs []cdpdriver.ConsoleMessage
	for _, m := range log.Messages {
		if consoleSeverity[m.Level] >= least {
			msgs = append(msgs, m)
		}
	}
	v := consoleValue{Full: log.Full}
	v.Messages, v.Omitted = newest(msgs, a.Limit, t.logBudget())
	return v, nil
}

// networkValue is the value of a network action.
type networkValue struct {
	Requests []cdpdriver.Request `json:"requests"`
	// Omitted is how many requests that match were left out of this
	// answer, the oldest: past limit, or more than one reply carries.
	Omitted int `json:"omitted,omitempty"`
	// Dropped is how many older requests of the document the tab let go:
	// it keeps the last cdpdriver.RequestLogSize.
	Dropped int `json:"dropped,omitempty"`
	// Static is how many images, fonts, stylesheets and media that
	// loaded were left out (static lists them).
	Static int `json:"static,omitempty"`
}

// staticTypes are the resource types network leaves out unless asked
// (Playwright's includeStatic), when they loaded.
var staticTypes = map[string]bool{"Image": true, "Font": true, "Stylesheet": true, "Media": true}

func (t *Tab) network(ctx context.Context, a protocol.Action) (any, error) {
	all, dropped := t.page.Requests()
	v := networkValue{Dropped: dropped}
	var reqs []cdpdriver.Request
	for _, r := range all {
		if a.Filter != "" && !strings.Contains(r.URL, a.Filter) {
			continue
		}
		if !a.Static && staticTypes[r.ResourceType] && !r.Failed && !r.Blocked && r.Status < 400 {
			v.Static++
			continue
		}
		reqs = append(reqs, r)
	}
	v.Requests, v.Omitted = newest(reqs, a.Limit, t.logBudget())
	return v, nil
}

// logBudget is the most bytes of a log's answer: half a reply, since the
// rest of the reply, and the plan's other actions, need room too.
func (t *Tab) logBudget() int { return (int(t.nc.MaxPayload()) - replyRoom) / 2 }

// newest keeps the last limit items (0: every one) that fit in budget
// bytes of JSON, and says how many it left out.
func newest[T any](items []T, limit, budget int) ([]T, int) {
	keep := len(items)
	if limit > 0 && keep > limit {
		keep = limit
	}
	size, n := 0, 0
	for i := len(items) - 1; i >= 0 && n < keep; i-- {
		b, err := json.Marshal(items[i])
		if err != nil || size+len(b)+1 > budget {
			break
		}
		size += len(b) + 1
		n++
	}
	out := items[len(items)-n:]
	if out == nil {
		out = []T{} // an empty list, not null
	}
	return out, len(items) - n
}
