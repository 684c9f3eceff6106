package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// These tests run the command line in process: parsing, help and replies,
// no node needed.

// runCLI runs one command line with the given environment.
func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := &cli{
		ctx:         context.Background(),
		stopSignals: func() {},
		stdin:       strings.NewReader(stdin),
		stdout:      &stdout,
		stderr:      &stderr,
		getenv:      func(k string) string { return env[k] },
	}
	status := c.run(args)
	return result{stdout: stdout.String(), stderr: stderr.String(), status: status}
}

// noNodeEnv points the state file at a file that does not exist.
func noNodeEnv(t *testing.T) map[string]string {
	return map[string]string{envState: filepath.Join(t.TempDir(), "none.json")}
}

var builtinCommands = []string{"serve", "demo", "plan", "watch", "help"}

// Every declared action is a command, with a flag for each non-positional
// parameter of the right kind, and none is named like a built-in command.
func TestActionCommands(t *testing.T) {
	specs := protocol.ActionSpecs()
	if len(specs) == 0 {
		t.Fatal("protocol declares no actions")
	}
	help := runCLI(t, nil, "", "help").stdout
	for _, spec := range specs {
		for _, b := range builtinCommands {
			if spec.Type == b {
				t.Errorf("action %q is named like the built-in command", spec.Type)
			}
		}
		cmd, ok := lookupCommand(spec.Type)
		if !ok || cmd.group != groupActions {
			t.Errorf("no action command for %q", spec.Type)
			continue
		}
		if !strings.Contains(help, "  "+spec.Type+" ") {
			t.Errorf("help does not list %q:\n%s", spec.Type, help)
		}
		fs, _ := cmd.newFlagSet() // panics on a parameter that clashes with a flag
		for _, p := range spec.Params {
			if handler, ok := clientParams[p.Name]; p.ClientOnly && (!ok || handler.check == nil || handler.apply == nil) {
				t.Errorf("%s: client-only parameter %q has no handler in clientParams", spec.Type, p.Name)
			}
			f := fs.Lookup(flagName(p))
			if p.Positional {
				if f != nil {
					t.Errorf("%s: positional %q is also a flag", spec.Type, p.Name)
				}
				if !strings.Contains(cmd.args, p.Name) {
					t.Errorf("%s: synopsis %q does not name %q", spec.Type, cmd.args, p.Name)
				}
				continue
			}
			want := map[protocol.ParamKind]string{
				protocol.KindBool: "bool", protocol.KindDuration: "duration",
				protocol.KindString: "string", protocol.KindStrings: "stringArray", protocol.KindInt: "int", protocol.KindNumber: "number",
				protocol.KindMap: "'Name: value'",
			}[p.Kind]
			if f == nil || f.Value.Type() != want {
				t.Errorf("%s: parameter %q is not a %s flag", spec.Type, p.Name, want)
			}
		}
		for _, name := range []string{"tab", "bus", "based-on", "prefix"} {
			onTab := name == "tab" || name == "based-on"
			if has := fs.Lookup(name) != nil; has != (spec.Resource == "" || !onTab) {
				t.Errorf("%s: --%s declared %v (a resource's action touches no tab)", spec.Type, name, has)
			}
		}
	}
	checkLocalPathParams(t, specs)
}

// checkLocalPathParams checks each parameter the CLI makes absolute is a
// declared string or list parameter that is sent, so a rename in protocol
// cannot silently turn the conversion off.
func checkLocalPathParams(t *testing.T, specs []protocol.ActionSpec) {
	t.Helper()
	for name := range localPathParams {
		declared := false
		for _, spec := range specs {
			for _, p := range spec.Params {
				if p.Name != name {
					continue
				}
				declared = true
				if p.ClientOnly || (p.Kind != protocol.KindString && p.Kind != protocol.KindStrings) {
					t.Errorf("%s: path parameter %q is not a string or list sent to the node", spec.Type, name)
				}
			}
		}
		if !declared {
			t.Errorf("path parameter %q is declared by no action", name)
		}
	}
}

