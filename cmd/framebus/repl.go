// # The REPL and its line editor
//
// framebus repl (repl.go, replline.go) reads commands one line at a time
// and runs each through the same command table and code path as the
// command line (commands(), cli.runCommand), so there is no second list of
// commands to keep in sync. The prompt shows the active tab's URL
// (DR-013).
//
// Line editing and history come from golang.org/x/term's Terminal, not
// from a readline clone (github.com/chzyer/readline, ergochat/readline):
// it is maintained by the Go team next to the golang.org/x/sys it builds
// on, has no cgo, no terminfo and no dependencies of its own, and already
// does what a prompt of one-line commands needs: arrows and the usual
// Emacs keys, a pluggable history (kept in a file here), a key hook (used
// for Ctrl-C and Tab) and output that redraws around the prompt. Its one
// gap, Ctrl-C ending ReadLine like Ctrl-D, is closed by translating the
// byte before it sees it (ctrlCReader).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// replRefused are the commands the REPL does not run, and what to do
// instead.
var replRefused = map[string]string{
	"serve": "start the node in another terminal: framebus serve",
	"demo":  "run it from the shell: framebus demo",
	"repl":  "you are in it",
	"view":  "serve it from the shell: framebus view",
}

// promptTimeout bounds the URL query that refreshes the prompt.
const promptTimeout = 2 * time.Second

// envHistory names the history file; by default it is in the user's
// cache directory.
const envHistory = "FRAMEBUS_REPL_HISTORY"

// urlPlan asks a tab for its URL; the result's value is the URL.
var urlPlan = []byte(`{"action":{"type":"url"}}`)

func replCommand() command {
	return command{
		name:    "repl",
		summary: "an interactive shell of framebus commands, with the tab's URL in the prompt",
		group:   groupOther,
		details: `Each line is a command as on the command line, without "framebus", split
as a shell splits it ('...', "...", backslash):
  framebus [example.com]> type "#q" "hello world"
The prompt shows the tab's URL (protocol and trailing slash left out),
updated after every command; "framebus> " when no node or tab answers.
A unique prefix of a command is enough (nav, cli); a prefix that fits
several commands (cl: click or close) runs nothing and lists them. help and
help <command> work as on the command line, help with a prefix too (help
cl lists click and close); serve, demo and repl do not run inside the REPL.
--tab, --bus and --prefix given to repl apply to every command.
Up and down recall earlier lines, also from earlier sessions: history is
kept in $` + envHistory + ` (default ~/.cache/framebus/repl_history).
Tab completes a command's name. Ctrl-C clears the line, or interrupts
the running command (watch included); exit, quit or Ctrl-D end the REPL.
When stdin or stdout is not a terminal, commands are read one per line,
with no prompt and no line editing, and a line starting with # is a
comment, so a file of commands is a script.`,
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
	target clientFlags // the session's --tab, --bus and --prefix
	url    string      // the active tab's URL, "" when no node answered

	// The connection that refreshes the prompt, kept between commands,
	// and the bus URL it was made for.
	prompt    *client
	promptBus string
}

func (c *cli) repl(target clientFlags) error {
	s := &session{c: c, target: target}
	defer s.closePrompt()
	in, ok := c.stdin.(*os.File)
	if ok && term.IsTerminal(int(in.Fd())) && isTerminal(c.stdout) {
		return s.interactive(in)
	}
	return s.plain()
}

// plain reads commands from a pipe or a file: one per line, no prompt,
// each reply printed as the command line prints it. SIGINT and SIGTERM
// interrupt the running command and end the session.
func (s *session) plain() error {
	ctx := s.c.ctx
	lines := make(chan string)
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(s.c.stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		done <- sc.Err()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			if err != nil {
				return usagef("repl: read stdin: %v", err)
			}
			return nil
		case line := <-lines:
			if out := s.execute(ctx, line); out.quit || ctx.Err() != nil {
				return nil
			}
		}
	}
}

