package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
