package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// observerUser may read frames, their history and the tab list, and
// nothing that changes a browser (as contracts20.md gives the role).
func observerUser(name string) *server.User {
	var js []string
	for _, s := range []string{subj.FrameStream(), "OBJ_" + subj.ContentBucket()} {
		js = append(js, "$JS.API.STREAM.INFO."+s, "$JS.API.STREAM.MSG.GET."+s,
			"$JS.API.DIRECT.GET."+s, "$JS.API.DIRECT.GET."+s+".>",
			"$JS.API.CONSUMER.CREATE."+s, "$JS.API.CONSUMER.CREATE."+s+".>",
			"$JS.API.CONSUMER.INFO."+s+".>", "$JS.API.CONSUMER.DELETE."+s+".>",
			"$JS.API.CONSUMER.MSG.NEXT."+s+".>", "$JS.FC."+s+".>")
	}
	return &server.User{Username: name, Password: name + "-secret", Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: append(js, "$JS.API.INFO", subj.Tabs(), subj.BrowserStatus())},
		Subscribe: &server.SubjectPermission{Allow: []string{protocol.InboxPrefix(name) + ".>", subj.AllFrames()}},
	}}
}

func observerCreds(s *server.Server, name string) *protocol.Credentials {
	return &protocol.Credentials{URL: s.ClientURL(), User: name, Password: name + "-secret",
		Role: protocol.RoleObserver, InboxPrefix: protocol.InboxPrefix(name)}
}

// A request the user's role forbids is permission_denied at once, naming
// the role and the subject, long before any deadline; what the role
// allows (tabs, watching) works on the same connection.
func TestPermissionDenied(t *testing.T) {
	s := testServer(t, nodeUser(), observerUser("obs"))
	node := nodeConn(t, s)
	frameHistory(t, node, 100)
	answerPlans(t, node, "t1", 0)
	publish(t, node, frame("t1", 1))
	obs := connect(t, s.ClientURL(), observerCreds(s, "obs"), nil)

	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	_, err := obs.Plan(ctx, "t1", evalPlan(""))
	if codeOf(err) != protocol.CodePermissionDenied || ctx.Err() != nil {
		t.Fatalf("an observer's plan: %v (context: %v), want permission_denied before the deadline", err, ctx.Err())
	}
	if want := "permission denied: observer may not publish to framebus.tab.t1.plan"; !strings.Contains(err.Error(), want) {
		t.Errorf("message %q does not say %q", err, want)
	}
	for name, call := range map[string]func() error{
		"cancel":    func() error { _, err := obs.Cancel(ctx, "t1", "p-1"); return err },
		"new tab":   func() error { _, err := obs.NewTab(ctx, "", ""); return err },
		"close tab": func() error { _, err := obs.CloseTab(ctx, "", "t1"); return err },
		"launch":    func() error { return obs.Lifecycle(ctx, "", protocol.OpLaunch, nil, nil) },
		"close":     func() error { return obs.Lifecycle(ctx, "", protocol.OpClose, nil, nil) },
		"session": func() error {
			_, err := obs.StartSession(ctx, protocol.SessionStartRequest{Domain: "example.com"})
			return err
		},
	} {
		if err := call(); codeOf(err) != protocol.CodePermissionDenied {
			t.Errorf("%s: %v, want permission_denied", name, err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the refusals took until the deadline")
	}

	w, err := obs.Watch(ctx, "t1", 1)
	if err != nil {
		t.Fatalf("an observer's watch: %v", err)
	}
	defer w.Stop()
	if f := next(t, w); f.Sequence != 1 {
		t.Fatalf("frame %d", f.Sequence)
	}
}

// A user whose role has no access to the history is refused the watch
// at once: permission_denied, not a JetStream timeout.
func TestWatchDenied(t *testing.T) {
	u := observerUser("blind")
	u.Permissions.Publish.Allow = []string{subj.Tabs()}
	s := testServer(t, nodeUser(), u)
	frameHistory(t, nodeConn(t, s), 100)
	c := connect(t, s.ClientURL(), observerCreds(s, "blind"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	if _, err := c.Watch(ctx, "t1", 1); codeOf(err) != protocol.CodePermissionDenied || ctx.Err() != nil {
		t.Fatalf("watch: %v, want permission_denied before the deadline", err)
	}
}
