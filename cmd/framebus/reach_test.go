package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// What an observer's and an agent's credentials reach besides their
// roles' requests, tried with raw NATS: JetStream management (deleting,
// purging, editing, snapshotting the history, streams of their own that
// would capture others' inboxes or requests), writing the object store,
// $SYS, forged frames and events, the admin's subjects; and subscribing
// to $SYS, to any inbox but their own, to discovery and JetStream API
// requests, to request subjects (answering in a tab's name). The server
// refuses each with a permissions violation; the history is whole after.
func TestRolesReachNothingElse(t *testing.T) {
	t.Parallel() // its own node
	n := startNode(t)
	tab := n.tab()
	mustOK(t, n.env, "eval", "1", "--tab", tab)
	s := protocol.DefaultSubjects
	frames, content := s.FrameStream(), "OBJ_"+s.ContentBucket()
	publish := []string{
		"$JS.API.STREAM.DELETE." + frames, "$JS.API.STREAM.PURGE." + frames, "$JS.API.STREAM.MSG.DELETE." + frames,
		"$JS.API.STREAM.UPDATE." + frames, "$JS.API.STREAM.SNAPSHOT." + frames, "$JS.API.STREAM.DELETE." + content,
		"$JS.API.STREAM.PURGE." + content, "$JS.API.STREAM.CREATE.SPY", "$JS.API.STREAM.LIST", "$JS.API.STREAM.NAMES",
		"$JS.API.CONSUMER.LIST." + frames, "$JS.API.CONSUMER.NAMES." + frames, "$JS.API.CONSUMER.DURABLE.CREATE." + frames + ".d",
		"$JS.API.ACCOUNT.PURGE", "$JS.API.META.LEADER.STEPDOWN", "$JS.API.STREAM.RESTORE." + frames,
		"$O." + s.ContentBucket() + ".C.forged", "$O." + s.ContentBucket() + ".M.forged", "$KV.x.y",
		"$SYS.REQ.SERVER.PING", "$SYS.REQ.ACCOUNT.PING.CONNZ",
		s.TabFrames(tab), s.HistoryFrames(tab), s.Prefix + ".tab." + tab + ".event.console", s.AdminUsers(protocol.UsersList),
		// The history API of a user's account: read-only, no consumers.
		s.JSAPIPrefix() + ".STREAM.DELETE." + frames, s.JSAPIPrefix() + ".STREAM.PURGE." + content,
		s.JSAPIPrefix() + ".STREAM.CREATE.SPY", s.JSAPIPrefix() + ".CONSUMER.CREATE." + frames,
		s.JSAPIPrefix() + ".CONSUMER.CREATE." + content, "$JS.API.CONSUMER.CREATE." + frames,
		s.JSAPIPrefix() + ".CONSUMER.MSG.NEXT." + content + ".c", s.JSAPIPrefix() + ".STREAM.LIST",
	}
	subscribe := []string{
		">", "$SYS.>", "_INBOX.>", "_INBOX_agent.>", "_INBOX_admin.>", "$SRV.>", "$JS.API.>", "$JS.EVENT.>", "$O.>",
		s.TabPlan(tab), s.Tabs(), s.Prefix + ".admin.>", s.Prefix + ".browser.>",
	}
	for _, role := range []string{protocol.RoleObserver, protocol.RoleAgent} {
		t.Run(role, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), role+".json")
			mustOK(t, n.env, "creds", "add", "probe-"+role, "--role", role, "--out", file)
			var mu sync.Mutex
			var refused []string
			nc, err := nats.Connect(n.state.Bus, nats.UserInfo("probe-"+role, readPassword(t, file)), nats.CustomInboxPrefix("_INBOX_probe-"+role),
				nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
					if _, subject, ok := protocol.ParsePermissionViolation(err.Error()); ok {
						mu.Lock()
						refused = append(refused, subject)
						mu.Unlock()
					}
				}))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			for _, subject := range publish {
				if err := nc.PublishRequest(subject, "_INBOX_probe-"+role+".x", nil); err != nil {
					t.Fatal(err)
				}
			}
			for _, subject := range subscribe {
				if _, err := nc.SubscribeSync(subject); err != nil {
					t.Fatal(err)
				}
			}
			// The server answers PING after the refusals it sent before;
			// the client reports them from another goroutine.
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			all := len(publish) + len(subscribe)
			for end := time.Now().Add(testscale.D(10 * time.Second)); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				mu.Lock()
				done := len(refused) >= all
				mu.Unlock()
				if done {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			through := 0
			for _, subject := range slices.Concat(publish, subscribe) {
				if !slices.Contains(refused, subject) {
					through++
					t.Errorf("%s: %s was not refused", role, subject)
				}
			}
			if through != 0 {
				t.Errorf("%s: %d of %d attempts got through", role, through, all)
			}
		})
	}
	// The history is whole.
	_, js := deputyObserver(t, n, "reader")
	stream, err := js.Stream(context.Background(), frames)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(context.Background())
	if err != nil || info.State.Msgs < 2 || info.State.FirstSeq != 1 {
		t.Errorf("the frame stream after the attempts: %+v, %v", info.State, err)
	}
}

// A node's history on disk is its user's alone: with file storage in a
// directory others may enter (history.dir), another local user (uid
// 65534) finds a page's address in none of its files, and no file or
// directory under it grants the group or others anything.
func TestOtherUserCannotReadStoredHistory(t *testing.T) {
	setpriv := needSetpriv(t)
	shared, err := os.MkdirTemp("", "framebus-history-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	history := filepath.Join(shared, "history")
	for _, dir := range []string{shared, history} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte("history:\n  storage: file\n  dir: "+history+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, envConfig+"="+config)
	secret := fmt.Sprintf("secret-%d", time.Now().UnixNano())
	mustOK(t, n.env, "navigate", site("/index.html?"+secret), "--tab", n.tab())
	// The frame is on disk (so the test could fail), readable by root.
	waitFor(t, "the frame's URL in the file store", 30*time.Second, func() bool {
		found := false
		_ = filepath.WalkDir(history, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				data, _ := os.ReadFile(path)
				found = found || strings.Contains(string(data), secret)
			}
			return nil
		})
		return found
	})
	if r := framebusAs(t, setpriv, "/bin/grep", nil, "", "-r", "-l", secret, history); r.stdout != "" || r.status == 0 {
		t.Errorf("uid 65534 found the URL in %q (grep exit %d)", r.stdout, r.status)
	}
	_ = filepath.WalkDir(filepath.Join(history, "jetstream"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %s", path, fi.Mode().Perm())
		}
		return nil
	})
}