// The plan an action command would send (--dry-run), for each way of
// writing its arguments.
func TestActionArguments(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"eval", "1+1"}, `{"action":{"type":"eval","expression":"1+1"}}`},
		{[]string{"eval", "1", "+", "1"}, `{"action":{"type":"eval","expression":"1 + 1"}}`},
		{[]string{"eval", "--timeout", "2s", "document.title"}, `{"action":{"type":"eval","expression":"document.title","timeout":"2s"}}`},
		{[]string{"eval", "x", "--timeout", "1500"}, `{"action":{"type":"eval","expression":"x","timeout":"1.5s"}}`},
		{[]string{"eval", "-t", "5s", "1+1"}, `{"action":{"type":"eval","expression":"1+1","timeout":"5s"}}`}, // DR-014's shorthand
		{[]string{"ready", "-t=750ms"}, `{"action":{"type":"ready","timeout":"750ms"}}`},
		{[]string{"eval", "--", "-1"}, `{"action":{"type":"eval","expression":"-1"}}`},
		{[]string{"navigate", "example.com", "--wait", "--based-on", "3"}, `{"action":{"type":"navigate","url":"example.com","wait":true,"basedOnSequence":3}}`},
		{[]string{"navigate", "--timeout=250ms", "/search.html?q=a&b=<c>"}, `{"action":{"type":"navigate","url":"/search.html?q=a&b=<c>","timeout":"250ms"}}`},
		{[]string{"click", "#result3", "--based-on=2"}, `{"action":{"type":"click","selector":"#result3","basedOnSequence":2}}`},
		// Relative upload paths are the client's, sent absolute.
		{[]string{"upload", "#one", "README.md", "../x.txt", "/abs/y.txt"}, `{"action":{"type":"upload","selector":"#one","files":[` +
			jsonString(filepath.Join(wd, "README.md")) + `,` + jsonString(filepath.Join(filepath.Dir(wd), "x.txt")) + `,"/abs/y.txt"]}}`},
	}
	for _, tt := range tests {
		args := append([]string{tt.args[0], "--dry-run"}, tt.args[1:]...)
		r := runCLI(t, noNodeEnv(t), "", args...)
		if r.status != exitOK || strings.TrimSpace(r.stdout) != tt.want {
			t.Errorf("%q: exit %d, stdout %s, want %s", tt.args, r.status, r.stdout, tt.want)
		}
	}
}

func jsonString(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// How arguments fill positional parameters, on declarations made up for
// the test: required ones always, optional ones only with arguments to
// spare, a Rest one takes what is left (joined, or as a list).
func TestPositionalValues(t *testing.T) {
	sel := protocol.Param{Name: "selector", Positional: true}
	text := protocol.Param{Name: "text", Positional: true, Required: true}
	expr := protocol.Param{Name: "expression", Positional: true, Required: true, Rest: true}
	files := protocol.Param{Name: "files", Kind: protocol.KindStrings, Positional: true, Required: true, Rest: true}
	url := protocol.Param{Name: "url", Positional: true, Required: true}
	tests := []struct {
		params []protocol.Param
		args   []string
		want   string // the fields as JSON, or the error
	}{
		{[]protocol.Param{sel, text}, []string{"hello"}, `{"text":"hello"}`},
		{[]protocol.Param{sel, text}, []string{"#q", "hello"}, `{"selector":"#q","text":"hello"}`},
		{[]protocol.Param{sel, text}, []string{"#q", "a", "b"}, `too many arguments`},
		{[]protocol.Param{sel, text}, nil, `missing <text>`},
		{[]protocol.Param{expr}, []string{"1", "+", "1"}, `{"expression":"1 + 1"}`},
		{[]protocol.Param{expr}, []string{"document.title"}, `{"expression":"document.title"}`},
		{[]protocol.Param{url}, []string{"a", "b"}, `too many arguments`},
		{[]protocol.Param{url, files}, []string{"#f", "a.png", "b c.png"}, `{"files":["a.png","b c.png"],"url":"#f"}`},
		{[]protocol.Param{url, files}, []string{"#f"}, `missing <files>`},
		{nil, []string{"x"}, `takes no arguments`},
	}
	for _, tt := range tests {
		spec := protocol.ActionSpec{Type: "test", Params: tt.params}
		fields := map[string]any{}
		err := positionalValues(spec, tt.params, tt.args, fields)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			data, _ := json.Marshal(fields)
			got = string(data)
		}
		if !strings.Contains(got, tt.want) || (err == nil) != strings.HasPrefix(tt.want, "{") {
			t.Errorf("%q: got %s, want %s", tt.args, got, tt.want)
		}
	}
	if got := flagName(protocol.Param{Name: "networkIdle"}); got != "network-idle" {
		t.Errorf("flagName(networkIdle) = %q", got)
	}
}

