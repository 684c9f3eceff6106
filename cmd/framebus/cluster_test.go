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
	"github.com/framebus/framebus/serving"
)

// Two serve processes, each with its embedded server in one cluster
// (serve --cluster --routes --cluster-secret-file): node one's own agent
// logs in to node two's server (the members share their users), lists
// both nodes' tabs with their names there, and runs a plan on node one's
// tab through node two's server. A node's own users stay in the cluster
// when it stops, as its credentials files do, for its next start.
func TestTwoNodesClustered(t *testing.T) {
	t.Parallel() // its own cluster and nodes
	secret := clusterSecretFile(t)
	listen, routes := bustest.ClusterRoutes(t, 2)
	var nodes []*node
	for i, name := range []string{"one", "two"} {
		nodes = append(nodes, launchNode(t, binary, envNode+"="+name,
			envConfig+"="+memberConfig(t, listen[i], routes, secret, "")))
	}
	for _, n := range nodes {
		n.ready(t)
	}
	one, two := nodes[0], nodes[1]
	defer two.stop(syscall.SIGTERM, 30*time.Second)
	agent, err := serving.ReadCredentials(one.credsFile(serving.AgentCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	if agent.User != "agent-one" {
		t.Errorf("node one's agent is %q, want agent-one (a cluster's members share their users)", agent.User)
	}
	// Node one's agent, at node two's server.
	agent.URL = two.state.Bus
	file := filepath.Join(t.TempDir(), "agent-one-at-two.json")
	if err := serving.WriteCredentials(file, agent); err != nil {
		t.Fatal(err)
	}
	env := testEnv(envCreds+"="+file, envBusURL+"="+two.state.Bus)
	var tabs map[string]any
	waitFor(t, "both nodes' tabs through node two's server", 30*time.Second, func() bool {
		tabs = mustOK(t, env, "pages")
		text := fmt.Sprint(tabs["tabs"])
		return strings.Contains(text, "node:one") && strings.Contains(text, "node:two")
	})
	res := mustOK(t, env, "eval", "location.href", "--tab", one.tab())
	if res["ok"] != true {
		t.Fatalf("a plan on node one's tab through node two's server: %v", res)
	}
	// The cluster's users are kept (users.json, for a restart) by the one
	// node that took the creds add, never by another node too, and no
	// node keeps another's own users.
	mustOK(t, two.env, "creds", "add", "twos-observer", "--role", "observer", "--out", filepath.Join(t.TempDir(), "o2.json"))
	mustOK(t, one.env, "creds", "add", "ones-observer", "--role", "observer", "--out", filepath.Join(t.TempDir(), "o1.json"))
	keptBy := map[string][]string{}
	for _, n := range nodes {
		waitFor(t, "both users at "+n.state.Node, 10*time.Second, func() bool {
			text := fmt.Sprint(mustOK(t, n.env, "creds", "list")["users"])
			return strings.Contains(text, "ones-observer") && strings.Contains(text, "twos-observer")
		})
		kept, err := serving.ReadUsersFile(n.credsFile(serving.UsersFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range kept {
			keptBy[u.Name] = append(keptBy[u.Name], n.state.Node)
		}
	}
	if len(keptBy) != 2 || len(keptBy["ones-observer"]) != 1 || len(keptBy["twos-observer"]) != 1 {
		t.Errorf("the nodes' users.json keep %v, want each added user kept by one node", keptBy)
	}
	// A user removed at any member leaves the file of the node that made
	// it.
	for _, n := range []*node{two, one} {
		mustOK(t, n.env, "creds", "remove", map[*node]string{one: "twos-observer", two: "ones-observer"}[n])
	}
	for _, n := range nodes {
		waitFor(t, "users.json of "+n.state.Node+" without the removed user", 10*time.Second, func() bool {
			kept, err := serving.ReadUsersFile(n.credsFile(serving.UsersFile))
			return err == nil && len(kept) == 0
		})
	}

	// Node one stops: its agent still logs in at node two, for node one's
	// next start.
	one.stop(syscall.SIGTERM, 30*time.Second)
	if r := framebus(t, env, "", "pages"); r.status != 0 {
		t.Errorf("node one's agent at node two after node one stopped: exit %d, %s %s", r.status, r.stdout, r.stderr)
	}
}

// clusterSecretFile is a file holding the secret a test cluster's
// members share (0600).
func clusterSecretFile(t *testing.T) string {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(secret, []byte("a-secret-the-members-share\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return secret
}

// memberConfig writes a configuration file that makes serve a cluster
// member, with extra YAML after its bus section.
func memberConfig(t *testing.T, listen string, routes []string, secret, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	yaml := "bus:\n  cluster:\n    listen: " + listen + "\n    secretFile: " + secret + "\n    routes: [" + strings.Join(routes, ", ") + "]\n" + extra
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
