package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testchild"

	"github.com/creack/pty"
)

func TestPromptURL(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", 200)
	for in, want := range map[string]string{
		"https://example.com/":          "example.com",
		"http://localhost:3000/api":     "localhost:3000/api",
		"http://127.0.0.1:8080/a?q=1":   "127.0.0.1:8080/a?q=1",
		"about:blank":                   "about:blank",
		"https://example.com/docs/":     "example.com/docs",
		"https://example.com/#fragment": "example.com/#fragment",
		"HTTPS://Example.com/":          "Example.com",
		"chrome-error://chromewebdata/": "chrome-error://chromewebdata",
		"http://x.test/a\x1b[2Jb":       "x.test/a?[2Jb",
		long:                            "example.com/" + strings.Repeat("a", maxPromptURL-len("example.com/")-1) + "…",
	} {
		if got := promptURL(in); got != want {
			t.Errorf("promptURL(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"":                          "framebus> ",
		"https://example.com/":      "framebus [example.com]> ",
		"http://localhost:3000/api": "framebus [localhost:3000/api]> ",
		"about:blank":               "framebus [about:blank]> ",
	} {
		if got := promptFor(in); got != want {
			t.Errorf("promptFor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveCommand(t *testing.T) {
	for word, want := range map[string]string{
		// exact names
		"navigate": "navigate", "text": "text", "type": "type", "tab": "tab", "close": "close",
		"click": "click", "help": "help", "watch": "watch", "config": "config", "url": "url",
		// unique prefixes
		"nav": "navigate", "cli": "click", "ev": "eval", "clo": "close", "st": "status",
		"la": "launch", "wat": "watch", "he": "help", "scre": "screenshot", "wai": "wait-for", "sel": "select",
	} {
		cmd, err := resolveCommand(word)
		if err != nil || cmd.name != want {
			t.Errorf("%q: %q, %v; want %s", word, cmd.name, err, want)
		}
	}
	for word, mention := range map[string][]string{
		"s":     {"ambiguous", "scroll", "select", "screenshot", "session", "snapshot", "status"},
		"scr":   {"ambiguous", "scroll", "screenshot"},
		"t":     {"ambiguous", "type", "text", "title", "tab"},
		"p":     {"ambiguous", "plan", "pages"},
		"c":     {"ambiguous", "click", "close", "config"}, // only a unique prefix stands for a command
		"cl":    {"ambiguous", "click", "close"},
		"w":     {"ambiguous", "wait-for", "watch"},
		"se":    {"ambiguous", "select", "session"},
		"zzz":   {`unknown command "zzz"`, "help"},
		"":      {"unknown command"},
		"serve": {"does not run in the REPL", "framebus serve"},
		"demo":  {"does not run in the REPL"},
		"repl":  {"does not run in the REPL"},
	} {
		cmd, err := resolveCommand(word)
		if err == nil {
			t.Errorf("%q resolved to %s, want an error", word, cmd.name)
			continue
		}
		for _, m := range mention {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%q: %v; want it to mention %q", word, err, m)
			}
		}
	}
	// Exact names always win, whatever else they are a prefix of.
	for _, cmd := range replCommands() {
		if got, err := resolveCommand(cmd.name); err != nil || got.name != cmd.name {
			t.Errorf("%q resolves to %q, %v", cmd.name, got.name, err)
		}
	}
}

// help in the REPL takes what a command line takes: an exact name (serve
// too, for its help), a unique prefix, and refuses an ambiguous prefix
// with the same list.
func TestHelpTopic(t *testing.T) {
	for word, want := range map[string]string{
		"click": "click", "cli": "click", "nav": "navigate", "serve": "serve", "clo": "close",
	} {
		if got, err := helpTopic(word); err != nil || got != want {
			t.Errorf("helpTopic(%q) = %q, %v; want %s", word, got, err, want)
		}
	}
	for word, want := range map[string]string{
		"cl":  `help: "cl" is ambiguous: it could be click, close`,
		"zzz": `help: unknown command "zzz"`,
	} {
		if _, err := helpTopic(word); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("helpTopic(%q): %v; want %s", word, err, want)
		}
	}
}

func TestSplitLine(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{`type "#q" "hello world"`, []string{"type", "#q", "hello world"}},
		{`click '[data-x="a b"]'`, []string{"click", `[data-x="a b"]`}},
		{`eval "a \"b\" \\c"`, []string{"eval", `a "b" \c`}},
		{`eval "'a\nb'"`, []string{"eval", `'a\nb'`}},
		{`eval 'it''s'`, []string{"eval", "its"}},
		{`eval "it's"`, []string{"eval", "it's"}},
		{`eval 1 + 1`, []string{"eval", "1", "+", "1"}},
		{`click a\ b`, []string{"click", "a b"}},
		{`click \#x`, []string{"click", "#x"}},
		{`type --key Enter ""`, []string{"type", "--key", "Enter", ""}},
		{`fill  #q	"x"y'z' `, []string{"fill", "#q", "xyz"}},
		{`navigate example.com/a?q=1&b=2`, []string{"navigate", "example.com/a?q=1&b=2"}},
		{`type "héllo wörld"`, []string{"type", "héllo wörld"}},
		{`  `, nil},
		{``, nil},
	}
	for _, tt := range tests {
		got, err := splitLine(tt.line)
		if err != nil || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
			t.Errorf("splitLine(%q) = %q, %v; want %q", tt.line, got, err, tt.want)
		}
	}
	for _, bad := range []string{`type "unclosed`, `click 'unclosed`, `eval "a\"`, `click a\`} {
		if got, err := splitLine(bad); err == nil {
			t.Errorf("splitLine(%q) = %q, want an error", bad, got)
		}
	}
}

// The key hook: Ctrl-C (as keyAbort) clears the line, Tab completes the
// command name.
func TestEditKey(t *testing.T) {
	if line, pos, ok := editKey("navigate x", 4, keyAbort); !ok || line != "" || pos != 0 {
		t.Errorf("Ctrl-C: %q %d %v, want the line cleared", line, pos, ok)
	}
	if _, _, ok := editKey("nav", 3, 'x'); ok {
		t.Error("an ordinary key was taken by the hook")
	}
	for _, tt := range []struct {
		line    string
		pos     int
		want    string // the line after Tab, "" for no change
		wantPos int
	}{
		{"navi", 4, "navigate ", 9},
		{"  wai", 5, "  wait-for ", 11},
		{"scre", 4, "screenshot ", 11},
		{"sn", 2, "snapshot ", 9},
		{"sel", 3, "select ", 7}, // serve does not run in the REPL
		{"ex", 2, "exit ", 5},
		{"cli #a", 3, "click #a", 5},
		{"nax #a", 2, "navigate #a", 8}, // the rest of the word is replaced
		{"scr", 3, "", 0},               // scroll, screenshot: nothing more in common
		{"cl #a", 2, "", 0},             // click, close
		{"nav x", 5, "", 0},             // not in the first word
		{"", 0, "", 0},
		{"zz", 2, "", 0},
	} {
		line, pos, ok := editKey(tt.line, tt.pos, '\t')
		switch {
		case tt.want == "" && ok:
			t.Errorf("Tab on %q at %d: %q, want no change", tt.line, tt.pos, line)
		case tt.want != "" && (!ok || line != tt.want || pos != tt.wantPos):
			t.Errorf("Tab on %q at %d: %q %d %v, want %q %d", tt.line, tt.pos, line, pos, ok, tt.want, tt.wantPos)
		}
	}
}

// The session's --tab, --bus and --prefix go to every command that takes
// them, in a form the command parses, unless the line gives its own.
func TestWithTarget(t *testing.T) {
	s := &session{target: clientFlags{tab: "ABC", bus: "nats://127.0.0.1:1", prefix: "pp"}}
	nav, _ := lookupCommand("navigate")
	for _, tt := range []struct {
		args            []string
		tab, bus, prefx string
	}{
		{[]string{"x.com"}, "ABC", "nats://127.0.0.1:1", "pp"},
		{[]string{"x.com", "--tab", "DEF"}, "DEF", "nats://127.0.0.1:1", "pp"},
		{[]string{"--bus=nats://h:2", "x.com"}, "ABC", "nats://h:2", "pp"},
	} {
		fs, _ := nav.newFlagSet()
		if err := fs.Parse(s.withTarget(nav, tt.args)); err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		got := []string{fs.Lookup("tab").Value.String(), fs.Lookup("bus").Value.String(), fs.Lookup("prefix").Value.String()}
		if want := []string{tt.tab, tt.bus, tt.prefx}; fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(fs.Args()) != "[x.com]" {
			t.Errorf("%q: flags %q, args %q; want %q, [x.com]", tt.args, got, fs.Args(), want)
		}
	}
	tab, _ := lookupCommand("tab") // takes --bus and --prefix, no --tab
	if got := s.withTarget(tab, []string{"new"}); fmt.Sprint(got) != "[--bus=nats://127.0.0.1:1 --prefix=pp new]" {
		t.Errorf("tab new: %q", got)
	}
	if got := s.tabArgs(tab, []string{"close"}); fmt.Sprint(got) != "[close ABC]" {
		t.Errorf("tab close in a session on tab ABC: %q", got)
	}
	help, _ := lookupCommand("help")
	if got := s.withTarget(help, []string{"nav"}); fmt.Sprint(got) != "[nav]" {
		t.Errorf("help: %q", got)
	}
}

func TestFileHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "history")
	h := openHistory(path)
	for _, l := range []string{"navigate a.com", "click #x", "click #x", "  ", "eval 1"} {
		h.Add(l)
	}
	if h.Len() != 3 || h.At(0) != "eval 1" || h.At(2) != "navigate a.com" {
		t.Fatalf("history: %d entries, latest %q", h.Len(), h.At(0))
	}
	again := openHistory(path)
	if again.Len() != 3 || again.At(0) != "eval 1" || again.At(1) != "click #x" {
		t.Fatalf("history read back: %q", again.entries)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("history file: %v %v", info, err)
	}
	// A file grown past twice the limit is cut to the last historyKept lines.
	var lines []string
	for i := range 2*historyKept + 5 {
		lines = append(lines, fmt.Sprint("eval ", i))
	}
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	if h := openHistory(path); h.Len() != historyKept || h.At(0) != lines[len(lines)-1] {
		t.Fatalf("long history: %d entries, latest %q", h.Len(), h.At(0))
	}
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != historyKept {
		t.Fatalf("history file compacted to %d lines, want %d", n, historyKept)
	}
	// No path, or one that cannot be written: history still works.
	for _, p := range []string{"", "/proc/framebus-no/history"} {
		h := openHistory(p)
		h.Add("eval 1")
		if h.Len() != 1 {
			t.Errorf("history at %q: %d entries", p, h.Len())
		}
	}
}

// In process, with no node: the lines a script gives, and the REPL's own
// rules (comments, help, refusals, plan from stdin, prefixes).
func TestREPLScriptWithoutNode(t *testing.T) {
	env := noNodeEnv(t)
	env[envHistory] = filepath.Join(t.TempDir(), "history")
	script := strings.Join([]string{
		"# a comment, then a blank line",
		"",
		"nav x.com/a?b=c --dry-run",
		`type "#q" "hello world" --dry-run`,
		"eval 1",
		"plan",
		"s",
		"demo",
		`type "unclosed`,
		"help nav",
		"help cl",
		"quit",
		"eval 2",
	}, "\n") + "\n"
	r := runCLI(t, env, script, "repl", "--bus", "nats://127.0.0.1:1", "--prefix", "pp", "--tab", "ABC")
	out := r.stdout
	for _, want := range []string{
		`{"action":{"type":"navigate","url":"x.com/a?b=c"}}`,
		`{"action":{"type":"type","selector":"#q","text":"hello world"}}`,
		`"code":"unavailable"`,
		"plan: stdin is the REPL's own",
		`\"s\" is ambiguous`,
		"demo does not run in the REPL",
		`unclosed \" quote`,
		"Usage: framebus navigate <url>",
		`help: \"cl\" is ambiguous: it could be click, close`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %s", want)
		}
	}
	if r.status != 0 || strings.Contains(out, `"value":2`) || strings.Contains(out, "framebus>") {
		t.Errorf("exit %d; stdout:\n%s", r.status, out)
	}
	if r := runCLI(t, env, "", "repl", "extra"); r.status != exitUsage {
		t.Errorf("repl extra: exit %d", r.status)
	}
	if r := runCLI(t, env, "", "repl", "--tab", "no such"); r.status != exitUsage || !strings.Contains(r.stdout, "not a tab id") {
		t.Errorf("repl --tab 'no such': exit %d, %s", r.status, r.stdout)
	}
}

