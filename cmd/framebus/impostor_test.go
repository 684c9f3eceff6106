package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// listenAsNobody has uid 65534 listen on a free loopback port as a NATS
// server would (INFO, then it reads the client's CONNECT), and returns
// the port and what it read.
func listenAsNobody(t *testing.T) (port string, read func() string) {
	t.Helper()
	setpriv := needSetpriv(t)
	const script = `
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(5)
    try:
        c.sendall(b'INFO {"server_id":"IMPOSTOR","version":"2.10.0","proto":1,"max_payload":1048576,"auth_required":true}\r\n')
        print("read", c.makefile("rb").readline().decode(errors="replace").strip(), flush=True)
    except Exception:
        print("read", flush=True)
    c.close()
`
	cmd := testchild.DieWithTest(exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			if lines = append(lines, sc.Text()); len(lines) == 1 {
				first <- sc.Text()
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	select {
	case port = <-first:
	case <-time.After(testscale.D(30 * time.Second)):
		t.Fatal("uid 65534's listener did not start")
	}
	return port, func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
}

// A node whose port another local user holds (the node down, its port
// taken meanwhile): a client command sends that listener no password and
// says whose it is (unavailable), not that the node is not answering.
func TestCLINamesAnotherUsersListener(t *testing.T) {
	port, read := listenAsNobody(t)
	dir := t.TempDir()
	url := "nats://" + net.JoinHostPort("127.0.0.1", port)
	const password = "a-password-only-the-node-may-see"
	if err := serving.WriteState(filepath.Join(dir, "node.json"), serving.State{OK: true, Node: "n", Bus: url, Prefix: "framebus", PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	node := os.Geteuid() // the node's account, as serve writes it
	if err := serving.WriteCredentials(filepath.Join(dir, serving.AgentCredsFile), protocol.Credentials{URL: url, User: serving.LocalAgentUser, Password: password, Role: protocol.RoleAgent, BusUID: &node}); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, map[string]string{envState: filepath.Join(dir, "node.json")}, "", "eval", "1+1")
	reply := r.reply(t)
	msg, _ := reply["error"].(string)
	if r.status == 0 || reply["code"] != string(protocol.CodeUnavailable) || !strings.Contains(msg, "uid 65534") || !strings.Contains(msg, "no password was sent") {
		t.Errorf("eval with uid 65534 at the node's port: %d %v; want unavailable naming uid 65534", r.status, reply)
	}
	if strings.Contains(read(), password) {
		t.Fatalf("uid 65534's listener read the password: %q", read())
	}
}