// Usage errors exit 2 with a bad_request reply that says what is wrong.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args  []string
		stdin string
		want  string // in the error message; with ^, what it starts with
	}{
		{nil, "", "no command given"},
		{[]string{"bogus"}, "", `unknown command "bogus"`},
		{[]string{"click"}, "", "missing <selector>"},
		{[]string{"eval", ""}, "", "eval: <expression>: missing; eval needs"},
		{[]string{"scroll", "--to", "abc"}, "", `scroll: --to: "abc" is not x,y`},
		{[]string{"scroll"}, "", "^scroll: give a selector (scroll it into view), to"}, // named once
		{[]string{"click", "x", "--double", "--right"}, "", "click: double and right cannot be combined"},
		{[]string{"navigate", "x", "--timeout", "soon"}, "", `"soon" is not a duration`},
		{[]string{"navigate", "x", "--timeout", "-1s"}, "", "negative"},
		{[]string{"navigate", "x", "--nope"}, "", "unknown flag: --nope"},
		{[]string{"snapshot", "--max-nodes", "99999999999999999999"}, "", "99999999999999999999 is too large"},
		{[]string{"snapshot", "--max-nodes", "many"}, "", `"many" is not a whole number`},
		{[]string{"click", "x", "--double=maybe"}, "", `"maybe" is not true or false`},
		{[]string{"click", "x", "--based-on", "abc"}, "", `"abc" is not a whole number`},
		{[]string{"ready", "-t", "99999999999999999"}, "", "too long a duration"},
		{[]string{"config", "--headed=maybe"}, "", `"maybe" is not true or false`},
		{[]string{"config", "--timeout", "soon"}, "", `"soon" is not a duration`},
		{[]string{"eval", "1", "--based-on", "0"}, "", "sequences start at 1"},
		{[]string{"eval", "1", "--tab", "a.b"}, "", "not a tab id"},
		{[]string{"eval", "1", "--tab", ""}, "", `"" is not a tab id`},
		{[]string{"tab", "select", ""}, "", `tab select: "" is not a tab id`},
		{[]string{"session", "start", ""}, "", "session start: <domain> is empty"},
		{[]string{"session", "start", " ", "http://x.test/"}, "", "session start: <domain> is empty"},
		// --out is checked before anything is sent.
		{[]string{"screenshot", "--out", "/does/not/exist/x.png"}, "", "screenshot: --out /does/not/exist/x.png: cannot write there: directory /does/not/exist: no such file or directory"},
		{[]string{"screenshot", "--out", os.TempDir()}, "", "is a directory"},
		{[]string{"screenshot", "--out", ""}, "", "--out: the file name is empty"},
		{[]string{"help", "bogus"}, "", `unknown command "bogus"`},
		{[]string{"serve", "extra"}, "", "takes no arguments"},
		{[]string{"serve", "--listen", "nowhere"}, "", "want host:port"},
		{[]string{"serve", "--log-level", "loud"}, "", "--log-level"},
		{[]string{"serve", "--prefix", "a..b"}, "", "is not a subject prefix"},
		{[]string{"serve", "--full-page", "pdf"}, "", "--full-page"},
		{[]string{"serve", "--whitelist", "ex*ample.com"}, "", "a wildcard may only be a leading"},
		{[]string{"serve", "--whitelist", "example.com,fc00::/129"}, "", `"fc00::/129": not an address range`},
		{[]string{"serve", "--full-page-policy", "sometimes"}, "", "--full-page-policy"},
		{[]string{"serve", "--dialog-default", "maybe"}, "", "--dialog-default"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--bus-url", "nats://127.0.0.1:4222"}, "", "exclude each other"},
		{[]string{"watch", "--all", "--tab", "x"}, "", "exclude each other"},
		{[]string{"plan", "a", "b"}, "", "takes one file"},
		{[]string{"plan"}, "", "plan: empty"},
		{[]string{"plan", "-"}, `{"actions": [{"type": "fly"}]}`, `unknown action type "fly"`},
		{[]string{"plan", "/does/not/exist.json"}, "", "no such file"},
		{[]string{"demo", "--root", "/does/not/exist"}, "", ""},
	}
	for _, tt := range tests {
		r := runCLI(t, noNodeEnv(t), tt.stdin, tt.args...)
		m := r.reply(t)
		if tt.args != nil && tt.args[0] == "demo" {
			// Not a usage error: the tree is missing. Exit 1, still bad_request.
			if r.status != exitFailed || m["code"] != "bad_request" || !strings.Contains(m["error"].(string), "--root") {
				t.Errorf("demo without a tree: exit %d, %s", r.status, r.stdout)
			}
			continue
		}
		msg, _ := m["error"].(string)
		says := strings.Contains(msg, tt.want)
		if prefix, ok := strings.CutPrefix(tt.want, "^"); ok {
			says = strings.HasPrefix(msg, prefix)
		}
		if r.status != exitUsage || m["ok"] != false || m["code"] != "bad_request" || !says {
			t.Errorf("%q: exit %d, stdout %s; want exit 2, bad_request mentioning %q", tt.args, r.status, r.stdout, tt.want)
		}
	}
}

