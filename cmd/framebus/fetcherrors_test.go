package main

import (
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
)

// framebus fetch prints the node's own code and message, never "no
// framebus node running", when the node answered: bad_request for a URL
// it refuses, fetch_failed for a server that cannot be reached, timeout
// for one that does not answer in time.
func TestFetchSaysTheNodesError(t *testing.T) {
	hang := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	defer close(hang)
	n := startNode(t)
	for _, tc := range []struct {
		args       []string
		code, says string
	}{
		{[]string{"fetch", "ftp://example.test/file"}, "bad_request", "url:"},
		{[]string{"fetch", "http://127.0.0.1:1/"}, "fetch_failed", "127.0.0.1:1"},
		{[]string{"fetch", silent.URL + "/slow", "--timeout", "300ms"}, "timeout", ""},
	} {
		r := framebus(t, n.env, "", tc.args...)
		m := r.reply(t)
		msg, _ := m["error"].(string)
		if r.status != exitFailed || m["code"] != tc.code || msg == noNodeMessage || !strings.Contains(msg, tc.says) {
			t.Errorf("%q: exit %d, %s; want exit 1 with the node's %s", tc.args, r.status, r.stdout, tc.code)
		}
	}
}

// errNoNode says "no framebus node running" only when nothing answered.
func TestErrNoNodeOnlyWhenNothingAnswered(t *testing.T) {
	noResponders := &protocol.Error{Code: protocol.CodeUnavailable, Message: "nothing on the bus answers x", Err: nats.ErrNoResponders}
	notHereYet := &protocol.Error{Code: protocol.CodeUnavailable, Message: "tab T is on node one, which answers, but ...", Err: errors.Join(busclient.ErrTabNotHereYet, nats.ErrNoResponders)}
	for _, tc := range []struct {
		cause  error
		noNode bool
	}{
		{noResponders, true},
		{fs.ErrNotExist, true},
		{notHereYet, false},
		{protocol.Errorf(protocol.CodeBadRequest, "url: not http"), false},
		{protocol.Errorf(protocol.CodeFetchFailed, "connection refused"), false},
		{protocol.Errorf(protocol.CodeTimeout, "no answer on x"), false},
		{protocol.Errorf(protocol.CodeOutcomeUnknown, "plan p was sent ..."), false},
		{protocol.Errorf(protocol.CodeUnavailable, "the bus connection was lost while waiting for the answer on x"), false},
		{protocol.Errorf(protocol.CodePermissionDenied, "permission denied"), false},
	} {
		err := errNoNode(tc.cause)
		if said := err.Error() == noNodeMessage; said != tc.noNode || !tc.noNode && err != tc.cause {
			t.Errorf("errNoNode(%v) = %v", tc.cause, err)
		}
	}
}