// interactive runs the line editor on a terminal. The terminal is raw
// only while a line is read; a command runs with the terminal as the
// shell left it, so Ctrl-C is SIGINT then and interrupts the command
// alone.
func (s *session) interactive(in *os.File) error {
	fd := int(in.Fd())

	// The REPL takes over SIGINT and SIGTERM from main: SIGINT cancels the
	// running command, SIGTERM ends the session.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if s.c.stopSignals != nil {
		s.c.stopSignals() // cancels c.ctx: the session has its own
	}
	ctx, end := context.WithCancel(context.WithoutCancel(s.c.ctx))
	defer end()
	own := *s.c
	own.ctx = ctx
	s.c = &own
	var running interrupter
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-sigs:
				if running.interrupt() && sig == os.Interrupt {
					// The terminal echoed ^C; what comes next starts a line.
					fmt.Fprintln(s.c.stdout)
				}
				if sig == syscall.SIGTERM {
					end()
				}
			}
		}
	}()

	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{ctrlCReader{in}, s.c.stdout}, "")
	t.History = openHistory(s.historyPath())
	t.AutoCompleteCallback = editKey
	var last outcome
	for {
		// The prompt is made in raw mode, so what is typed ahead meanwhile
		// is echoed by the line editor after it, not by the terminal before.
		prompt := func() {
			if last.url != "" {
				s.url = last.url
			} else {
				s.refreshURL(ctx)
			}
			t.SetPrompt(promptFor(s.url))
		}
		line, err := readLine(ctx, fd, t, prompt)
		if err != nil { // Ctrl-D, the terminal gone, or SIGTERM
			fmt.Fprintln(s.c.stdout)
			return nil
		}
		cmdCtx, cancel := context.WithCancel(ctx)
		running.set(cancel)
		last = s.execute(cmdCtx, line)
		running.set(nil)
		cancel()
		if last.quit || ctx.Err() != nil {
			return nil
		}
	}
}

// interrupter cancels the running command on SIGINT.
type interrupter struct {
	mu     sync.Mutex
	cancel context.CancelFunc
}

func (i *interrupter) set(cancel context.CancelFunc) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.cancel = cancel
}

// interrupt cancels the running command, if any, and reports whether
// there was one.
func (i *interrupter) interrupt() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cancel == nil {
		return false
	}
	i.cancel()
	return true
}