// With no node, a client command says so in the exact words, exit 1.
func TestNoNodeRunning(t *testing.T) {
	const want = `{"ok":false,"error":"no framebus node running. Start one with: framebus serve","code":"unavailable"}`
	cases := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"no state file", noNodeEnv(t), []string{"eval", "1+1"}},
		{"nothing at --bus", noNodeEnv(t), []string{"click", "#x", "--bus", "nats://127.0.0.1:1"}},
		{"nothing at FRAMEBUS_URL", map[string]string{envURL: "nats://127.0.0.1:1"}, []string{"plan", "-"}},
	}
	for _, tc := range cases {
		stdin := `{"action": {"type": "eval", "expression": "1"}}`
		r := runCLI(t, tc.env, stdin, tc.args...)
		if r.status != exitFailed || strings.TrimSpace(r.stdout) != want {
			t.Errorf("%s: exit %d, stdout %s; want exit 1, %s", tc.name, r.status, r.stdout, want)
		}
	}
	// A state file whose node does not answer: that node is not
	// answering (killed, or restarting with its state), which is no
	// refusal and not "no node".
	for _, args := range [][]string{{"watch", "--all"}, {"eval", "1"}} {
		r := runCLI(t, staleStateEnv(t), "", args...)
		var m map[string]any
		_ = json.Unmarshal([]byte(r.stdout), &m)
		msg, _ := m["error"].(string)
		if r.status != exitFailed || m["code"] != "unavailable" || !strings.Contains(msg, "is not answering") || !strings.Contains(msg, "restarting") {
			t.Errorf("stale state file, %q: exit %d, stdout %s; want exit 1, unavailable: not answering, maybe restarting", args, r.status, r.stdout)
		}
	}
}

