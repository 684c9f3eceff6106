package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/bustest"
)

// A node killed with kill -9 leaves its own users (agent-one, admin-one)
// in the cluster's shared users. Started again under its name, it writes
// fresh credentials files: those log in at every member, and a copy of
// the dead node's credentials file no longer does (before, the dead
// node's entries won: the new files were refused, the old one worked).
func TestNodeRestartedAfterKill9OwnsItsCredentials(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(secret, []byte("a-secret-the-members-share\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	listen, routes := bustest.ClusterRoutes(t, 3)
	b2 := startBusMember(t, "b2", memberConfig(t, listen[1], routes, secret, ""), t.TempDir())
	startBusMember(t, "b3", memberConfig(t, listen[2], routes, secret, ""), t.TempDir())
	one := launchNode(t, binary, envNode+"=one", envConfig+"="+memberConfig(t, listen[0], routes, secret, ""))
	one.ready(t)
	old := credentialsAt(t, one.credsFile(agentCredsFile), b2.state.Bus)
	oldEnv := testEnv(envCreds+"="+old, envBusURL+"="+b2.state.Bus)
	mustOK(t, oldEnv, "status")

	if err := one.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-one.done
	// Its name is free once its registry entry expires (node_name_taken
	// until then): start it again until it starts.
	var again *node
	waitFor(t, "node one starts again under its name", 30*time.Second, func() bool {
		n := &node{process: startProcessOf(t, binary, one.env, "serve"), stateFile: one.stateFile, env: one.env}
		waitFor(t, "serve prints a line or exits", 90*time.Second, func() bool {
			return n.exited() || strings.Contains(n.stdout.String(), "\n")
		})
		if strings.Contains(n.stdout.String(), `"ok":false`) {
			<-n.done
			return false
		}
		again = n
		return true
	})
	again.ready(t)
	defer again.stop(syscall.SIGTERM, 30*time.Second)

	fresh := credentialsAt(t, again.credsFile(agentCredsFile), b2.state.Bus)
	for _, env := range [][]string{again.env, testEnv(envCreds+"="+fresh, envBusURL+"="+b2.state.Bus)} {
		if out := framebus(t, env, "", "status"); out.status != 0 {
			t.Errorf("the restarted node's own credentials: %d %s %s", out.status, out.stdout, out.stderr)
		}
	}
	if out := framebus(t, oldEnv, "", "status"); out.status == 0 {
		t.Errorf("the dead node's credentials still log in at b2: %s", out.stdout)
	}
}
