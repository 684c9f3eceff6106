package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The effective configuration: defaults, then the file, then the
// environment, then flags; framebus config prints it.
func TestConfigLayers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "framebus.yaml")
	yaml := `
node:
  maxTabs: 4
browser:
  headless: false
  timeout: 12000
  profileDir: /tmp/profiles
whitelist: [example.test, "*.example.test"]
frames:
  fullPage: html
bus:
  prefix: acme
profiles:
  work: {}
  chrome:
    attach: http://127.0.0.1:9222
files:
  roots: [DIR]
`
	yaml = strings.Replace(yaml, "DIR", dir, 1)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	show := func(env []string, args ...string) config {
		t.Helper()
		r := framebus(t, env, "", append([]string{"config"}, args...)...)
		var out struct {
			OK     bool   `json:"ok"`
			File   string `json:"file"`
			Config config `json:"config"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.status != 0 || !out.OK {
			t.Fatalf("config %q: exit %d, %s %v", args, r.status, r.stdout, err)
		}
		return out.Config
	}
	def := show(testEnv())
	if !def.Browser.Headless || def.Browser.Timeout != 30000 || def.Whitelist != nil || def.Frames.FullPage != "snapshot" || def.Bus.Prefix != "framebus" || len(def.Files.Roots) != 0 {
		t.Fatalf("defaults: %+v", def)
	}
	fromFile := show(testEnv(), "--config", file)
	if fromFile.Browser.Headless || fromFile.Browser.Timeout != 12000 || fromFile.Whitelist == nil || len(*fromFile.Whitelist) != 2 || fromFile.Frames.FullPage != "html" || fromFile.Bus.Prefix != "acme" ||
		len(fromFile.Profiles) != 2 || fromFile.Profiles["chrome"].Attach != "http://127.0.0.1:9222" || len(fromFile.Files.Roots) != 1 || fromFile.Files.Roots[0] != dir {
		t.Fatalf("from the file: %+v", fromFile)
	}
	if fromFile.Node.MaxTabs != 4 || def.Node.MaxTabs != 0 {
		t.Fatalf("node.maxTabs: %d from the file, %d by default", fromFile.Node.MaxTabs, def.Node.MaxTabs)
	}
	if n := show(testEnv(), "--config", file, "--max-tabs", "6").Node.MaxTabs; n != 6 {
		t.Fatalf("--max-tabs 6 over the file's 4: %d", n)
	}
	// The environment overrides the file ($FRAMEBUS_CONFIG names it).
	env := testEnv(envConfig+"="+file, envTimeout+"=5s", envWhitelist+"=only.test", envHeadless+"=true")
	fromEnv := show(env)
	if !fromEnv.Browser.Headless || fromEnv.Browser.Timeout != 5000 || len(*fromEnv.Whitelist) != 1 || (*fromEnv.Whitelist)[0] != "only.test" || fromEnv.Bus.Prefix != "acme" {
		t.Fatalf("from the environment: %+v", fromEnv)
	}
	// Flags override both.
	fromFlags := show(env, "--timeout", "750ms", "--whitelist", "", "--headed", "--prefix", "flagged")
	if fromFlags.Browser.Headless || fromFlags.Browser.Timeout != 750 || fromFlags.Whitelist == nil || len(*fromFlags.Whitelist) != 0 || fromFlags.Bus.Prefix != "flagged" {
		t.Fatalf("from flags: %+v", fromFlags)
	}
	// files.roots: $FRAMEBUS_FILE_ROOTS, --file-roots (comma-separated).
	other := t.TempDir()
	if r := show(testEnv(envFileRoots + "=" + dir + "," + other)).Files.Roots; len(r) != 2 || r[1] != other {
		t.Fatalf("$%s: %v", envFileRoots, r)
	}
	if r := show(env, "--file-roots", other).Files.Roots; len(r) != 1 || r[0] != other {
		t.Fatalf("--file-roots: %v", r)
	}
	// Milliseconds or a duration, in every layer, as the actions take them.
	if ms := show(env, "--timeout", "1500").Browser.Timeout; ms != 1500 {
		t.Fatalf("--timeout 1500: %d ms", ms)
	}
	durations := filepath.Join(t.TempDir(), "durations.yaml")
	if err := os.WriteFile(durations, []byte("browser:\n  timeout: 45s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ms := show(testEnv(envConfig + "=" + durations)).Browser.Timeout; ms != 45000 {
		t.Fatalf("timeout: 45s in the file: %d ms", ms)
	}
}

// Bad configuration is a usage error naming the setting.
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ yaml, mention string }{
		{"browser:\n  timeout: -5\n", `line 2: "-5" is not a timeout`},
		{"browser:\n  timeout: soon\n", `"soon" is not a timeout`},
		{"browser:\n  headles: true\n", `"headles" is not a setting here`},
		{"logLevel: info\nlogLevel: warn\n", `"logLevel" is given twice (first at line 1)`},
		{"schemes: 5\n", "5 is not a list"},
		{"files:\n  roots: [relative/dir]\n", `files.roots: "relative/dir" is not an absolute path (--file-roots)`},
		{"files:\n  roots: [/no/such/dir]\n", `files.roots: "/no/such/dir": no such file or directory`},
		{"files:\n  roots: [/etc/passwd]\n", `files.roots: "/etc/passwd" is not a directory`},
		{"whitelist: [\"ex*ample.test\"]\n", "whitelist"},
		{"whitelist: [example.test, \"10.0.0.0/33\"]\n", `whitelist (--whitelist): whitelist: pattern "10.0.0.0/33": not an address range`},
		{"frames:\n  fullPage: pdf\n", "frames.fullPage"},
		{"bus:\n  prefix: \"a..b\"\n", "bus.prefix"},
		{"bus:\n  url: notaurl\n", `bus.url (--bus-url): "notaurl" is not a NATS server URL`},
		{"bus:\n  url: nats://127.0.0.1:4222,nats//x\n", `"nats//x" is not a NATS server URL`},
		{"schemes: [http, \"ht tp\"]\n", `schemes (--schemes): "ht tp" is not a URL scheme`},
		{"browser: [1, 2]\n", "line 1: a list is not what this setting takes"},
		{"profiles:\n  \"a b\": {}\n", "not a profile name"},
		{"profiles:\n  default: {}\n", "not a profile name"},
		{"profiles:\n  chrome:\n    attach: 127.0.0.1:9222\n", "profiles.chrome.attach"},
		{"profiles:\n  phone:\n    device: Nokia\n", `profiles.phone (viewport, device): device "Nokia" is not a preset`},
		{"profiles:\n  big:\n    viewport: 0x0\n", "profiles.big (viewport, device)"},
		{"profiles:\n  big:\n    viewport: window\n    device: Pixel 7\n", "give one or the other"},
		{"bus:\n  users: [{name: bob, role: observer, password: secret}]\n", "bcrypt hash"},
		{"bus:\n  users: [{name: bob, role: root, password: \"$2a$04$abcdefghijklmnopqrstuu5Xx5hLq0N6ZwF3kq9cCmPbVFoKlCYle\"}]\n", `role: "root" is not a role`},
		{"bus:\n  users: [{name: agent, role: agent, password: \"$2a$04$abcdefghijklmnopqrstuu5Xx5hLq0N6ZwF3kq9cCmPbVFoKlCYle\"}]\n", "the node's own agent user"},
		{"bus:\n  users: [{name: a.b, role: agent, password: x}]\n", "not a user name"},
		{"bus:\n  websocket: \"0.0.0.0:8222\"\n", "not a loopback address"},
		{"bus:\n  url: nats://127.0.0.1:4222\n  websocket: \"127.0.0.1:0\"\n", "an external bus (bus.url) has its own"},
		{"node:\n  maxTabs: -2\n", "node.maxTabs (--max-tabs): -2"},
		{"files:\n  maxStagedBytes: -5\n", "files.maxStagedBytes (--max-staged-bytes): -5"},
		{"history:\n  storage: disk\n", `history.storage (--history): "disk" is not memory, file or off`},
		{"history:\n  maxAge: forever\n", `history.maxAge: "forever" is not a duration`},
		{"history:\n  maxPerTab: 0\n", "history.maxPerTab: 0"},
		{"history:\n  maxBytes: 1000\n", "history.maxBytes: 1000"},
	}
	for i, tc := range cases {
		file := filepath.Join(dir, "c"+itoa(i)+".yaml")
		if err := os.WriteFile(file, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"config", "serve"} {
			r := framebus(t, testEnv(), "", cmd, "--config", file)
			if m := r.reply(t); r.status != exitUsage || m["code"] != "bad_request" || !strings.Contains(m["error"].(string), tc.mention) {
				t.Errorf("%s with %q: exit %d, %s", cmd, tc.yaml, r.status, r.stdout)
			}
		}
	}
	r := framebus(t, testEnv(), "", "config", "--config", filepath.Join(dir, "missing.yaml"))
	if r.status != exitUsage || !strings.Contains(r.stdout, "missing.yaml") {
		t.Errorf("missing file: exit %d, %s", r.status, r.stdout)
	}
}

// File storage of the history goes under the state file's directory
// unless history.dir says where; off runs without.
func TestHistoryConfig(t *testing.T) {
	cfg := defaultConfig()
	cfg.History.Storage = "file"
	o, err := cfg.historyOptions("/var/state")
	if err != nil || o.Dir != "/var/state/jetstream" || o.Storage != "file" || o.MaxPerTab != 1000 || o.MaxAge != 24*time.Hour {
		t.Fatalf("file: %+v %v", o, err)
	}
	cfg.History.Dir = "/srv/history"
	if o, _ := cfg.historyOptions("/var/state"); o.Dir != "/srv/history" {
		t.Fatalf("history.dir: %+v", o)
	}
	cfg.History.Storage = "off"
	if o, _ := cfg.historyOptions("/var/state"); !o.Disabled {
		t.Fatalf("off: %+v", o)
	}
	cfg.History.Storage = "memory"
	if o, _ := cfg.historyOptions("/var/state"); o.Dir != "" || o.Disabled {
		t.Fatalf("memory: %+v", o)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Named and session profiles persist even without browser.profileDir:
// in the home of the account Chromium runs as when that is not
// framebus's own, else in $XDG_DATA_HOME/framebus/profiles, else
// ~/.local/share/...
func TestProfilesDir(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	var cfg config
	if got := cfg.profilesDir(env(map[string]string{"XDG_DATA_HOME": "/data"}), ""); got != "/data/framebus/profiles" {
		t.Errorf("with XDG_DATA_HOME: %s", got)
	}
	home, _ := os.UserHomeDir()
	if got := cfg.profilesDir(env(nil), ""); got != filepath.Join(home, ".local/share/framebus/profiles") {
		t.Errorf("without: %s", got)
	}
	if got := cfg.profilesDir(env(map[string]string{"XDG_DATA_HOME": "/data"}), "/var/lib/b"); got != "/var/lib/b/profiles" {
		t.Errorf("with chromium as another account: %s", got)
	}
	cfg.Browser.ProfileDir = "/custom/path"
	if got, def := cfg.profilesDir(env(nil), "/var/lib/b"), cfg.profileDir(); got != "/custom/path" || def != "/custom/path/default" {
		t.Errorf("with browser.profileDir: %s and %s", got, def)
	}
}

// The http and search settings: bad values are usage errors naming the
// key; Google's key comes from a file only its owner may read, and
// never shows in `framebus config`.
func TestWebResourcesConfig(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "google.key")
	if err := os.WriteFile(keyFile, []byte("the-api-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	cfg.HTTP.Timeout = "5s"
	cfg.Search = searchConfig{Engine: "google", Google: googleConfig{KeyFile: keyFile, CX: "engine-id"}}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	ho, err := cfg.httpOptions()
	if err != nil || ho.Timeout != 5*time.Second || ho.MaxBytes != 4<<20 || ho.MaxRedirects != 10 {
		t.Fatalf("http options: %+v %v", ho, err)
	}
	so, err := cfg.searchOptions()
	if err != nil || so.GoogleKey != "the-api-key" || so.GoogleCX != "engine-id" || so.Engine != "google" {
		t.Fatalf("search options: %+v %v", so, err)
	}
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.searchOptions(); err == nil || !strings.Contains(err.Error(), "search.google.keyFile") || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key file others may read: %v", err)
	}
	conf := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(conf, []byte("search:\n  google:\n    keyFile: "+keyFile+"\n    cx: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := framebus(t, testEnv(), "", "config", "--config", conf); r.status != 0 || strings.Contains(r.stdout, "the-api-key") {
		t.Errorf("framebus config with a Google key file: exit %d, %s", r.status, r.stdout)
	}
	for _, tc := range []struct {
		change func(*config)
		want   string
	}{
		{func(c *config) { c.HTTP.MaxBytes = 0 }, "http.maxBytes"},
		{func(c *config) { c.HTTP.MaxRedirects = 0 }, "http.maxRedirects"},
		{func(c *config) { c.HTTP.Timeout = "soon" }, "http.timeout"},
		{func(c *config) { c.Search.Engine = "bing" }, "search.engine"},
		{func(c *config) { c.Search.Engine = "google" }, "search.engine: google needs"},
		{func(c *config) { c.Search.Google.CX = "only-the-id" }, "search.google: give both"},
		{func(c *config) { c.Search.DuckDuckGo.URL = "ftp://ddg/" }, "search.duckduckgo.url"},
	} {
		c := defaultConfig()
		tc.change(&c)
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %q, got %v", tc.want, err)
		}
	}
}
