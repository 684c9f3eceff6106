package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// devtoolsProbeEnv makes this test binary the attacker of
// TestNoDevToolsPortForLocalUsers: it probes the addresses of the JSON
// devtoolsProbeJob it holds and prints a devtoolsProbeResult.
const devtoolsProbeEnv = "FRAMEBUS_TEST_DEVTOOLS_PROBE"

type devtoolsProbeJob struct {
	Addrs      []string // host:port of every listening socket to try
	BrowserPid int
}

type devtoolsProbeResult struct {
	Probed   int
	Answered []string // what spoke DevTools, and how
	// Cmdline is the browser's command line as the user reads it.
	Cmdline []string
}

// An unprivileged local user finds no DevTools port of a browser the node
// launched: as uid 65534, every TCP socket listening on the machine that
// belongs to the node or its browser, or is new since before the node
// started and belongs to nobody known, is asked for DevTools (GET
// /json/version and a websocket upgrade to /devtools/browser/): none
// answers. The browser's command line, which any user can read, names a
// pipe and no port.
func TestNoDevToolsPortForLocalUsers(t *testing.T) {
	setpriv := needSetpriv(t)
	before := tcpListeners(t)
	n := startNode(t)
	browser := chromiumOf(t, n.process.cmd.Process.Pid)
	args := cmdline(browser)
	if !slices.Contains(args, "--remote-debugging-pipe") {
		t.Errorf("the browser's command line %q has no --remote-debugging-pipe", args)
	}

	ours := map[int]bool{n.process.cmd.Process.Pid: true}
	for grew := true; grew; { // the node's descendants: the browser and its helpers
		grew = false
		for _, p := range allProcesses() {
			if pp, ok := parentOf(p); ok && ours[pp] && !ours[p] {
				ours[p], grew = true, true
			}
		}
	}
	owners := socketOwners()
	var addrs []string
	others := 0
	for inode, addr := range tcpListeners(t) {
		mine, known := false, len(owners[inode]) > 0
		for _, p := range owners[inode] {
			mine = mine || ours[p]
		}
		_, old := before[inode]
		switch {
		case mine, !old && !known:
			addrs = append(addrs, addr)
		case !old:
			others++ // another process's, started meanwhile
		}
	}
	slices.Sort(addrs)
	t.Logf("%d processes of the node; listening sockets to probe: %v (%d new ones of other processes left alone)", len(ours), addrs, others)
	if len(addrs) == 0 {
		t.Fatal("not even the node's bus listener was found: the scan is blind")
	}

	// The attacker: this test binary, copied where uid 65534 can run it.
	home := nobodyHome(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(home, "probe")
	copyFile(t, self, bin, 0o755)
	job, _ := json.Marshal(devtoolsProbeJob{Addrs: addrs, BrowserPid: browser})
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, devtoolsProbeEnv + "=" + string(job)}
	if raceEnabled {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	r := framebusAs(t, setpriv, bin, env, "", "-test.run=^$")
	var res devtoolsProbeResult
	if r.status != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil {
		t.Fatalf("the probe as uid 65534: exit %d, %s %s", r.status, r.stdout, r.stderr)
	}
	t.Logf("as uid 65534: %d sockets probed, %d answered DevTools %v", res.Probed, len(res.Answered), res.Answered)
	if res.Probed != len(addrs) {
		t.Errorf("probed %d of %d sockets", res.Probed, len(addrs))
	}
	if len(res.Answered) != 0 {
		t.Errorf("%d DevTools endpoints answered an unprivileged local user: %v", len(res.Answered), res.Answered)
	}
	if len(res.Cmdline) == 0 {
		t.Error("the probe could not read the browser's command line")
	}
	for _, a := range res.Cmdline {
		if strings.HasPrefix(a, "--remote-debugging-port") || strings.HasPrefix(a, "--remote-debugging-address") {
			t.Errorf("the browser's command line, as any user reads it, has %q", a)
		}
	}
}

// chromiumOf is the Chromium process the node process pid started.
func chromiumOf(t *testing.T, pid int) int {
	t.Helper()
	for _, child := range childProcesses(pid) {
		for _, arg := range cmdline(child) {
			if strings.HasPrefix(arg, "--user-data-dir=") {
				return child
			}
		}
	}
	t.Fatalf("no chromium child of process %d", pid)
	return 0
}

// parentOf reads a process's parent from /proc.
func parentOf(pid int) (int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// tcpListeners lists the machine's listening TCP sockets, by inode, as an
// address to connect to (a wildcard listener is reached on loopback).
func tcpListeners(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // TCP_LISTEN
				continue
			}
			ip, port, ok := procNetAddr(fields[1])
			if !ok {
				t.Fatalf("%s: unreadable address %q", file, fields[1])
			}
			if ip.IsUnspecified() {
				ip = net.IPv4(127, 0, 0, 1)
				if strings.HasSuffix(file, "6") {
					ip = net.IPv6loopback
				}
			}
			out[fields[9]] = net.JoinHostPort(ip.String(), strconv.Itoa(port))
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// procNetAddr decodes /proc/net/tcp's ADDR:PORT: the address is written
// as 32-bit words in the machine's (little-endian) order.
func procNetAddr(s string) (net.IP, int, bool) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexIP)
	port, perr := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, false
	}
	ip := make(net.IP, len(raw))
	for w := 0; w < len(raw); w += 4 {
		for i := range 4 {
			ip[w+i] = raw[w+3-i]
		}
	}
	return ip, int(port), true
}

// socketOwners maps socket inodes to the processes holding them.
func socketOwners() map[string][]int {
	out := map[string][]int{}
	for _, p := range allProcesses() {
		dir := fmt.Sprintf("/proc/%d/fd", p)
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, fd.Name()))
			if inode, ok := strings.CutPrefix(link, "socket:["); ok && err == nil {
				out[strings.TrimSuffix(inode, "]")] = append(out[strings.TrimSuffix(inode, "]")], p)
			}
		}
	}
	return out
}

// runDevToolsProbe is the attacker's main: it speaks DevTools to every
// address it was given, and reads the browser's command line.
func runDevToolsProbe(jobJSON string) int {
	var job devtoolsProbeJob
	if err := json.Unmarshal([]byte(jobJSON), &job); err != nil {
		fmt.Fprintln(os.Stderr, "probe job:", err)
		return 1
	}
	res := devtoolsProbeResult{Answered: []string{}}
	client := &http.Client{Timeout: 3 * time.Second}
	for _, addr := range job.Addrs {
		res.Probed++
		ws := "/devtools/browser/"
		if resp, err := client.Get("http://" + addr + "/json/version"); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			var v struct {
				WS string `json:"webSocketDebuggerUrl"`
			}
			if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &v) == nil && v.WS != "" {
				res.Answered = append(res.Answered, addr+" GET /json/version: "+v.WS)
				if i := strings.Index(v.WS, "/devtools/"); i >= 0 {
					ws = v.WS[i:]
				}
			}
		}
		if status := websocketUpgrade(addr, ws); strings.Contains(status, " 101 ") {
			res.Answered = append(res.Answered, addr+" websocket "+ws+": "+status)
		}
	}
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", job.BrowserPid)); err == nil {
		res.Cmdline = strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

// websocketUpgrade asks addr to upgrade path to a websocket and returns
// the status line it answered, "" if none.
func websocketUpgrade(addr, path string) string {
	conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", path, addr)
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line)
}