// readLine puts the terminal in raw mode, calls prompt, and reads one
// line. It returns early when ctx ends; the terminal is restored either
// way.
func readLine(ctx context.Context, fd int, t *term.Terminal, prompt func()) (string, error) {
	cooked, err := term.MakeRaw(fd)
	if err != nil {
		return "", err
	}
	defer term.Restore(fd, cooked)
	prompt()
	if w, h, err := term.GetSize(fd); err == nil {
		_ = t.SetSize(w, h)
	}
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		line, err := t.ReadLine()
		got <- read{line, err}
	}()
	select {
	case r := <-got:
		if errors.Is(r.err, term.ErrPasteIndicator) {
			r.err = nil // a pasted line is a line like any other
		}
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// keyAbort is what ctrlCReader turns Ctrl-C into: Ctrl-G, which
// x/term's Terminal hands to its key hook (it ends ReadLine on Ctrl-C).
const keyAbort = 0x07

// ctrlCReader reads the terminal for x/term's Terminal, with Ctrl-C
// turned into keyAbort so it clears the line instead of ending the REPL.
type ctrlCReader struct{ r io.Reader }

func (c ctrlCReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i := range p[:n] {
		if p[i] == 0x03 {
			p[i] = keyAbort
		}
	}
	return n, err
}

// outcome is what running a line left for the session.
type outcome struct {
	quit bool   // exit or quit
	url  string // the tab's URL from the reply of a state-changing action on the session's tab
}

// execute runs one line as the command line would run it.
func (s *session) execute(ctx context.Context, line string) outcome {
	c := *s.c
	c.ctx = ctx
	c.stdin = strings.NewReader("") // stdin is the REPL's own
	words, err := splitLine(line)
	if err != nil {
		c.printJSON(errorReply{Error: err.Error(), Code: protocol.CodeBadRequest})
		return outcome{}
	}
	if len(words) == 0 || strings.HasPrefix(words[0], "#") {
		return outcome{} // blank, or a comment
	}
	switch words[0] {
	case "exit", "quit":
		return outcome{quit: true}
	}
	cmd, err := resolveCommand(words[0])
	if err != nil {
		c.printJSON(errorReply{Error: err.Error(), Code: protocol.CodeBadRequest})
		return outcome{}
	}
	args := words[1:]
	switch cmd.name {
	case "help":
		if len(args) == 1 && !strings.HasPrefix(args[0], "-") { // help nav: the command nav runs
			name, err := helpTopic(args[0])
			if err != nil {
				c.printJSON(errorReply{Error: err.Error(), Code: protocol.CodeBadRequest})
				return outcome{}
			}
			args = []string{name}
		}
	case "plan":
		if readsStdin(cmd, args) {
			c.printJSON(errorReply{Error: "plan: stdin is the REPL's own; give the plan's file: plan FILE", Code: protocol.CodeBadRequest})
			return outcome{}
		}
	case "tab":
		args = s.tabArgs(cmd, args)
	}
	trustURL := mutates(cmd) && !hasAnyFlag(args, "tab", "bus", "prefix")
	var rec *recorder
	if trustURL {
		rec = &recorder{w: c.stdout}
		c.stdout = rec
	}
	status := c.report(c.runCommand(cmd, s.withTarget(cmd, args)))
	if cmd.name == "help" && len(args) == 0 {
		fmt.Fprint(c.stdout, replHelp)
	}
	if cmd.name == "tab" && status == exitOK && s.target.tab != "" {
		if pos := positional(cmd, args); len(pos) == 2 && pos[0] == "select" {
			s.target.tab = pos[1] // the session's tab is the one selected
		}
	}
	if rec == nil {
		return outcome{}
	}
	return outcome{url: rec.replyURL()}
}

// replHelp follows help's command list in the REPL.
const replHelp = `
In the REPL: type commands without "framebus"; a unique prefix is enough
(nav, cli). Up and down recall earlier lines; Tab completes a command;
Ctrl-C clears the line or interrupts a command; exit, quit or Ctrl-D
leave. serve, demo and repl run from the shell.
`

// withTarget adds the session's --tab, --bus and --prefix to a command
// that takes them and was not given them on the line.
func (s *session) withTarget(cmd command, args []string) []string {
	fs, _ := cmd.newFlagSet()
	var extra []string
	for _, f := range [...]struct{ name, value string }{
		{"tab", s.target.tab}, {"bus", s.target.bus}, {"prefix", s.target.prefix},
	} {
		if f.value == "" || fs.Lookup(f.name) == nil || hasFlag(args, f.name) {
			continue
		}
		extra = append(extra, "--"+f.name+"="+f.value)
	}
	return append(extra, args...)
}

// tabArgs makes "tab close" without an id close the session's tab when
// the session was given one (tab takes no --tab of its own).
func (s *session) tabArgs(cmd command, args []string) []string {
	if s.target.tab == "" {
		return args
	}
	if pos := positional(cmd, args); len(pos) == 1 && pos[0] == "close" {
		return append(args, s.target.tab)
	}
	return args
}

// positional is what cmd's flags leave of args (nil when they do not
// parse; the command itself then says why).
func positional(cmd command, args []string) []string {
	fs, _ := cmd.newFlagSet()
	if fs.Parse(args) != nil {
		return nil
	}
	return fs.Args()
}

// readsStdin reports whether plan's line would read the plan from stdin.
func readsStdin(cmd command, args []string) bool {
	fs, _ := cmd.newFlagSet()
	if err := fs.Parse(args); err != nil {
		return false // the command reports the usage error
	}
	return fs.NArg() == 0 || fs.Arg(0) == "-"
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

func hasAnyFlag(args []string, names ...string) bool {
	for _, n := range names {
		if hasFlag(args, n) {
			return true
		}
	}
	return false
}

// mutates reports whether cmd is a state-changing action: its reply
// carries the tab's URL after it.
func mutates(cmd command) bool {
	if cmd.group != groupActions {
		return false
	}
	for _, spec := range protocol.ActionSpecs() {
		if spec.Type == cmd.name {
			return spec.Mutates
		}
	}
	return false
}

// maxRecorded bounds what a recorder keeps: a state-changing action's
// reply is short; a longer one is not read for the prompt.
const maxRecorded = 64 << 10

// recorder passes a command's output through and keeps a copy of it, so
// the prompt can take the URL from the reply.
type recorder struct {
	w    io.Writer
	mu   sync.Mutex
	buf  bytes.Buffer
	full bool
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	if !r.full {
		if r.buf.Len()+len(p) > maxRecorded {
			r.full = true
			r.buf = bytes.Buffer{}
		} else {
			r.buf.Write(p)
		}
	}
	r.mu.Unlock()
	return r.w.Write(p)
}

// replyURL is the "url" of the successful reply recorded, or "".
func (r *recorder) replyURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.full {
		return ""
	}
	out := bytes.TrimSpace(r.buf.Bytes())
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	var reply struct {
		OK  bool   `json:"ok"`
		URL string `json:"url"`
	}
	if json.Unmarshal(out, &reply) != nil || !reply.OK {
		return ""
	}
	return reply.URL
}

// refreshURL asks the session's tab for its URL, for the prompt. A tab
// that does not answer in time (busy, or a dialog open) keeps the URL
// the prompt had; a node, browser or tab that is gone clears it.
func (s *session) refreshURL(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, promptTimeout)
	defer cancel()
	u, err := s.queryURL(ctx)
	if err == nil {
		s.url = u
		return
	}
	switch protocol.CodeOf(err) {
	case protocol.CodeTimeout, protocol.CodeDialogOpen:
	default:
		s.url = ""
	}
}

