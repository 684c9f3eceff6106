package client

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// The server refuses what a user may not do with an asynchronous -ERR
// that names the subject, and goes on; nats.go hands it to the error
// handler only. A request to a subject the user may not publish to would
// wait for its deadline, so the client matches the subject in the error
// to the calls waiting on it and fails them at once.
var (
	publishViolation   = regexp.MustCompile(`Permissions Violation for Publish to "([^"]+)"`)
	subscribeViolation = regexp.MustCompile(`Permissions Violation for Subscription to "([^"]+)"`)
)

// permissionWatch is the set of calls waiting that a permission error
// may end.
type permissionWatch struct {
	mu      sync.Mutex
	next    int
	waiters map[int]*permissionWaiter
}

// permissionWaiter is one waiting call: match says whether a refused
// publish (subscribe false) or subscription to subject is its.
type permissionWaiter struct {
	match func(subscribe bool, subject string) bool
	err   chan error // buffered: the first error only
}

func (w *permissionWatch) init() { w.waiters = map[int]*permissionWaiter{} }

// watch registers a waiting call; stop removes it.
func (w *permissionWatch) watch(match func(subscribe bool, subject string) bool) (errs <-chan error, stop func()) {
	pw := &permissionWaiter{match: match, err: make(chan error, 1)}
	w.mu.Lock()
	id := w.next
	w.next++
	w.waiters[id] = pw
	w.mu.Unlock()
	return pw.err, func() {
		w.mu.Lock()
		delete(w.waiters, id)
		w.mu.Unlock()
	}
}

// refused fails the calls a refusal matches.
func (w *permissionWatch) refused(subscribe bool, subject string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, pw := range w.waiters {
		if pw.match(subscribe, subject) {
			select {
			case pw.err <- err:
			default:
			}
		}
	}
}

// failAll fails every waiting call (the connection is closed).
func (w *permissionWatch) failAll(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, pw := range w.waiters {
		select {
		case pw.err <- err:
		default:
		}
	}
}

// asyncError is the nats error handler: permission violations fail the
// calls waiting on their subject.
func (c *Client) asyncError(_ *nats.Conn, _ *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	if m := publishViolation.FindStringSubmatch(err.Error()); m != nil {
		c.perms.refused(false, m[1], c.denied("publish", m[1], err))
	}
	if m := subscribeViolation.FindStringSubmatch(err.Error()); m != nil {
		c.perms.refused(true, m[1], c.denied("subscribe", m[1], err))
	}
}

// denied is the permission_denied error for what the server refused,
// as protocol words it: "permission denied: observer may not publish to
// framebus.tab.t1.plan".
func (c *Client) denied(verb, subject string, cause error) *protocol.Error {
	err := protocol.PermissionDenied(c.creds.Role, verb, subject)
	if verb == "subscribe" && c.isInbox(subject) {
		err.Message += fmt.Sprintf(" (replies must come to the user's own inbox prefix, %s)", inboxFor(c.creds.User))
	}
	err.Err = cause
	return err
}

// subjectIs matches a refused publish to subject, and a refused
// subscription to the client's reply inboxes (a request's answer could
// never arrive).
func (c *Client) subjectIs(subject string) func(bool, string) bool {
	return func(subscribe bool, refused string) bool {
		if subscribe {
			return c.isInbox(refused)
		}
		return refused == subject
	}
}

// jetStreamCalls matches a refused JetStream API call and a refused
// inbox subscription: what watching or reading the history needs.
func (c *Client) jetStreamCalls(subscribe bool, refused string) bool {
	if subscribe {
		return c.isInbox(refused)
	}
	return strings.HasPrefix(refused, "$JS.") || strings.HasPrefix(refused, c.apiSubject(""))
}

func (c *Client) isInbox(subject string) bool {
	return strings.HasPrefix(subject, "_INBOX")
}
