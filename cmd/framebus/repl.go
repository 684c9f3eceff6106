package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/framebus/framebus/protocol"
)

// The REPL runs the same commands as the command line, from the same
// table (commands()), one line at a time, with the tab's URL in the prompt
// (DR-013). Line editing and history come from golang.org/x/term's
// Terminal: the Go team's own VT100 line editor, small, with no cgo and no
// terminfo, which is all a prompt of one-line commands needs.

// replRefused are commands that make no sense inside the REPL.
var replRefused = map[string]string{
	"serve":  "start the node in another terminal: framebus serve",
	"demo":   "run it from the shell: framebus demo",
	"repl":   "you are in it",
	"config": "run it from the shell: framebus config",
	"watch":  "it runs until interrupted; run it in another terminal: framebus watch",
}

// promptTimeout bounds the URL query after each command.
const promptTimeout = 2 * time.Second

// envHistory names the history file; default in the user's cache.
const envHistory = "FRAMEBUS_REPL_HISTORY"

func replCommand() command {
	return command{
		name:    "repl",
		summary: "an interactive shell of framebus commands, with the tab's URL in the prompt",
		group:   groupOther,
		details: `Each line is a command as on the command line, without "framebus":
  framebus [example.com]> navigate example.com/search --wait
A unique prefix of a command is enough (nav, cli); help lists them.
--tab, --bus and --prefix given to repl apply to every command.
History: up and down arrows, kept in $` + envHistory + ` (default ~/.cache/framebus/repl_history).
exit, quit, Ctrl-D or Ctrl-C end it. When stdin is not a terminal, lines are
read plainly and no prompt is printed.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, true)
			return func(c *cli, args []string) error {
				if len(args) > 0 {
					return usagef("repl: takes no arguments, got %q", args)
				}
				return c.repl(target)
			}
		},
	}
}

// session is one REPL run.
type session struct {
	c      *cli
	target clientFlags
	prompt *client // a connection for prompt queries, made when needed
}

func (c *cli) repl(target clientFlags) error {
	s := &session{c: c, target: target}
	defer s.closePrompt()
	in, isFile := c.stdin.(*os.File)
	if isFile && term.IsTerminal(int(in.Fd())) {
		return s.interactive(in)
	}
	return s.plain()
}

// plain reads commands from a pipe or file: one per line, no prompt.
func (s *session) plain() error {
	sc := bufio.NewScanner(s.c.stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if s.line(sc.Text()) {
			return nil
		}
	}
	return sc.Err()
}

// interactive runs the line editor on a terminal.
func (s *session) interactive(in *os.File) error {
	old, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return s.plain()
	}
	defer term.Restore(int(in.Fd()), old)
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{in, s.c.stdout}, s.promptText())
	h := openHistory(s.historyPath())
	t.History = h
	out := s.c.stdout
	s.c.stdout = t // the terminal turns \n into \r\n in raw mode
	defer func() { s.c.stdout = out }()
	for {
		line, err := t.ReadLine()
		if errors.Is(err, term.ErrPasteIndicator) {
			err = nil
		}
		if err != nil { // Ctrl-D, Ctrl-C
			fmt.Fprintln(t)
			return nil
		}
		if s.line(line) {
			return nil
		}
		t.SetPrompt(s.promptText())
	}
}

// line runs one line; it reports whether the session should end.
func (s *session) line(line string) bool {
	words, err := splitLine(line)
	if err != nil {
		s.c.printJSON(errorReply{Error: err.Error(), Code: protocol.CodeBadRequest})
		return false
	}
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "exit", "quit":
		return true
	}
	cmd, err := resolveCommand(words[0])
	if err != nil {
		s.c.printJSON(errorReply{Error: err.Error(), Code: protocol.CodeBadRequest})
		return false
	}
	s.c.report(s.c.runCommand(cmd, s.withTarget(cmd, words[1:])))
	return false
}

// withTarget adds the session's --tab, --bus and --prefix to a command
// that takes them and was not given them.
func (s *session) withTarget(cmd command, args []string) []string {
	fs, _ := cmd.newFlagSet()
	var extra []string
	for name, v := range map[string]string{"tab": s.target.tab, "bus": s.target.bus, "prefix": s.target.prefix} {
		if v == "" || fs.Lookup(name) == nil || hasFlag(args, name) {
			continue
		}
		extra = append(extra, "--"+name, v)
	}
	sort.Strings(extra) // a stable order, for the reader of a dry run
	return append(extra, args...)
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}

// resolveCommand finds a command by its name or a unique prefix of it.
func resolveCommand(word string) (command, error) {
	if why, ok := replRefused[word]; ok {
		return command{}, fmt.Errorf("%s is not available in the REPL: %s", word, why)
	}
	var matches []command
	for _, cmd := range commands() {
		if _, refused := replRefused[cmd.name]; refused {
			continue
		}
		if cmd.name == word {
			return cmd, nil
		}
		if strings.HasPrefix(cmd.name, word) {
			matches = append(matches, cmd)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return command{}, fmt.Errorf("unknown command %q; help lists them", word)
	}
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = m.name
	}
	return command{}, fmt.Errorf("%q is ambiguous: %s", word, strings.Join(names, ", "))
}

// promptText is "framebus [URL]> " with the tab's URL as DR-013 shows it,
// or "framebus> " when no node answers.
func (s *session) promptText() string {
	url := s.currentURL()
	if url == "" {
		return "framebus> "
	}
	return "framebus [" + promptURL(url) + "]> "
}

// promptURL strips the protocol and a trailing slash:
// https://example.com/ -> example.com, http://localhost:3000/api ->
// localhost:3000/api.
func promptURL(u string) string {
	for _, p := range []string{"https://", "http://"} {
		if strings.HasPrefix(u, p) {
			u = u[len(p):]
			break
		}
	}
	return strings.TrimSuffix(u, "/")
}

// currentURL asks the session's tab for its URL ("" when no node answers).
func (s *session) currentURL() string {
	ctx, cancel := context.WithTimeout(s.c.ctx, promptTimeout)
	defer cancel()
	if s.prompt == nil {
		cl, err := s.c.connect(s.target)
		if err != nil {
			return ""
		}
		s.prompt = cl
	}
	tab, err := s.prompt.resolveTab(ctx, s.target.tab)
	if err != nil {
		s.closePrompt() // the node may have gone: connect again next time
		return ""
	}
	plan := protocol.Plan{Action: &protocol.Action{Type: "url"}}
	data, _ := json.Marshal(plan)
	res, _, err := s.prompt.sendPlan(ctx, tab, data, plan)
	if err != nil || !res.OK || len(res.Results) != 1 {
		s.closePrompt()
		return ""
	}
	var u string
	_ = json.Unmarshal(res.Results[0].Value, &u)
	return u
}

func (s *session) closePrompt() {
	if s.prompt != nil {
		s.prompt.close()
		s.prompt = nil
	}
}

func (s *session) historyPath() string {
	if p := s.c.getenv(envHistory); p != "" {
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "framebus", "repl_history")
}

// splitLine splits a command line as a shell would, for the quoting that
// matters here: '...' literal, "..." with \" and \\, a backslash outside
// quotes escaping the next character.
func splitLine(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unclosed ' quote")
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, errors.New(`unclosed " quote`)
			}
			inWord = true
		case ch == '\\':
			if i+1 < len(line) {
				i++
				cur.WriteByte(line[i])
			}
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// fileHistory is the terminal's history, also appended to a file so the
// next session can recall it. A file that cannot be written only costs
// the persistence.
type fileHistory struct {
	path    string
	entries []string // oldest first
}

// historyKept bounds the history.
const historyKept = 1000

func openHistory(path string) *fileHistory {
	h := &fileHistory{path: path}
	if path == "" {
		return h
	}
	if data, err := os.ReadFile(path); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" {
				h.entries = append(h.entries, l)
			}
		}
		if len(h.entries) > historyKept {
			h.entries = h.entries[len(h.entries)-historyKept:]
		}
	}
	return h
}

func (h *fileHistory) Add(entry string) {
	if entry == "" || (len(h.entries) > 0 && h.entries[len(h.entries)-1] == entry) {
		return
	}
	h.entries = append(h.entries, entry)
	if len(h.entries) > historyKept {
		h.entries = h.entries[1:]
	}
	if h.path == "" || strings.ContainsAny(entry, "\n\r") {
		return
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, entry)
}

func (h *fileHistory) Len() int { return len(h.entries) }

func (h *fileHistory) At(i int) string { return h.entries[len(h.entries)-1-i] }
