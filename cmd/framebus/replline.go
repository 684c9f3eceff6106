package main

// The REPL's pieces that need no terminal and no node: the prompt, the
// line splitter, command names and prefixes, the key hook and the
// history file.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/framebus/framebus/internal/atomicfile"
)

// promptFor is the prompt for the tab's URL: "framebus [URL]> ", or
// "framebus> " when no node answered.
func promptFor(url string) string {
	if url == "" {
		return "framebus> "
	}
	return "framebus [" + promptURL(url) + "]> "
}

// maxPromptURL bounds the URL in the prompt, in characters, so that a
// long URL (data:, a long query) leaves room to type.
const maxPromptURL = 80

// promptURL is a URL as the prompt shows it (DR-013): without http:// or
// https:// and without a trailing slash (https://example.com/ is
// example.com, http://localhost:3000/api is localhost:3000/api); other
// URLs (about:blank) as they are. Control characters become '?', and a
// URL longer than maxPromptURL is cut with an ellipsis.
func promptURL(u string) string {
	for _, p := range []string{"https://", "http://"} {
		if len(u) >= len(p) && strings.EqualFold(u[:len(p)], p) {
			u = u[len(p):]
			break
		}
	}
	u = strings.TrimSuffix(u, "/")
	u = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, u)
	if utf8.RuneCountInString(u) > maxPromptURL {
		u = string([]rune(u)[:maxPromptURL-1]) + "…"
	}
	return u
}

// splitLine splits a line into words as a POSIX shell does, without
// expansions: blanks separate words; '...' is literal; in "..." a
// backslash escapes " and \ and is kept before any other character;
// outside quotes a backslash makes the next character literal; quoted
// and unquoted parts next to each other are one word, and a pair of
// quotes with nothing between is an empty word. An unclosed quote or a
// trailing backslash is an error.
func splitLine(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; ch {
		case ' ', '\t', '\r', '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unclosed ' quote")
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case '"':
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
		case '\\':
			if i+1 >= len(line) {
				return nil, errors.New(`the line ends with a backslash; write \\ for one`)
			}
			i++
			cur.WriteByte(line[i])
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

// replCommands are the commands the REPL runs, in the table's order.
func replCommands() []command {
	var out []command
	for _, cmd := range commands() {
		if _, refused := replRefused[cmd.name]; !refused {
			out = append(out, cmd)
		}
	}
	return out
}

// resolveCommand finds the command a line's first word names: its exact
// name, else the one command the word is a prefix of. A prefix of several
// is an error that lists them: guessing could run an action nobody meant.
func resolveCommand(word string) (command, error) {
	if why, ok := replRefused[word]; ok {
		return command{}, fmt.Errorf("%s does not run in the REPL: %s", word, why)
	}
	var matches []command
	for _, cmd := range replCommands() {
		if cmd.name == word {
			return cmd, nil
		}
		if word != "" && strings.HasPrefix(cmd.name, word) {
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
	sort.Strings(names)
	return command{}, fmt.Errorf("%q is ambiguous: it could be %s", word, strings.Join(names, ", "))
}

// helpTopic is the command "help word" shows in the REPL: the one named
// word (serve too, which has help though it does not run here), else the
// one command word is a prefix of; a prefix of several is refused with
// the list, as resolveCommand refuses it as a command.
func helpTopic(word string) (string, error) {
	if cmd, ok := lookupCommand(word); ok {
		return cmd.name, nil
	}
	cmd, err := resolveCommand(word)
	if err != nil {
		return "", fmt.Errorf("help: %w", err)
	}
	return cmd.name, nil
}

// editKey is the terminal's key hook: keyAbort (Ctrl-C) clears the line;
// Tab completes the command name under the cursor, as far as the
// candidates agree.
func editKey(line string, pos int, key rune) (string, int, bool) {
	switch key {
	case keyAbort:
		return "", 0, true
	case '\t':
		return completeCommand(line, pos)
	}
	return "", 0, false
}

// completeCommand completes the first word of line when the cursor is in
// it: a unique command name gets a space after it.
func completeCommand(line string, pos int) (string, int, bool) {
	lead := len(line) - len(strings.TrimLeft(line, " \t"))
	if pos < lead || pos > len(line) || strings.ContainsAny(line[lead:pos], " \t") {
		return "", 0, false
	}
	word := line[lead:pos]
	rest := line[pos:]
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		rest = rest[i:] // the rest of the word under the cursor is replaced
	} else {
		rest = ""
	}
	var names []string
	for _, cmd := range replCommands() {
		if strings.HasPrefix(cmd.name, word) {
			names = append(names, cmd.name)
		}
	}
	for _, w := range []string{"exit", "quit"} {
		if strings.HasPrefix(w, word) {
			names = append(names, w)
		}
	}
	if len(names) == 0 {
		return "", 0, false
	}
	done := names[0]
	for _, n := range names[1:] {
		for !strings.HasPrefix(n, done) {
			done = done[:len(done)-1]
		}
	}
	if len(names) == 1 && !strings.HasPrefix(rest, " ") {
		done += " "
	}
	if len(done) <= len(word) && len(names) > 1 {
		return "", 0, false
	}
	return line[:lead] + done + rest, lead + len(done), true
}

// historyPath is $FRAMEBUS_REPL_HISTORY, else
// <user cache dir>/framebus/repl_history ("" for none).
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

// historyKept is how many lines the history keeps.
const historyKept = 1000

// fileHistory is the terminal's history (term.History), also appended to
// a file, one line each, so the next session recalls it. A file that
// cannot be read or written only costs the persistence.
type fileHistory struct {
	path    string
	entries []string // oldest first
}

// openHistory reads the history file. One grown past twice historyKept
// lines is rewritten with the last historyKept.
func openHistory(path string) *fileHistory {
	h := &fileHistory{path: path}
	if path == "" {
		return h
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return h
	}
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" {
			h.entries = append(h.entries, l)
		}
	}
	if len(h.entries) > historyKept {
		compact := len(h.entries) > 2*historyKept
		h.entries = h.entries[len(h.entries)-historyKept:]
		if compact {
			_ = atomicfile.Write(path, []byte(strings.Join(h.entries, "\n")+"\n"))
		}
	}
	return h
}

// Add records a line the user entered; a repeat of the last one is
// recorded once.
func (h *fileHistory) Add(entry string) {
	if strings.TrimSpace(entry) == "" || (len(h.entries) > 0 && h.entries[len(h.entries)-1] == entry) {
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

// Len is the number of lines kept.
func (h *fileHistory) Len() int { return len(h.entries) }

// At is the line i entries back: At(0) is the latest.
func (h *fileHistory) At(i int) string { return h.entries[len(h.entries)-1-i] }
