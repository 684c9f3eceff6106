package client_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// impostor is a NATS server's first words, as another local user would
// say them on the bus's port while the node is down: INFO, then it
// prints each client's first line (CONNECT, with the password).
const impostor = `
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    print("accepted", flush=True)
    c.settimeout(5)
    try:
        c.sendall(b'INFO {"server_id":"IMPOSTOR","version":"2.10.0","proto":1,"max_payload":1048576,"auth_required":true,"headers":true}\r\n')
        line = c.makefile("rb").readline()
        print("got", line.decode(errors="replace").strip(), flush=True)
    except Exception as e:
        print("got", "", flush=True)
    c.close()
`

// startImpostor runs impostor as uid 65534 on port, and reports its
// lines.
func startImpostor(t *testing.T, port int) (lines func() []string, stop func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs a listener as uid 65534 with setpriv, which needs root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed: ", err)
	}
	cmd := testchild.DieWithTest(exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
		"/usr/bin/python3", "-c", impostor, strconv.Itoa(port)))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	listening := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "listening" {
				close(listening)
			}
			mu.Lock()
			got = append(got, sc.Text())
			mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	stop = func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
	}
	t.Cleanup(stop)
	select {
	case <-listening:
	case <-done:
		t.Fatal("the impostor did not listen (the port not free again?)")
	case <-time.After(testscale.D(wait)):
		t.Fatal("the impostor did not listen in time")
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}, stop
}

// TestNoPasswordToAnotherUsersListener: the bus stops (its node killed
// or restarting) while a client is connected; another local user (uid
// 65534) listens on the freed port and answers as a NATS server would.
// The client, reconnecting by itself, hands it nothing: the listener is
// not the node's account, so the connection is dropped before CONNECT
// (without: each reconnect sent the password in the clear, and a node
// started again with its kept credentials took it). A client connecting
// anew is told unavailable, naming the listener's account. Once the bus
// is back on its port, the client reconnects by itself.
func TestNoPasswordToAnotherUsersListener(t *testing.T) {
	const password = "a-password-no-one-else-may-see"
	agent := &server.User{Username: "agent", Password: password}
	dir := t.TempDir()
	s := startServer(t, -1, dir, agent)
	port := s.Addr().(*net.TCPAddr).Port
	url := s.ClientURL()
	node := os.Geteuid() // the bus's account, as serve writes it
	creds := &protocol.Credentials{User: "agent", Password: password, BusUID: &node}
	reconnected := make(chan struct{}, 16)
	c := connect(t, url, creds, func(e client.Event) {
		if e.Kind == client.EventReconnected {
			reconnected <- struct{}{}
		}
	})

	s.Shutdown()
	s.WaitForShutdown()
	lines, stop := startImpostor(t, port)
	// The client keeps reconnecting: wait for a few of its tries.
	deadline := time.Now().Add(testscale.D(wait))
	for accepted(lines()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the client did not try the port again: %q", lines())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// And a client connecting anew.
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(wait))
	defer cancel()
	_, err := client.Connect(ctx, client.Options{URL: url, Credentials: creds, NoReconnect: true})
	if codeOf(err) != protocol.CodeUnavailable || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("connecting to the impostor: %v (code %q), want unavailable naming uid 65534", err, codeOf(err))
	}
	var stranger *client.StrangerBusError
	if !errors.As(err, &stranger) || stranger.UID != 65534 {
		t.Errorf("connecting to the impostor: %v, want a StrangerBusError of uid 65534", err)
	}
	stop()
	captured := 0
	for _, l := range lines() {
		if strings.Contains(l, password) {
			captured++
		}
	}
	t.Logf("the impostor: %d connections, %d passwords", accepted(lines()), captured)
	if captured > 0 {
		t.Fatalf("the client sent its password to uid 65534's listener %d times", captured)
	}

	// The bus back on its port: the client comes back by itself.
	startServer(t, port, dir, agent)
	select {
	case <-reconnected:
	case <-time.After(testscale.D(wait)):
		t.Fatal("the client did not reconnect to the bus back on its port")
	}
	_ = c
}

func accepted(lines []string) int {
	n := 0
	for _, l := range lines {
		if l == "accepted" {
			n++
		}
	}
	return n
}
