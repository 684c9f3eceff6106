package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// A second node under a live node's name takes none of its users. A
// node killed with kill -9 leaves its own users (agent-one, admin-one)
// in the cluster's shared users. Started again under its name with
// --rotate-credentials, it writes fresh credentials files: those log in
// at every member, and a copy of the dead node's credentials file no
// longer does (before, the dead node's entries won: the new files were
// refused, the old one worked).
func TestNodeRestartedAfterKill9OwnsItsCredentials(t *testing.T) {
	t.Parallel() // its own cluster and nodes
	secret := clusterSecretFile(t)
	listen, routes := bustest.ClusterRoutes(t, 3)
	b2 := startBusMember(t, "b2", memberConfig(t, listen[1], routes, secret, ""), t.TempDir())
	startBusMember(t, "b3", memberConfig(t, listen[2], routes, secret, ""), t.TempDir())
	one := launchNode(t, binary, envNode+"=one", envConfig+"="+memberConfig(t, listen[0], routes, secret, ""))
	one.ready(t)
	old := credentialsAt(t, one.credsFile(serving.AgentCredsFile), b2.state.Bus)
	oldEnv := testEnv(envCreds+"="+old, envBusURL+"="+b2.state.Bus)
	mustOK(t, oldEnv, "status")

	// A second serve under the live node's name, a member too, is
	// refused (node_name_taken) and takes nothing: the live node's
	// credentials still log in.
	twinListen, _ := bustest.ClusterRoutes(t, 1)
	twin := launchNode(t, binary, envNode+"=one", envConfig+"="+memberConfig(t, twinListen[0], routes, secret, ""))
	waitFor(t, "the twin exits", 90*time.Second, twin.exited)
	if !strings.Contains(twin.stdout.String(), string(protocol.CodeNodeNameTaken)) {
		t.Errorf("a second node under a live node's name: %s", twin.stdout)
	}
	for _, env := range [][]string{one.env, oldEnv} {
		if out := framebus(t, env, "", "status"); out.status != 0 {
			t.Errorf("the live node's credentials after the twin: %d %s %s", out.status, out.stdout, out.stderr)
		}
	}

	if err := one.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-one.done
	// Its name is free once its registry entry expires (node_name_taken
	// until then). Started again with new credentials: a node keeps its
	// own from one start to the next unless asked to rotate them.
	again := serveUntilStarted(t, one.env, one.stateFile, "--rotate-credentials")
	again.ready(t)
	defer again.stop(syscall.SIGTERM, 30*time.Second)

	fresh := credentialsAt(t, again.credsFile(serving.AgentCredsFile), b2.state.Bus)
	for _, env := range [][]string{again.env, testEnv(envCreds+"="+fresh, envBusURL+"="+b2.state.Bus)} {
		if out := framebus(t, env, "", "status"); out.status != 0 {
			t.Errorf("the restarted node's own credentials: %d %s %s", out.status, out.stdout, out.stderr)
		}
	}
	if out := framebus(t, oldEnv, "", "status"); out.status == 0 {
		t.Errorf("the dead node's credentials still log in at b2: %s", out.stdout)
	}
}

// In a cluster any node may take a creds remove (a queue group). A
// live node's own users (agent-<node>, admin-<node>) are refused
// whichever node takes it, also by a node that started before the
// other: before, a node refused only the users it knew at its start,
// so a later node's own users were removed when the earlier node took
// the request (at random, the queue group's choice), cutting the later
// node's credentials files off. A node that stopped keeps its users in
// the cluster until an admin removes them.
func TestCredsRemoveSparesEveryLiveNodesOwnUsers(t *testing.T) {
	t.Parallel() // its own cluster and nodes
	secret := clusterSecretFile(t)
	listen, routes := bustest.ClusterRoutes(t, 4)
	// Two bus members first: the history's three replicas and JetStream's
	// meta leader need them before the first node can start alone.
	// Three configured members (one, b3, b4); two joins them.
	three := []string{routes[0], routes[2], routes[3]}
	startBusMember(t, "b3", memberConfig(t, listen[2], three, secret, ""), t.TempDir())
	startBusMember(t, "b4", memberConfig(t, listen[3], three, secret, ""), t.TempDir())
	// One after the other: node one answers user requests before node
	// two's users exist.
	var nodes []*node
	for i, name := range []string{"one", "two"} {
		state := filepath.Join(t.TempDir(), "node.json")
		env := testEnv(envState+"="+state, envNode+"="+name, envConfig+"="+memberConfig(t, listen[i], append([]string{routes[i]}, three[1:]...), secret, ""))
		nodes = append(nodes, serveUntilStarted(t, env, state))
	}
	one, two := nodes[0], nodes[1]
	defer two.stop(syscall.SIGTERM, 30*time.Second)
	defer one.stop(syscall.SIGTERM, 30*time.Second)
	waitFor(t, "each node lists the other", 10*time.Second, func() bool {
		text := fmt.Sprint(mustOK(t, one.env, "status")["nodes"], mustOK(t, two.env, "status")["nodes"])
		return strings.Count(text, "answered") == 4
	})
	removed := 0
	for _, try := range []struct {
		by   *node
		user string
	}{{one, "agent-two"}, {one, "admin-two"}, {two, "agent-one"}, {two, "admin-one"}, {one, "agent-two"}, {two, "agent-one"}} {
		out := framebus(t, try.by.env, "", "creds", "remove", try.user)
		if out.status == 0 {
			removed++
			t.Errorf("creds remove %s by %s's admin: removed", try.user, try.by.state.Node)
		} else if m := out.reply(t); m["code"] != string(protocol.CodeBadRequest) {
			t.Errorf("creds remove %s: %s %s", try.user, out.stdout, out.stderr)
		}
	}
	for _, n := range nodes {
		if out := framebus(t, n.env, "", "creds", "list"); out.status != 0 {
			t.Errorf("%s's admin after the removals: %s %s", n.state.Node, out.stdout, out.stderr)
		}
		if out := framebus(t, n.env, "", "status"); out.status != 0 {
			t.Errorf("%s's agent after the removals: %s %s", n.state.Node, out.stdout, out.stderr)
		}
	}
	t.Logf("%d of 6 removals of a live node's own user went through", removed)

	// Node one stops, and does not come back: its users stay (for its
	// next start) until node two's admin removes them, which it may once
	// node one is not live, although they were in the cluster when node
	// two started (before, node two refused them as its own or
	// configured). Then node one's agent logs in nowhere.
	oneAtTwo := testEnv(envCreds + "=" + credentialsAt(t, one.credsFile(serving.AgentCredsFile), two.state.Bus))
	one.stop(syscall.SIGTERM, 30*time.Second)
	if out := framebus(t, oneAtTwo, "", "pages"); out.status != 0 {
		t.Errorf("node one's agent at node two after node one stopped: %s %s", out.stdout, out.stderr)
	}
	for _, user := range []string{"agent-one", "admin-one"} {
		var out result
		waitFor(t, "node two's admin removes "+user, 30*time.Second, func() bool {
			out = framebus(t, two.env, "", "creds", "remove", user)
			return out.status == 0 || !strings.Contains(out.stdout, "own or configured")
		})
		if out.status != 0 {
			t.Fatalf("creds remove %s of a node that stopped: %s %s", user, out.stdout, out.stderr)
		}
	}
	// Refused at node two, a client tries the members it learnt of: they
	// follow the removal a moment later.
	waitFor(t, "node one's agent refused at every member", 30*time.Second, func() bool {
		out := framebus(t, oneAtTwo, "", "pages")
		return out.status != 0 && out.reply(t)["code"] == string(protocol.CodePermissionDenied)
	})
}

