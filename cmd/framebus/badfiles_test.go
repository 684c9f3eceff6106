package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// A credentials, state or config file that is a FIFO, a directory or a
// device, or not JSON, is refused at once with bad_request (a state file
// was "no framebus node running"): reading a FIFO nobody
// writes blocked the command for good (SIGTERM did not end it), and
// /dev/zero read without end.
func TestFilesThatAreNoFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "creds.json")
	if err := os.WriteFile(notJSON, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	state := envState + "=" + filepath.Join(dir, "state", "node.json")
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{testEnv(state), []string{"status", "--creds", fifo}, "is not a regular file (a FIFO)"},
		{testEnv(state), []string{"status", "--creds", dir}, "is not a regular file (a directory)"},
		{testEnv(state), []string{"status", "--creds", "/dev/zero"}, "is not a regular file (a device)"},
		{testEnv(state, envCreds+"="+fifo), []string{"status"}, "is not a regular file (a FIFO)"},
		{testEnv(state), []string{"status", "--creds", notJSON}, "not a credentials file"},
		{testEnv(state, envConfig+"="+fifo), []string{"serve"}, "is not a regular file (a FIFO)"},
		{testEnv(envState + "=" + fifo), []string{"eval", "1"}, "is not a regular file (a FIFO)"},
		{testEnv(envState + "=" + notJSON), []string{"eval", "1"}, "state file " + notJSON},
	} {
		r := framebus(t, c.env, "", c.args...)
		if m := r.reply(t); r.status == 0 || m["code"] != string(protocol.CodeBadRequest) || !strings.Contains(m["error"].(string), c.want) {
			t.Errorf("%q: exit %d, %s; want bad_request, %s", c.args, r.status, r.stdout, c.want)
		}
	}
}

// creds add --out never replaces a file (the node's own credentials.json
// was overwritten with an observer's, so the local CLI lost its agent)
// and adds no user when the file cannot be written (a directory: the
// user was added, with a password nobody had).
func TestCredsAddOutIsANewFile(t *testing.T) {
	n := startNode(t)
	agentFile := n.credsFile(serving.AgentCredsFile)
	before, err := os.ReadFile(agentFile)
	if err != nil {
		t.Fatal(err)
	}
	for i, out := range []string{agentFile, filepath.Dir(agentFile)} {
		name := []string{"over", "indir"}[i]
		r := framebus(t, n.env, "", "creds", "add", name, "--role", "observer", "--out", out)
		if m := r.reply(t); r.status != 1 || m["code"] != string(protocol.CodeBadRequest) || !strings.Contains(m["error"].(string), "it exists") {
			t.Errorf("creds add --out %s: exit %d, %s; want bad_request, it exists", out, r.status, r.stdout)
		}
	}
	if after, err := os.ReadFile(agentFile); err != nil || string(after) != string(before) {
		t.Errorf("credentials.json changed: %s (%v)", after, err)
	}
	if users := mustOK(t, n.env, "creds", "list"); strings.Contains(strings.Join(userNames(users), " "), "over") || strings.Contains(strings.Join(userNames(users), " "), "indir") {
		t.Errorf("users after refused adds: %v", users)
	}
	mustOK(t, n.env, "eval", "1", "--tab", n.tab()) // the local CLI is still the agent
}

func userNames(reply map[string]any) []string {
	var names []string
	for _, u := range reply["users"].([]any) {
		names = append(names, u.(map[string]any)["name"].(string))
	}
	return names
}
