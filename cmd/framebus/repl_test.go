package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

func TestPromptURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.com/":          "example.com",
		"http://localhost:3000/api":     "localhost:3000/api",
		"http://127.0.0.1:8080/a?q=1":   "127.0.0.1:8080/a?q=1",
		"about:blank":                   "about:blank",
		"https://example.com/docs/":     "example.com/docs",
		"https://example.com/#fragment": "example.com/#fragment",
	} {
		if got := promptURL(in); got != want {
			t.Errorf("promptURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveCommand(t *testing.T) {
	for word, want := range map[string]string{
		"navigate": "navigate", "nav": "navigate", "cli": "click", "cl": "", "ev": "eval",
		"text": "text", "type": "type", "scr": "", "s": "", "zzz": "", "serve": "", "watch": "",
	} {
		cmd, err := resolveCommand(word)
		switch {
		case want == "" && err == nil:
			t.Errorf("%q resolved to %s, want an error", word, cmd.name)
		case want != "" && (err != nil || cmd.name != want):
			t.Errorf("%q: %s %v, want %s", word, cmd.name, err, want)
		}
	}
	if _, err := resolveCommand("s"); err == nil || !strings.Contains(err.Error(), "select") || !strings.Contains(err.Error(), "scroll") {
		t.Errorf("ambiguous prefix: %v, want the candidates listed", err)
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
		{`eval 1 + 1`, []string{"eval", "1", "+", "1"}},
		{`click a\ b`, []string{"click", "a b"}},
		{`  `, nil},
	}
	for _, tt := range tests {
		got, err := splitLine(tt.line)
		if err != nil || strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("splitLine(%q) = %q, %v; want %q", tt.line, got, err, tt.want)
		}
	}
	for _, bad := range []string{`type "unclosed`, `click 'unclosed`} {
		if _, err := splitLine(bad); err == nil {
			t.Errorf("splitLine(%q) accepted", bad)
		}
	}
}

// Through a real terminal: the prompt follows the tab's URL, abbreviations
// and history work, exit ends it.
func TestREPLOnATerminal(t *testing.T) {
	n := startNode(t)
	history := filepath.Join(t.TempDir(), "history")
	cmd := exec.Command(binary, "repl")
	cmd.Env = append(n.env, envHistory+"="+history)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 400})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out lockedBuffer
	go io.Copy(&out, tty)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if t.Failed() {
			t.Logf("terminal:\n%s", out.String())
		}
	}()
	expect := func(what string, re *regexp.Regexp) {
		t.Helper()
		waitFor(t, what, 30*time.Second, func() bool { return re.MatchString(out.String()) })
	}
	expect("the first prompt", regexp.MustCompile(`framebus \[about:blank\]> `))
	host := strings.TrimPrefix(site(""), "http://")
	tty.WriteString("nav " + site("/search.html?q=x") + " --wait\r")
	expect("the prompt after navigate", regexp.MustCompile(`framebus \[`+regexp.QuoteMeta(host+"/search.html?q=x")+`\]> `))
	tty.WriteString("cli #result2\r")
	expect("the prompt after a click", regexp.MustCompile(`framebus \[`+regexp.QuoteMeta(host+"/product.html?id=2")+`\]> `))
	tty.WriteString("\x1b[A\x1b[A\r") // up twice: the navigate again
	expect("the navigate recalled from history", regexp.MustCompile(`(?s)product\.html\?id=2\]> .*framebus \[`+regexp.QuoteMeta(host+"/search.html?q=x")+`\]> `))
	tty.WriteString("s\r")
	expect("an ambiguous prefix", regexp.MustCompile(`is ambiguous`))
	tty.WriteString("exit\r")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("repl exited: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("repl did not exit")
	}
	data, err := os.ReadFile(history)
	if err != nil || !strings.Contains(string(data), "cli #result2") {
		t.Fatalf("history file: %q %v", data, err)
	}
}

// From a pipe: one command per line, no prompt, replies as the CLI's.
func TestREPLFromAPipe(t *testing.T) {
	n := startNode(t)
	script := "navigate " + site("/") + " --wait\neval 1 + 1\nbogus\nserve\nquit\neval 'never run'\n"
	r := framebus(t, append(n.env, envHistory+"="+filepath.Join(t.TempDir(), "h")), script, "repl")
	lines := readLines(r.stdout)
	if r.status != 0 || len(lines) != 4 {
		t.Fatalf("exit %d, %d lines:\n%s", r.status, len(lines), r.stdout)
	}
	for i, want := range []string{`"ok":true`, `"value":2`, `unknown command \"bogus\"`, "not available in the REPL"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s, want %s", i, lines[i], want)
		}
	}
}
