package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// credsFile is the node's agent credentials, beside its state file.
func (n *node) credsFile(name string) string { return filepath.Join(filepath.Dir(n.stateFile), name) }

// The acceptance from the attacker's side, on a real node: nobody logs in
// without a password (TCP and WebSocket); an observer's every attempt to
// change a browser is refused at once with permission_denied, and none got
// through; the agent's credentials work; the credentials files are the
// node's user's alone.
func TestObserverCannotChangeABrowser(t *testing.T) {
	t.Parallel() // its own node
	n := startNode(t, envWebSocket+"=127.0.0.1:0")
	tab := n.tab()

	// Files: 0600 in a 0700 directory.
	for _, name := range []string{serving.AgentCredsFile, serving.OperatorCredsFile, serving.AdminCredsFile} {
		checkMode(t, n.credsFile(name), 0o600)
	}
	checkMode(t, filepath.Dir(n.stateFile), 0o700|os.ModeDir)
	agent, err := serving.ReadCredentials(n.credsFile(serving.AgentCredsFile))
	if err != nil || agent.Role != protocol.RoleAgent || agent.URL != n.state.Bus || agent.WebSocket != n.state.WebSocket || agent.InboxPrefix != "_INBOX_agent" {
		t.Fatalf("credentials.json: %+v, %v (state %+v)", agent, err, n.state)
	}

	// A URL may carry the login instead of a file.
	withUser := strings.Replace(n.state.Bus, "nats://", "nats://agent:"+agent.Password+"@", 1)
	mustOK(t, testEnv(envState+"="+t.TempDir()+"/none.json"), "pages", "--bus", withUser)

	// No login, no bus.
	if !strings.HasPrefix(n.state.WebSocket, "ws://127.0.0.1:") {
		t.Fatalf("state file names no WebSocket listener: %+v", n.state)
	}
	for _, url := range []string{n.state.Bus, n.state.WebSocket} {
		for _, opts := range [][]nats.Option{nil, {nats.UserInfo("agent", "guess")}} {
			if nc, err := nats.Connect(url, append(opts, nats.NoReconnect())...); !errors.Is(err, nats.ErrAuthorization) {
				if nc != nil {
					nc.Close()
				}
				t.Errorf("connect to %s (%d options): %v, want an authorization violation", url, len(opts), err)
			}
		}
	}

	// An observer, made by the admin.
	observerFile := filepath.Join(t.TempDir(), "watcher.json")
	mustOK(t, n.env, "creds", "add", "watcher", "--role", "observer", "--out", observerFile)
	checkMode(t, observerFile, 0o600)
	checkMode(t, n.credsFile(serving.UsersFile), 0o600)
	observer := slices.Concat(n.env, []string{envCreds + "=" + observerFile})

	before := mustOK(t, n.env, "eval", "1+1")["sequence"].(float64)
	upload := filepath.Join(t.TempDir(), "up.txt")
	if err := os.WriteFile(upload, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	through := 0
	for _, c := range []struct {
		args    []string
		subject string
	}{
		{[]string{"eval", "1+1", "--tab", tab}, "framebus.tab." + tab + ".plan"},
		{[]string{"navigate", "about:blank", "--tab", tab}, "framebus.tab." + tab + ".plan"},
		{[]string{"upload", "--tab", tab, "#file", upload}, "framebus.tab." + tab + ".stage"},
		{[]string{"launch"}, "framebus.browser.default.launch"},
		{[]string{"close"}, "framebus.browser.default.close"},
		{[]string{"tab", "new"}, "framebus.browser.default.newtab"},
		{[]string{"tab", "close", tab}, "framebus.node." + n.state.Node + ".browser.default.closetab"}, // the node that lists it
		{[]string{"session", "start", "example.com"}, "framebus.session.start"},
		{[]string{"takeover", tab}, "framebus.tab." + tab + ".control"},
		{[]string{"handback", tab}, "framebus.tab." + tab + ".control"},
		{[]string{"answer", "yes", "--tab", tab}, "framebus.tab." + tab + ".answer"},
		{[]string{"handoff", "sign in", "--tab", tab}, "framebus.tab." + tab + ".plan"},
		{[]string{"session", "stop", "s1"}, "framebus.session.s1.stop"},
		{[]string{"creds", "add", "mallory", "--role", "admin", "--creds", observerFile}, "framebus.admin.users.add"},
	} {
		r := framebus(t, observer, "", c.args...)
		m := r.reply(t)
		if r.status != 1 || m["code"] != string(protocol.CodePermissionDenied) || m["error"] != "permission denied: observer may not publish to "+c.subject {
			through++
			t.Errorf("observer %q: exit %d, %s %s; want exit 1, permission_denied naming %s", c.args, r.status, r.stdout, r.stderr, c.subject)
		}
	}
	// What the observer may do.
	mustOK(t, observer, "status")
	mustOK(t, observer, "pages")

	// Raw NATS: cancel, forged frames, answering plans, others' inboxes.
	nc, err := nats.Connect(n.state.Bus, nats.UserInfo("watcher", readPassword(t, observerFile)), nats.CustomInboxPrefix("_INBOX_watcher"),
		nats.PermissionErrOnSubscribe(true), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Request("framebus.tab."+tab+".cancel", []byte(`{"planId":"x"}`), time.Second); err == nil {
		through++
		t.Error("the observer's cancel was answered")
	}
	frames, err := nc.SubscribeSync("framebus.tab." + tab + ".frame")
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.Publish("framebus.tab."+tab+".frame", []byte(`{"tab":"`+tab+`","sequence":999999,"url":"https://forged.example/"}`))
	var spies []*nats.Subscription
	for _, s := range []string{"framebus.tab." + tab + ".plan", "_INBOX.>", "_INBOX_agent.>", "framebus.>"} {
		sub, err := nc.SubscribeSync(s)
		if err != nil {
			t.Fatal(err)
		}
		spies = append(spies, sub)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	after := mustOK(t, n.env, "eval", "1+1")["sequence"].(float64)
	if after != before+1 {
		through++
		t.Errorf("the tab went from frame %v to %v; only the agent's eval should have made one", before, after)
	}
	for {
		msg, err := frames.NextMsg(time.Second)
		if err != nil {
			break
		}
		if strings.Contains(string(msg.Data), "forged") {
			through++
			t.Errorf("a forged frame reached an observer: %s", msg.Data)
		}
	}
	for _, sub := range spies {
		if msg, err := sub.NextMsg(10 * time.Millisecond); !errors.Is(err, nats.ErrPermissionViolation) {
			through++
			t.Errorf("subscribing to %s: %v %v, want a permissions violation", sub.Subject, msg, err)
		}
	}
	if pages := mustOK(t, n.env, "pages")["tabs"].([]any); len(pages) != 1 {
		through++
		t.Errorf("the node has %d tabs after the observer's attempts", len(pages))
	}
	if through != 0 {
		t.Errorf("%d attempts got through", through)
	}

	// A removed user is refused from then on.
	mustOK(t, n.env, "creds", "remove", "watcher")
	if r := framebus(t, observer, "", "status"); r.status != 1 || r.reply(t)["code"] != string(protocol.CodePermissionDenied) {
		t.Errorf("a removed user: exit %d, %s", r.status, r.stdout)
	}
}

// Another local user (uid 65534) can read none of the node's credentials
// and cannot use its bus without them.
func TestOtherUserCannotUseTheBus(t *testing.T) {
	setpriv := needSetpriv(t)
	n := startNode(t)
	home := nobodyHome(t)
	bin := filepath.Join(home, "framebus")
	copyFile(t, binary, bin, 0o755)
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + home, envURL + "=" + n.state.Bus}
	if raceEnabled {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	for _, name := range []string{serving.AgentCredsFile, serving.OperatorCredsFile, serving.AdminCredsFile} {
		if r := framebusAs(t, setpriv, "/bin/cat", nil, "", n.credsFile(name)); r.status == 0 {
			t.Errorf("uid 65534 read %s: %s", name, r.stdout)
		}
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{slices.Concat(env, []string{envState + "=" + n.stateFile}), "readable by the user that runs the node only"},
		{slices.Concat(env, []string{envCreds + "=" + n.credsFile(serving.AgentCredsFile)}), "readable by the user that runs the node only"},
		{slices.Concat(env, []string{envState + "=" + filepath.Join(home, "state.json")}), "Authorization Violation"},
	} {
		r := framebusAs(t, setpriv, bin, c.env, "", "eval", "1", "--tab", n.tab())
		if m := r.reply(t); r.status != 1 || m["code"] != string(protocol.CodePermissionDenied) || !strings.Contains(m["error"].(string), c.want) {
			t.Errorf("eval as uid 65534: exit %d, %s %s; want permission_denied, %s", r.status, r.stdout, r.stderr, c.want)
		}
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModeDir | os.ModePerm); got != want {
		t.Errorf("%s: mode %s, want %s", path, got, want)
	}
}

func readPassword(t *testing.T, path string) string {
	t.Helper()
	creds, err := serving.ReadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	return creds.Password
}

// Stored content never makes a user: a frame or content chunk shaped like
// a request would otherwise add an admin with the attacker's password. An
// observer aims a direct get's answer at the admin's users.add subject
// (from its own account: it lands there, nowhere else), and tries a
// consumer delivering there (it has no consumer API); an admin's consumer
// does deliver there (the server checks no permission on a deliver
// subject), and the node takes no delivery for a request.
func TestStoredContentCannotMakeUsers(t *testing.T) {
	t.Parallel() // its own node
	n := startNode(t)
	admin, err := serving.ReadCredentials(n.credsFile(serving.AdminCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	adminNC, err := nats.Connect(admin.URL, nats.UserInfo(admin.User, admin.Password), nats.CustomInboxPrefix(admin.InboxPrefix))
	if err != nil {
		t.Fatal(err)
	}
	defer adminNC.Close()
	hash, err := bcrypt.GenerateFromPassword([]byte("mallory's"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	shaped, _ := json.Marshal(protocol.UserRequest{Name: "mallory", Role: protocol.RoleAdmin, PasswordHash: string(hash)})
	if err := adminNC.Publish("framebus.history.tab.STORED.frame", shaped); err != nil { // stored under framebus.tab.STORED.frame, as a page might shape stored content
		t.Fatal(err)
	}
	if err := adminNC.Flush(); err != nil {
		t.Fatal(err)
	}

	observerFile := filepath.Join(t.TempDir(), "watcher.json")
	mustOK(t, n.env, "creds", "add", "watcher", "--role", "observer", "--out", observerFile)
	nc, err := nats.Connect(n.state.Bus, nats.UserInfo("watcher", readPassword(t, observerFile)), nats.CustomInboxPrefix("_INBOX_watcher"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.PublishRequest("framebus.js.API.DIRECT.GET.FRAMEBUS_FRAMES", "framebus.admin.users.add", []byte(`{"last_by_subj":"framebus.tab.STORED.frame"}`)); err != nil {
		t.Fatal(err)
	}
	// The user requests are a queue group: a push consumer reaches them
	// with that deliver group.
	spy := []byte(`{"stream_name":"FRAMEBUS_FRAMES","config":{"name":"spy","deliver_subject":"framebus.admin.users.add","deliver_group":"framebus-users","filter_subject":"framebus.tab.STORED.frame","ack_policy":"none"}}`)
	for _, api := range []string{"framebus.js.API", "$JS.API"} {
		if _, err := nc.Request(api+".CONSUMER.CREATE.FRAMEBUS_FRAMES", spy, 2*time.Second); err == nil {
			t.Fatalf("the observer made a consumer through %s", api)
		}
	}
	msg, err := adminNC.Request("$JS.API.CONSUMER.CREATE.FRAMEBUS_FRAMES", spy, 10*time.Second)
	if err != nil || strings.Contains(string(msg.Data), `"error"`) {
		t.Fatalf("the admin's consumer: %v %s", err, msg.Data)
	}
	waitFor(t, "the stored message is delivered", 10*time.Second, func() bool {
		info, err := adminNC.Request("$JS.API.CONSUMER.INFO.FRAMEBUS_FRAMES.spy", nil, 5*time.Second)
		return err == nil && strings.Contains(string(info.Data), `"delivered":{"consumer_seq":1`)
	})
	// A request on the same subscription comes after the delivery.
	mustOK(t, n.env, "creds", "add", "late", "--role", "observer")
	list := mustOK(t, n.env, "creds", "list")
	if strings.Contains(fmt.Sprint(list["users"]), "mallory") {
		t.Fatalf("stored content made a user: %v", list["users"])
	}
	if mallory, err := nats.Connect(n.state.Bus, nats.UserInfo("mallory", "mallory's"), nats.NoReconnect()); err == nil {
		mallory.Close()
		t.Fatal("mallory logged in")
	}
}
