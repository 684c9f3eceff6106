package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
)

// bearer adds the MCP server's token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// The attacker's case: framebus mcp (over stdio and over streamable
// HTTP) connected to a framebus serve; the node is killed (SIGKILL) and
// started again with the same state file, at a fixed port or (no
// --listen) at another, and, until credentials outlive a restart, with
// new passwords. Both MCP servers' next tool calls reach the new node
// without being restarted: before, every call answered "the bus
// connection is closed" (the same port: nats gives up after a second
// refused login) or waited for the old port for ever.
func TestMCPFollowsARestartedNode(t *testing.T) {
	port := bustest.FreeAddr(t) // no one else listens there meanwhile
	t.Run("another port", func(t *testing.T) { mcpFollowsARestart(t) })
	t.Run("the same port", func(t *testing.T) { mcpFollowsARestart(t, envListen+"="+port) })
}

func mcpFollowsARestart(t *testing.T, env ...string) {
	// What the killed node leaves (its browser's profile, staged files,
	// JetStream store) goes with the test.
	n := startNode(t, append(env, "TMPDIR="+testdir.Writable(t))...)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()

	stdio := testchild.DieWithTest(exec.Command(binary, "mcp"))
	stdio.Env = n.env
	overStdio, err := mcp.NewClient(&mcp.Implementation{Name: "stdio"}, nil).Connect(ctx, &mcp.CommandTransport{Command: stdio}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer overStdio.Close()
	m := startMCPHTTP(t, n.env)
	defer m.stop(syscall.SIGTERM, 30*time.Second)
	overHTTP, err := mcp.NewClient(&mcp.Implementation{Name: "http"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: m.URL, HTTPClient: &http.Client{Transport: bearer{readMCPToken(t, m.TokenFile)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer overHTTP.Close()
	sessions := map[string]*mcp.ClientSession{"stdio": overStdio, "http": overHTTP}

	// listed is the text browser_tabs answers, and whether it is an error.
	listed := func(cs *mcp.ClientSession) (string, bool) {
		callCtx, cancel := context.WithTimeout(ctx, testscale.D(30*time.Second))
		defer cancel()
		res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("browser_tabs: %v", err)
		}
		out, _ := json.Marshal(res.Content)
		return string(out), res.IsError
	}
	for name, cs := range sessions {
		if text, isErr := listed(cs); isErr || !strings.Contains(text, n.tab()) {
			t.Fatalf("%s: browser_tabs before the restart: %s", name, text)
		}
	}

	browser := childProcesses(n.cmd.Process.Pid)
	_ = n.cmd.Process.Kill()
	<-n.done
	for _, pid := range browser {
		_ = syscall.Kill(pid, syscall.SIGKILL) // a crashed node's browser may outlive it
	}
	again := &node{process: startProcess(t, n.env, "serve"), stateFile: n.stateFile, env: n.env}
	again.ready(t)
	defer again.stop(syscall.SIGTERM, 30*time.Second)
	if again.state.Bus == n.state.Bus {
		t.Logf("the node came back at the same address %s", again.state.Bus)
	}

	back := time.Now()
	for name, cs := range sessions {
		wait := testscale.D(60 * time.Second)
		for end := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
			text, isErr := listed(cs)
			if !isErr && strings.Contains(text, again.tab()) {
				t.Logf("%s: a tool call reached the restarted node %s after it was ready", name, time.Since(back).Round(time.Millisecond))
				break
			}
			if time.Now().After(end) {
				t.Fatalf("%s: no tool call reached the restarted node within %s; the last answered %s", name, wait, text)
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{"url": site("/form.html"), "tab": again.tab()}})
		if err != nil || res.IsError {
			out, _ := json.Marshal(res)
			t.Errorf("%s: browser_navigate after the restart: %v %s", name, err, out)
		}
	}
}