// terminal is framebus repl on a pseudo-terminal.
type terminal struct {
	t    *testing.T
	tty  *os.File
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
}

func startTerminal(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	cmd := testchild.DieWithTest(exec.Command(binary, append([]string{"repl"}, args...)...))
	cmd.Env = env
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 300})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, tty: tty, cmd: cmd, out: &lockedBuffer{}, done: make(chan error, 1)}
	go io.Copy(term.out, tty)
	go func() { term.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("terminal:\n%s", term.out.String())
		}
		cmd.Process.Kill()
		tty.Close()
	})
	return term
}

func (term *terminal) send(s string) {
	term.t.Helper()
	if _, err := term.tty.WriteString(s); err != nil {
		term.t.Fatalf("write %q to the terminal: %v", s, err)
	}
}

// expect waits until the terminal's output from offset from on matches
// re, and returns the offset after the match.
func (term *terminal) expect(what string, from int, re *regexp.Regexp) int {
	term.t.Helper()
	end := from
	waitFor(term.t, what, 30*time.Second, func() bool {
		out := term.out.String()
		if loc := re.FindStringIndex(out[from:]); loc != nil {
			end = from + loc[1]
			return true
		}
		return false
	})
	return end
}

// exit waits for the REPL to end and checks it ended with status 0.
func (term *terminal) exit(what string) {
	term.t.Helper()
	select {
	case err := <-term.done:
		if err != nil {
			term.t.Fatalf("%s: the repl exited with %v", what, err)
		}
	case <-time.After(30 * time.Second):
		term.t.Fatalf("%s: the repl did not exit", what)
	}
}

