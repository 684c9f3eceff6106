package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// Issue 33, item 7, in a cluster: node one (serve, history on file) and
// bus members b2 and b3. A Go agent running plans and a framebus watch
// (keeping waiting), both logged in with node one's credentials file at
// member b2, go through node one's clean stop (SIGTERM) and its start
// again with its state: never told permission_denied (while it is down
// a one-shot client at b2 is not refused either), they work again by
// themselves, the agent's plan on the tab and the watch past the
// restore frame, and b2 never closed their connections. Before, the
// stop took node one's own users out of the cluster: b2 closed both
// clients, refused them as they reconnected (permission_denied), and
// they gave up.
//
// Then node one is stopped again and started with --rotate-credentials:
// the old credentials file is refused at every member, the agent still
// connected with it is cut off (permission_denied), and the new file
// logs in at b2. Last, the node is started on its state directory
// under another name: its new files name new users, and the users of
// the files it replaced (agent-one, admin-one) leave the cluster.
func TestClusteredNodeRestartKeepsItsClients(t *testing.T) {
	t.Parallel() // its own cluster and nodes
	secret := clusterSecretFile(t)
	listen, routes := bustest.ClusterRoutes(t, 3)
	b2 := startBusMember(t, "b2", memberConfig(t, listen[1], routes, secret, ""), t.TempDir())
	b3 := startBusMember(t, "b3", memberConfig(t, listen[2], routes, secret, ""), t.TempDir())
	stateFile := filepath.Join(t.TempDir(), "node.json")
	config := memberConfig(t, listen[0], routes, secret, "history:\n  storage: file\n")
	env := testEnv(envState+"="+stateFile, envNode+"=one", envConfig+"="+config)
	one := serveUntilStarted(t, env, stateFile)
	tab := one.tab()

	agentFile := credentialsAt(t, one.credsFile(serving.AgentCredsFile), b2.state.Bus)
	atB2 := testEnv(envCreds + "=" + agentFile)
	creds, err := serving.ReadCredentials(agentFile)
	if err != nil {
		t.Fatal(err)
	}
	// b2 follows the cluster's users a moment after the node put its own
	// (until then a client refused there logs in at a member it learnt
	// of: node one).
	waitFor(t, "b2 lets node one's agent in", 30*time.Second, func() bool { return logsInAt(b2.state.Bus, creds) })
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
	defer cancel()
	var events eventLog
	agent, err := busclient.Connect(ctx, busclient.Options{Credentials: &creds, OnEvent: events.add})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if at := agent.Conn().ConnectedUrl(); at != b2.state.Bus {
		t.Fatalf("the agent is connected at %s, want b2 (%s)", at, b2.state.Bus)
	}
	plan := func() (protocol.PlanResult, error) {
		return agent.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1"}})
	}
	if res, err := plan(); err != nil || !res.OK {
		t.Fatalf("the agent's plan at b2: %+v %v", res, err)
	}
	watch := startProcess(t, atB2, "watch", "--tab", tab, "--from", "1", "--keep-waiting")
	waitFor(t, "framebus watch prints the tab's frames", 30*time.Second, func() bool { return len(frameLines(t, watch.stdout.String())) > 0 })

	// Node one stops cleanly: its users stay in the cluster.
	if status := one.stop(syscall.SIGTERM, 30*time.Second); status != 0 {
		t.Fatalf("serve's clean stop: exit %d", status)
	}
	refused := func(what string, err error) {
		t.Helper()
		if protocol.CodeOf(err) == protocol.CodePermissionDenied {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err = plan()
	refused("the agent's plan while node one is down", err)
	t.Logf("the agent's plan while node one is down: %v", err)
	// Logged in, it finds no node: unavailable, not a refusal.
	if r := framebus(t, atB2, "", "pages"); r.reply(t)["code"] == string(protocol.CodePermissionDenied) {
		t.Errorf("a one-shot client at b2 while node one is down: exit %d, %s", r.status, r.stdout)
	}

	again := serveUntilStarted(t, env, stateFile)
	var res protocol.PlanResult
	waitFor(t, "the agent's plan after the restart", 2*time.Minute, func() bool {
		res, err = plan()
		refused("the agent's plan during the restart", err)
		return err == nil && res.OK
	})
	waitFor(t, "framebus watch goes on past the restore frame", time.Minute, func() bool {
		frames := frameLines(t, watch.stdout.String())
		return len(frames) > 0 && frames[len(frames)-1].Sequence >= res.Sequence
	})
	if watch.exited() || strings.Contains(watch.stdout.String()+watch.stderr.String(), string(protocol.CodePermissionDenied)) {
		t.Errorf("framebus watch through the restart: exited %v\nstdout: %s\nstderr: %s", watch.exited(), watch.stdout, watch.stderr)
	}
	// b2 stayed up: nothing closed their connections there.
	if len(events.kinds()) != 0 || strings.Contains(watch.stderr.String(), "disconnected") {
		t.Errorf("the agent's connection went through %v, the watch's said:\n%s\nwant neither disconnected", events.kinds(), watch.stderr)
	}

	// Rotated: the old file is refused everywhere, the new one logs in.
	again.stop(syscall.SIGTERM, 30*time.Second)
	rotated := serveUntilStarted(t, env, stateFile, "--rotate-credentials")
	members := []string{b2.state.Bus, b3.state.Bus, rotated.state.Bus}
	waitFor(t, "every member refuses the credentials before the rotation", 30*time.Second, func() bool {
		return !slices.ContainsFunc(members, func(url string) bool { return logsInAt(url, creds) })
	})
	if r := framebus(t, atB2, "", "pages"); r.status == 0 || r.reply(t)["code"] != string(protocol.CodePermissionDenied) {
		t.Errorf("a client with the credentials before the rotation: exit %d, %s; want permission_denied", r.status, r.stdout)
	}
	waitFor(t, "the agent logged in before the rotation is cut off", time.Minute, func() bool {
		_, err := plan()
		return protocol.CodeOf(err) == protocol.CodePermissionDenied
	})
	var own []protocol.Credentials
	for _, file := range []string{serving.AgentCredsFile, serving.AdminCredsFile} {
		c, err := serving.ReadCredentials(rotated.credsFile(file))
		if err != nil {
			t.Fatal(err)
		}
		own = append(own, c)
	}
	waitFor(t, "b2 lets the rotated credentials in", 30*time.Second, func() bool { return logsInAt(b2.state.Bus, own[0]) && logsInAt(b2.state.Bus, own[1]) })
	mustOK(t, testEnv(envCreds+"="+credentialsAt(t, rotated.credsFile(serving.AgentCredsFile), b2.state.Bus)), "eval", "1", "--tab", tab)

	// Under another name: agent-one and admin-one leave the cluster.
	rotated.stop(syscall.SIGTERM, 30*time.Second)
	renamed := serveUntilStarted(t, testEnv(envState+"="+stateFile, envNode+"=uno", envConfig+"="+config), stateFile)
	defer renamed.stop(syscall.SIGTERM, 30*time.Second)
	if c, err := serving.ReadCredentials(renamed.credsFile(serving.AgentCredsFile)); err != nil || c.User != "agent-uno" {
		t.Fatalf("the renamed node's agent: %+v %v", c, err)
	}
	members[2] = renamed.state.Bus
	waitFor(t, "every member refuses the users of the files the renamed node replaced", 30*time.Second, func() bool {
		return !slices.ContainsFunc(members, func(url string) bool { return logsInAt(url, own[0]) || logsInAt(url, own[1]) })
	})
}

// logsInAt reports whether the server at url lets creds' user in, that
// server alone (nats tries the other members it learns of when one
// refuses).
func logsInAt(url string, creds protocol.Credentials) bool {
	nc, err := nats.Connect(url, nats.UserInfo(creds.User, creds.Password), nats.IgnoreDiscoveredServers(), nats.NoReconnect())
	if err != nil {
		return false
	}
	nc.Close()
	return true
}
