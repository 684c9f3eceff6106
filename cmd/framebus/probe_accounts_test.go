package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// wsLoginPage is a page's script that logs in to a NATS WebSocket
// listener over and over with the raw protocol (no client library), four
// at a time, for about three seconds: CONNECT with user and a guessed
// password, then PING. It counts the outcomes ("in": a PONG, the login
// held; "refused": the server's -ERR) and ends with one control login
// with a user and password the test knows, so the count is seen to see
// a login.
const wsLoginPage = `(async () => {
  const url = %URL%, guessed = %USER%, controlUser = %CONTROLUSER%, control = %CONTROL%;
  const attempt = (user, pass) => new Promise((resolve) => {
    let ws, buf = "", sent = false, done = false;
    const end = (r) => { if (!done) { done = true; clearTimeout(timer); try { ws.close(); } catch (e) {} resolve(r); } };
    const timer = setTimeout(() => end("timeout"), 5000);
    try { ws = new WebSocket(url); } catch (e) { end("throw"); return; }
    ws.binaryType = "arraybuffer";
    ws.onmessage = (ev) => {
      buf += typeof ev.data === "string" ? ev.data : new TextDecoder().decode(ev.data);
      if (!sent && buf.includes("INFO")) {
        sent = true;
        ws.send("CONNECT " + JSON.stringify({user, pass, verbose: false, pedantic: false, protocol: 1}) + "\r\nPING\r\n");
      } else if (sent && buf.includes("PONG")) end("in");
      else if (sent && buf.includes("-ERR")) end("refused");
    };
    ws.onclose = () => end(sent ? "refused" : "closed");
  });
  const counts = {};
  const start = performance.now();
  let n = 0;
  await Promise.all([0, 1, 2, 3].map(async (w) => {
    while (performance.now() - start < 3000) {
      const r = await attempt(guessed, "guess-" + w + "-" + n++);
      counts[r] = (counts[r] || 0) + 1;
    }
  }));
  const ms = performance.now() - start;
  return JSON.stringify({attempts: n, ms, counts, control: await attempt(controlUser, control)});
})()`

// cpuTicks is the user and system CPU time of process pid, in clock
// ticks (/proc/PID/stat).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return utime + stime
}

// A page the node's own browser visits (no whitelist, so it reaches
// loopback) finds the node's WebSocket listener and tries logins as the
// node's own agent user, whose name every node has. The listener takes
// web pages of the listed origin only (the test site's): from another
// origin (the same site as localhost) no attempt reaches the login, not
// even the control with a real observer password, and the node checks no
// hash for them; from the listed origin none of the guesses gets in, what
// each costs the node is measured (the bcrypt compare of a wrong
// password), and the control gets in, so the count sees a login.
func TestProbeWebSocketLoginsFromAPage(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte("bus:\n  websocketOrigins: ["+testSite.URL+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, envWebSocket+"=127.0.0.1:0", envConfig+"="+config)
	tab := n.tab()
	if !strings.HasPrefix(n.state.WebSocket, "ws://127.0.0.1:") {
		t.Fatalf("no WebSocket listener: %+v", n.state)
	}
	file := filepath.Join(t.TempDir(), "observer.json")
	mustOK(t, n.env, "creds", "add", "dashboard", "--role", protocol.RoleObserver, "--out", file)
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	script := strings.NewReplacer("%URL%", quote(n.state.WebSocket), "%USER%", quote(serving.LocalAgentUser),
		"%CONTROLUSER%", quote("dashboard"), "%CONTROL%", quote(readPassword(t, file))).Replace(wsLoginPage)
	type result struct {
		Attempts int            `json:"attempts"`
		MS       float64        `json:"ms"`
		Counts   map[string]int `json:"counts"`
		Control  string         `json:"control"`
	}
	run := func(page string) (got result, ticks int64) {
		t.Helper()
		mustOK(t, n.env, "navigate", page, "--tab", tab)
		before := cpuTicks(t, n.state.PID)
		out := mustOK(t, n.env, "eval", script, "--tab", tab)
		ticks = cpuTicks(t, n.state.PID) - before
		if err := json.Unmarshal([]byte(out["value"].(string)), &got); err != nil {
			t.Fatalf("the page's answer %v: %v", out["value"], err)
		}
		t.Logf("a page at %s in the node's browser: %d logins as %s in %.0f ms (%.0f/s): %v; the node spent %d ms of CPU (%.2f ms a login, the page's plan included); control login as an observer: %s",
			page, got.Attempts, serving.LocalAgentUser, got.MS, float64(got.Attempts)/got.MS*1000, got.Counts, ticks*10,
			float64(ticks)*10/float64(max(got.Attempts, 1)), got.Control)
		return got, ticks
	}

	elsewhere := strings.Replace(site("/form.html"), "127.0.0.1", "localhost", 1)
	got, _ := run(elsewhere)
	if got.Counts["in"] != 0 || got.Counts["refused"] != 0 || got.Control == "in" {
		t.Errorf("a page of an origin not listed reached the login: %v, control %s", got.Counts, got.Control)
	}

	got, _ = run(site("/form.html"))
	if got.Counts["in"] != 0 {
		t.Errorf("%d of the page's guessed logins got in", got.Counts["in"])
	}
	if got.Counts["refused"] == 0 {
		t.Errorf("no login was refused: %v", got.Counts)
	}
	if got.Control != "in" {
		t.Errorf("the control login with the observer's password: %s, want in", got.Control)
	}
}