func prompt(url string) *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta("framebus [" + url + "]> "))
}

// Through a real terminal: the prompt follows the tab's URL, prefixes,
// history (also across sessions), Ctrl-C on a line and on a running
// command, the prompt without a node, exit and Ctrl-D.
func TestREPLOnATerminal(t *testing.T) {
	n := startNode(t)
	history := filepath.Join(t.TempDir(), "history")
	env := append(n.env, envHistory+"="+history)
	host := strings.TrimPrefix(site(""), "http://")
	term := startTerminal(t, env)
	at := term.expect("the first prompt", 0, prompt("about:blank"))

	term.send("navigate " + site("/search.html?q=x") + " --wait\r")
	at = term.expect("the prompt after navigate", at, prompt(host+"/search.html?q=x"))

	term.send("cli #result2\r") // cli: the one command it begins
	at = term.expect("the prompt after a click", at, prompt(host+"/product.html?id=2"))

	term.send("\x1b[A\x1b[A\r") // up twice: the navigate again
	at = term.expect("the navigate recalled from history", at, prompt(host+"/search.html?q=x"))

	term.send("eval 'bogus line' +\x03") // Ctrl-C clears it
	term.send("eval 40 + 2\r")
	at = term.expect("eval after Ctrl-C", at, regexp.MustCompile(`"value":42\b`))
	if strings.Contains(term.out.String(), "bogus") && strings.Contains(term.out.String(), "js_error") {
		t.Fatal("the line cleared with Ctrl-C ran")
	}

	// A tab selected in the session is the prompt's tab.
	term.send("tab new " + site("/form.html") + "\r")
	var id string
	re := regexp.MustCompile(`"tab":\{"tab":"([A-Za-z0-9_-]+)"`)
	waitFor(t, "tab new's reply", 30*time.Second, func() bool {
		m := re.FindStringSubmatch(term.out.String()[at:])
		if m != nil {
			id = m[1]
		}
		return m != nil
	})
	term.send("tab select " + id + "\r")
	at = term.expect("the prompt after tab select", at, prompt(host+"/form.html"))
	// Once the selected tab is closed, commands without --tab have no tab
	// (they never fall back to another) until one is selected.
	term.send("tab close\r")
	at = term.expect("the prompt after tab close", at, regexp.MustCompile(`framebus> `))
	term.send("url\r")
	at = term.expect("a command after the selected tab closed", at, regexp.MustCompile(`"the selected tab `+id+` is no longer open`))
	term.send("tab select " + n.tab() + "\r")
	at = term.expect("the prompt after selecting the first tab", at, prompt(host+"/search.html?q=x"))

	// Ctrl-C interrupts a running command, here watch, and the REPL goes
	// on. watch logs "watching" once it runs, so the terminal is no longer
	// raw: Ctrl-C is SIGINT.
	term.send("watch\r")
	at = term.expect("watch subscribed", at, regexp.MustCompile(`watching`))
	term.send("\x03")
	at = term.expect("the prompt after Ctrl-C ended watch", at, prompt(host+"/search.html?q=x"))
	term.send("ur\t") // Tab completes the name
	at = term.expect("url completed", at, regexp.MustCompile(`url `))
	term.send("\r")
	at = term.expect("url after watch", at, regexp.MustCompile(regexp.QuoteMeta(`"value":"`+site("/search.html?q=x")+`"`)))

	term.send("s\r")
	at = term.expect("an ambiguous prefix", at, regexp.MustCompile(`"s\\" is ambiguous: it could be screenshot, scroll, search, select, session, snapshot, status`))
	term.send("serve\r")
	at = term.expect("serve refused", at, regexp.MustCompile(`serve does not run in the REPL`))
	term.send("help cli\r")
	at = term.expect("help of an abbreviation", at, regexp.MustCompile(`Usage: framebus click <selector>`))

	// With the node gone, the prompt says so.
	if status := n.stop(syscall.SIGTERM, 30*time.Second); status != 0 {
		t.Fatalf("serve exited %d", status)
	}
	term.send("\r")
	at = term.expect("the prompt without a node", at, regexp.MustCompile(`framebus> `))
	term.send("url\r")
	at = term.expect("a command without a node", at, regexp.MustCompile(`"code":"unavailable"`))

	term.send("exit\r")
	term.exit("exit")
	data, err := os.ReadFile(history)
	if err != nil || !strings.Contains(string(data), "cli #result2\n") || !strings.HasSuffix(string(data), "exit\n") {
		t.Fatalf("history file: %q %v", data, err)
	}

	// A new session recalls the last one's lines; Ctrl-C clears the
	// recalled line without ending the session; Ctrl-D ends it.
	again := startTerminal(t, env)
	from := again.expect("the prompt of a new session", 0, regexp.MustCompile(`framebus> `))
	again.send("\x1b[A")
	again.expect("exit recalled", from, regexp.MustCompile(`^exit`))
	again.send("\x03\r")
	from = again.expect("a prompt after Ctrl-C", from, regexp.MustCompile(`^exit[^\n]*\n[^\n]*framebus> `))
	again.send("\x04")
	again.exit("Ctrl-D")

	// SIGTERM at the prompt ends the session too.
	third := startTerminal(t, env)
	third.expect("the prompt of a third session", 0, regexp.MustCompile(`framebus> `))
	third.cmd.Process.Signal(syscall.SIGTERM)
	third.exit("SIGTERM")
}