// staleStateEnv has a state file left by a node that is gone.
func staleStateEnv(t *testing.T) map[string]string {
	path := filepath.Join(t.TempDir(), "node.json")
	if err := serving.WriteState(path, serving.State{OK: true, Bus: "nats://127.0.0.1:1", Prefix: "framebus", PID: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	return map[string]string{envState: path}
}

func TestHelp(t *testing.T) {
	r := runCLI(t, nil, "", "help")
	if r.status != exitOK {
		t.Fatalf("help: exit %d", r.status)
	}
	for _, want := range append(builtinCommands, string(protocol.CodeStaleFrame), envURL, envState) {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help does not mention %q", want)
		}
	}
	for _, args := range [][]string{{"help", "eval"}, {"eval", "--help"}, {"eval", "-h"}} {
		r := runCLI(t, nil, "", args...)
		if r.status != exitOK || !strings.Contains(r.stdout, "Usage: framebus eval <expression") || !strings.Contains(r.stdout, "--timeout") {
			t.Errorf("%q: exit %d\n%s", args, r.status, r.stdout)
		}
	}
}

// A successful action's reply is "ok" plus the result's own fields; a
// result without a value (eval of undefined) has no value field.
func TestActionReply(t *testing.T) {
	tests := []struct {
		in   protocol.ActionResult
		want string
	}{
		{protocol.ActionResult{Index: 0, Type: "eval", OK: true, Sequence: 3, Value: json.RawMessage(`2`)}, `{"ok":true,"sequence":3,"value":2}`},
		{protocol.ActionResult{Type: "eval", OK: true, Sequence: 4}, `{"ok":true,"sequence":4}`},
		{protocol.ActionResult{Type: "eval", OK: true, Sequence: 5, Value: json.RawMessage(`null`)}, `{"ok":true,"sequence":5,"value":null}`},
		{protocol.ActionResult{Type: "eval", OK: true, Sequence: 6, Value: json.RawMessage(`{"a":[1,"<b>"]}`)}, `{"ok":true,"sequence":6,"value":{"a":[1,"<b>"]}}`},
		{protocol.ActionResult{Index: 2, Type: "navigate", OK: true, Sequence: 2, URL: "https://example.com/", Title: "Example Domain"},
			`{"ok":true,"sequence":2,"url":"https://example.com/","title":"Example Domain"}`},
	}
	for _, tt := range tests {
		got, err := actionReply(tt.in)
		if err != nil || string(got) != tt.want {
			t.Errorf("actionReply(%+v) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	fail := failureReply(protocol.PlanResult{Error: "element not found: #x", Code: protocol.CodeElementNotFound, Sequence: 7})
	if data, _ := json.Marshal(fail); string(data) != `{"ok":false,"error":"element not found: #x","code":"element_not_found","sequence":7}` {
		t.Errorf("failureReply = %s", data)
	}
}

func TestMsDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"2s", 2 * time.Second, false},
		{"500ms", 500 * time.Millisecond, false},
		{"1500", 1500 * time.Millisecond, false},
		{"0.5", 500 * time.Microsecond, false},
		{"1m30s", 90 * time.Second, false},
		{"-5", 0, true},
		{"soon", 0, true},
	}
	for _, tt := range tests {
		var d msDuration
		err := d.Set(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && time.Duration(d) != tt.want) {
			t.Errorf("Set(%q) = %s, %v", tt.in, time.Duration(d), err)
		}
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("short", 120); got != "short" {
		t.Errorf("truncate short = %q", got)
	}
	long := strings.Repeat("é", 100) // 200 bytes
	got := truncate(long, 121)       // 121 falls inside a character
	if !strings.HasPrefix(got, strings.Repeat("é", 60)+"…[+80 bytes]") {
		t.Errorf("truncate = %q", got)
	}
}