// serveUntilStarted starts serve with env until it starts (ready), while
// it exits at once: its name still taken by a node that died, or the
// cluster's JetStream still electing its leader.
func serveUntilStarted(t *testing.T, env []string, stateFile string, flags ...string) *node {
	t.Helper()
	var started *node
	waitFor(t, "serve starts", 60*time.Second, func() bool {
		n := &node{process: startProcessOf(t, binary, env, append([]string{"serve"}, flags...)...), stateFile: stateFile, env: env}
		waitFor(t, "serve prints a line or exits", 90*time.Second, func() bool {
			return n.exited() || strings.Contains(n.stdout.String(), "\n")
		})
		if strings.Contains(n.stdout.String(), `"ok":false`) {
			<-n.done
			return false
		}
		started = n
		return true
	})
	started.ready(t)
	return started
}

// Another user of the machine (uid 65534) reads nothing a bus member
// keeps on disk: not the cluster secret (0600, a file open to others is
// refused), not the JetStream files under --store, whether the member
// made the directory or was given one open to everyone. The probe
// counts what it can read, and sees a file once it is made readable.
func TestBusMemberFilesAreItsUsersAlone(t *testing.T) {
	setpriv := needSetpriv(t)
	open := nobodyHome(t) // 0755: anyone may look in
	secret := filepath.Join(open, "cluster-secret")
	if err := os.WriteFile(secret, []byte("a-secret-the-members-share\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	given := filepath.Join(open, "given")
	if err := os.Mkdir(given, 0o755); err != nil {
		t.Fatal(err)
	}
	made := filepath.Join(open, "made")
	listen, routes := bustest.ClusterRoutes(t, 2)
	for i, store := range []string{given, made} {
		m := startBusMember(t, fmt.Sprintf("b%d", i+1), memberConfig(t, listen[i], routes, secret, ""), store)
		defer m.stop(syscall.SIGTERM, 30*time.Second)
	}
	files := func() int {
		n := 0
		_ = filepath.WalkDir(open, func(_ string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				n++
			}
			return nil
		})
		return n
	}
	waitFor(t, "JetStream files in both stores", 30*time.Second, func() bool { return files() > 3 })
	// The users each member keeps over a restart (hashes) are among them.
	waitFor(t, "the kept users in both stores", 30*time.Second, func() bool {
		for _, store := range []string{given, made} {
			if _, err := os.Stat(filepath.Join(store, "framebus-cluster-users.json")); err != nil {
				return false
			}
		}
		return true
	})
	readable := func() []string {
		r := framebusAs(t, setpriv, "/usr/bin/find", nil, "", open, "-type", "f", "-readable")
		return strings.Fields(r.stdout)
	}
	if got := readable(); len(got) != 0 {
		t.Errorf("uid 65534 reads %d of %d files: %v", len(got), files(), got)
	}
	if r := framebusAs(t, setpriv, "/bin/cat", nil, "", secret); r.status == 0 {
		t.Errorf("uid 65534 read the cluster secret: %q", r.stdout)
	}
	if info, err := os.Stat(made); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the store bus made: %v %v", info.Mode(), err)
	}
	// The probe sees a readable file.
	if err := os.Chmod(secret, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readable(); len(got) != 1 {
		t.Errorf("the probe reads %v, want the secret made readable", got)
	}
	t.Logf("%d files in the stores and the secret; 0 readable by uid 65534", files())
}