// From a pipe: one command per line, no prompt, replies as the CLI's;
// --tab given to repl is every command's tab.
func TestREPLFromAPipe(t *testing.T) {
	n := startNode(t)
	env := append(n.env, envHistory+"="+filepath.Join(t.TempDir(), "h"))
	script := "navigate " + site("/") + " --wait\neval 1 + 1\nbogus\nserve\nquit\neval 'never run'\n"
	r := framebus(t, env, script, "repl")
	lines := readLines(r.stdout)
	if r.status != 0 || len(lines) != 4 || r.stderr != "" {
		t.Fatalf("exit %d, %d lines:\n%s\nstderr: %s", r.status, len(lines), r.stdout, r.stderr)
	}
	for i, want := range []string{`"ok":true`, `"value":2`, `unknown command \"bogus\"`, "does not run in the REPL"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s, want %s", i, lines[i], want)
		}
	}

	opened := mustOK(t, n.env, "tab", "new", site("/form.html"))
	id := opened["tab"].(map[string]any)["tab"].(string)
	script = "url\nnav " + site("/search.html?q=y") + "\nurl --tab " + n.tab() + "\ntab close\npages\n"
	r = framebus(t, env, script, "repl", "--tab", id)
	lines = readLines(r.stdout)
	if r.status != 0 || len(lines) != 5 {
		t.Fatalf("repl --tab: exit %d:\n%s", r.status, r.stdout)
	}
	for i, want := range []string{
		`"value":"` + site("/form.html") + `"`,
		`"url":"` + site("/search.html?q=y") + `"`,
		`"value":"` + site("/") + `"`, // the line's own --tab wins
		`"ok":true`,
		`"tabs":[{"tab":"` + n.tab() + `"`, // tab close closed the session's tab
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s, want %s", i, lines[i], want)
		}
	}
}

// A script that has not ended (its pipe still open) stops on SIGTERM.
func TestREPLFromAPipeStopsOnSignal(t *testing.T) {
	n := startNode(t)
	cmd := testchild.DieWithTest(exec.Command(binary, "repl"))
	cmd.Env = n.env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	io.WriteString(stdin, "eval 6 * 7\n")
	waitFor(t, "the reply", 30*time.Second, func() bool { return strings.Contains(out.String(), `"value":42`) })
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("repl exited with %v; output:\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("repl did not exit on SIGTERM; output:\n%s", out.String())
	}
}