// queryURL sends the url action to the session's tab, found as the
// commands find it: --tab, else the tab selected in the state file (read
// again each time, as tab select may have changed it), else the first
// tab listed.
func (s *session) queryURL(ctx context.Context) (string, error) {
	bus, active := s.target.bus, ""
	if bus == "" {
		bus = s.c.getenv(envURL)
	}
	if bus == "" {
		path, err := s.c.statePath()
		if err != nil {
			return "", errNoNode(err)
		}
		st, err := serving.ReadState(path)
		if err != nil {
			s.closePrompt()
			return "", errState(path, err)
		}
		bus, active = st.Bus, st.Active
	}
	if s.prompt != nil && (s.promptBus != bus || s.prompt.bc.Closed()) {
		s.closePrompt() // another node, or this one went away
	}
	if s.prompt == nil {
		cl, err := s.c.dial(s.target, busclient.Options{NoReconnect: true, ConnectTimeout: promptTimeout})
		if err != nil {
			return "", err
		}
		s.prompt, s.promptBus = cl, bus
	}
	s.prompt.active = active
	tab, err := s.prompt.resolveTab(ctx, s.target.tab)
	if err != nil {
		return "", err
	}
	plan, err := protocol.DecodePlan(urlPlan)
	if err != nil {
		return "", err
	}
	res, _, err := s.prompt.sendPlan(ctx, tab, urlPlan, plan)
	switch {
	case err != nil:
		return "", err
	case !res.OK:
		return "", &protocol.Error{Code: res.Code, Message: res.Error}
	case len(res.Results) != 1:
		return "", protocol.Errorf(protocol.CodeInternal, "url: %d results", len(res.Results))
	}
	var u string
	if err := json.Unmarshal(res.Results[0].Value, &u); err != nil {
		return "", protocol.Errorf(protocol.CodeInternal, "url: the value is not a string: %v", err)
	}
	return u, nil
}

func (s *session) closePrompt() {
	if s.prompt != nil {
		s.prompt.close()
		s.prompt = nil
	}
}
