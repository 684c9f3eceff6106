package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/actors/files"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/internal/smallfile"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// The node's configuration: defaults, then a YAML file, then environment
// variables, then serve's flags, each overriding the one before. YAML is
// read with go.yaml.in/yaml/v3, the YAML organisation's maintained line of
// the standard Go YAML library, with unknown keys refused so a typo is an
// error rather than a silently ignored setting.

// config is the effective configuration. Durations are written as Go
// durations ("10s"); browser.timeout is milliseconds, as the spec has it.
type config struct {
	Node    nodeConfig    `yaml:"node" json:"node"`
	Browser browserConfig `yaml:"browser" json:"browser"`
	// Profiles are named profiles besides the default one: managed ones
	// (launched on request in <profileDir>/<name>) and attach ones.
	Profiles  map[string]profileConfig `yaml:"profiles" json:"profiles,omitempty"`
	Whitelist *[]string                `yaml:"whitelist" json:"whitelist"` // nil: every host; empty: none
	// Viewport is the tabs' size, WIDTHxHEIGHT, or "window" for the
	// browser window's own; Device a preset of device emulation (its
	// size unless Viewport gives one).
	Viewport string        `yaml:"viewport" json:"viewport"`
	Device   string        `yaml:"device" json:"device,omitempty"`
	Schemes  []string      `yaml:"schemes" json:"schemes"`
	Frames   framesConfig  `yaml:"frames" json:"frames"`
	Files    filesConfig   `yaml:"files" json:"files"`
	Bus      busConfig     `yaml:"bus" json:"bus"`
	History  historyConfig `yaml:"history" json:"history"`
	HTTP     httpConfig    `yaml:"http" json:"http"`
	Search   searchConfig  `yaml:"search" json:"search"`
	LogLevel string        `yaml:"logLevel" json:"logLevel"`
}

// httpConfig: the http resource (fetch), under the whitelist.
type httpConfig struct {
	MaxBytes     int    `yaml:"maxBytes" json:"maxBytes"`         // the body cap
	MaxRedirects int    `yaml:"maxRedirects" json:"maxRedirects"` // redirects followed at most
	Timeout      string `yaml:"timeout" json:"timeout,omitempty"` // a duration; "": the action timeout
}

// searchConfig: the search resource's engines.
type searchConfig struct {
	Engine     string       `yaml:"engine" json:"engine"` // duckduckgo or google
	DuckDuckGo engineConfig `yaml:"duckduckgo" json:"duckduckgo"`
	Google     googleConfig `yaml:"google" json:"google"`
}

// engineConfig: where an engine answers (tests point it at loopback).
type engineConfig struct {
	URL string `yaml:"url" json:"url,omitempty"`
}

// googleConfig: the Custom Search JSON API. The key is a secret: it is
// read from a file only its owner may read (keyFile), never from the
// config file or a flag.
type googleConfig struct {
	URL     string `yaml:"url" json:"url,omitempty"`
	KeyFile string `yaml:"keyFile" json:"keyFile,omitempty"`
	CX      string `yaml:"cx" json:"cx,omitempty"` // the programmable search engine's id
}

// nodeConfig: the node's identity among the nodes of its bus.
type nodeConfig struct {
	// Name is unique among the live nodes of the bus (one subject token);
	// "": the host name and a short random suffix, made at start.
	Name string `yaml:"name" json:"name,omitempty"`
	// MaxTabs is how many tabs the node takes: 0 (the default) derives
	// it from the machine's memory and cores, -1 sets no bound;
	// placement sends tabs to the nodes with the most room.
	MaxTabs int `yaml:"maxTabs" json:"maxTabs,omitempty"`
}

type browserConfig struct {
	Headless bool `yaml:"headless" json:"headless"`
	// Timeout is the default deadline of an action that sets none, in ms
	// (a file may also give a duration: 30s).
	Timeout millis `yaml:"timeout" json:"timeout"`
	// ProfileDir holds persistent profiles: the default one in
	// <profileDir>/default, named and per-domain (session) ones in
	// <profileDir>/<name>. Empty: the default profile is a fresh
	// temporary one per run, and named and session profiles live in
	// $XDG_DATA_HOME/framebus/profiles (~/.local/share/...).
	ProfileDir string `yaml:"profileDir" json:"profileDir"`
	Binary     string `yaml:"binary" json:"binary"`
	// User is the account Chromium runs as when framebus runs as root:
	// empty for cdpdriver.DefaultBrowserUser (created when missing), or
	// "root" to keep it root, without Chromium's sandbox.
	User          string `yaml:"user" json:"user,omitempty"`
	StartURL      string `yaml:"startURL" json:"startURL"`
	DialogTimeout string `yaml:"dialogTimeout" json:"dialogTimeout"`
	DialogDefault string `yaml:"dialogDefault" json:"dialogDefault"`
}

// profileConfig declares a named profile; with attach it is an attach
// profile, the DevTools URL of a browser framebus does not start.
type profileConfig struct {
	Attach string `yaml:"attach" json:"attach,omitempty"`
	// Viewport and Device, when either is set, replace the node's for
	// this profile's tabs (an attach profile's too: it keeps its window's
	// size only when neither is set).
	Viewport string `yaml:"viewport" json:"viewport,omitempty"`
	Device   string `yaml:"device" json:"device,omitempty"`
}

type framesConfig struct {
	FullPage string `yaml:"fullPage" json:"fullPage"`
	Policy   string `yaml:"policy" json:"policy"`
	// MaxContent is the longest content a frame carries, in bytes; a
	// page with more gets a frame without it. 0: no limit.
	MaxContent int `yaml:"maxContent" json:"maxContent"`
	// SettleTimeout bounds how long a frame waits for its new document to
	// load and its content to be read (a Go duration). A machine that is
	// slow for its pages (very large ones, a busy machine) raises it.
	SettleTimeout string `yaml:"settleTimeout" json:"settleTimeout"`
}

// filesConfig: the node's files plans may name (upload paths, file:
// URLs): only under Roots; none by default. Clients' own files are sent
// over the bus and need no root.
type filesConfig struct {
	Roots []string `yaml:"roots" json:"roots"`
	// MaxStagedBytes bounds the files staged for upload, all the node's
	// tabs together: 0 (the default) derives it from the free disk space
	// (and memory, when the temporary directory is in memory), -1 sets no
	// bound.
	MaxStagedBytes int64 `yaml:"maxStagedBytes" json:"maxStagedBytes,omitempty"`
}

// clusterOptions are the bus's cluster options, the secret read from its
// file; nil without a cluster.
func (cfg config) clusterOptions() (*bus.ClusterOptions, error) {
	c := cfg.Bus.Cluster
	if c.Listen == "" {
		return nil, nil
	}
	if c.SecretFile == "" {
		return nil, usagef("bus.cluster.secretFile (--cluster-secret-file): a cluster needs the secret its routes log in with")
	}
	data, err := smallfile.ReadSecret(c.SecretFile)
	if err != nil {
		return nil, usagef("bus.cluster.secretFile: %v", err)
	}
	return &bus.ClusterOptions{Name: c.Name, Listen: c.Listen, Routes: c.Routes, Secret: strings.TrimSpace(string(data))}, nil
}

// leafOptions are the bus's leaf node options, the login read from its
// file; nil without a hub.
func (cfg config) leafOptions() (*bus.LeafOptions, error) {
	l := cfg.Bus.Leaf
	if len(l.URLs) == 0 {
		return nil, nil
	}
	o := &bus.LeafOptions{URLs: l.URLs, JSDomain: l.JSDomain}
	if l.Credentials == "" {
		return o, nil
	}
	data, err := smallfile.ReadSecret(l.Credentials)
	if err != nil {
		return nil, usagef("bus.leaf.credentials (--leaf-credentials): %v", err)
	}
	text := strings.TrimSpace(string(data))
	if strings.Contains(text, natsCredsHeader) {
		o.CredentialsFile = l.Credentials // the server reads it itself
		return o, nil
	}
	user, password, ok := strings.Cut(text, ":")
	if !ok || user == "" || strings.ContainsAny(text, "\r\n") {
		return nil, usagef("bus.leaf.credentials (--leaf-credentials): %s holds neither user:password on one line nor a NATS credentials file (.creds)", l.Credentials)
	}
	o.User, o.Password = user, password
	return o, nil
}

// natsCredsHeader starts the user JWT of a NATS credentials file.
const natsCredsHeader = "-----BEGIN NATS USER JWT-----"

// leafConfig: the embedded server as a leaf node of a hub (bus.LeafOptions).
type leafConfig struct {
	URLs []string `yaml:"urls" json:"urls,omitempty"` // the hub's leaf node listeners; none: no hub
	// Credentials is a file (0600) that logs the leaf connection in to
	// the hub: user:password on one line, or a NATS credentials file.
	Credentials string `yaml:"credentials" json:"credentials,omitempty"`
	JSDomain    string `yaml:"jsDomain" json:"jsDomain,omitempty"` // the hub's JetStream domain
}

// clusterConfig: the embedded server as a cluster member (bus.ClusterOptions).
type clusterConfig struct {
	Listen string   `yaml:"listen" json:"listen,omitempty"` // host:port the other members route to; "" no cluster
	Routes []string `yaml:"routes" json:"routes,omitempty"` // every member's nats-route://host:port
	// SecretFile holds the password every member's routes log in with
	// (the same file on every member; keep it 0600).
	SecretFile string `yaml:"secretFile" json:"secretFile,omitempty"`
	Name       string `yaml:"name" json:"name,omitempty"` // the cluster's name (default framebus)
}

type busConfig struct {
	Listen string `yaml:"listen" json:"listen"` // the embedded server's listener
	URL    string `yaml:"url" json:"url"`       // an existing server instead
	Prefix string `yaml:"prefix" json:"prefix"`
	// WebSocket is host:port of a NATS-over-WebSocket listener for
	// browser-based clients, with the same users; "" for none.
	WebSocket string `yaml:"websocket" json:"websocket,omitempty"`
	// WebSocketOrigins are the web pages' origins that may use the
	// WebSocket listener (scheme://host[:port]); none: no web page.
	WebSocketOrigins []string `yaml:"websocketOrigins" json:"websocketOrigins,omitempty"`
	// AllowRemote lets Listen and WebSocket be non-loopback addresses:
	// every connection logs in, but there is no TLS.
	AllowRemote bool `yaml:"allowRemote" json:"allowRemote,omitempty"`
	// Cluster makes the embedded server a member of a NATS cluster.
	Cluster clusterConfig `yaml:"cluster" json:"cluster,omitempty"`
	// Leaf makes the embedded server a leaf node of a NATS deployment.
	Leaf leafConfig `yaml:"leaf" json:"leaf,omitempty"`
	// Users may log in besides the node's own agent and admin (and those
	// creds add made, kept in users.json beside the state file).
	Users []userConfig `yaml:"users" json:"users,omitempty"`
}

// historyConfig: the frame history, kept in JetStream (see
// actors.History): in memory, on disk under Dir (default
// <state dir>/jetstream), or off.
type historyConfig struct {
	Storage   string `yaml:"storage" json:"storage"` // memory, file or off
	Dir       string `yaml:"dir" json:"dir,omitempty"`
	MaxPerTab int64  `yaml:"maxPerTab" json:"maxPerTab"`
	MaxAge    string `yaml:"maxAge" json:"maxAge"` // a duration
	MaxBytes  int64  `yaml:"maxBytes" json:"maxBytes"`
}

// historyOff is the history storage setting that runs a node without.
const historyOff = "off"

func defaultConfig() config {
	return config{
		Browser: browserConfig{
			Headless:      true,
			Timeout:       millis(protocol.DefaultActionTimeout / time.Millisecond),
			StartURL:      "about:blank",
			DialogTimeout: actors.DefaultDialogTimeout.String(),
			DialogDefault: "accept",
		},
		Schemes:  []string{"http", "https"},
		Viewport: fmt.Sprintf("%dx%d", protocol.DefaultViewport.Width, protocol.DefaultViewport.Height),
		Frames:   framesConfig{FullPage: string(frames.DefaultFormat), Policy: string(frames.PolicyURLChange), MaxContent: frames.DefaultMaxContent, SettleTimeout: actors.DefaultSettleTimeout.String()},
		Bus:      busConfig{Listen: "127.0.0.1:0", Prefix: protocol.DefaultPrefix},
		History: historyConfig{Storage: actors.HistoryMemory, MaxPerTab: actors.DefaultHistoryPerTab,
			MaxAge: actors.DefaultHistoryAge.String(), MaxBytes: actors.DefaultHistoryBytes},
		HTTP:     httpConfig{MaxBytes: protocol.DefaultFetchMaxBytes, MaxRedirects: protocol.DefaultFetchMaxRedirects},
		Search:   searchConfig{Engine: protocol.EngineDuckDuckGo},
		LogLevel: "info",
	}
}

// Environment variables of the configuration.
const (
	envConfig      = "FRAMEBUS_CONFIG"
	envHeadless    = "FRAMEBUS_HEADLESS"
	envTimeout     = "FRAMEBUS_TIMEOUT"
	envProfileDir  = "FRAMEBUS_PROFILE_DIR"
	envWhitelist   = "FRAMEBUS_WHITELIST"
	envSchemes     = "FRAMEBUS_SCHEMES"
	envListen      = "FRAMEBUS_LISTEN"
	envBusURL      = "FRAMEBUS_BUS_URL"
	envPrefix      = "FRAMEBUS_PREFIX"
	envLogLevel    = "FRAMEBUS_LOG_LEVEL"
	envViewport    = "FRAMEBUS_VIEWPORT"
	envDevice      = "FRAMEBUS_DEVICE"
	envBrowserUser = "FRAMEBUS_BROWSER_USER"
	envFileRoots   = "FRAMEBUS_FILE_ROOTS"
	envWebSocket   = "FRAMEBUS_WEBSOCKET"
	envNode        = "FRAMEBUS_NODE"
)

// defaultConfigPath is read when it exists and no file is named.
func defaultConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "framebus", "config.yaml")
}

// loadConfig applies the file (path, else $FRAMEBUS_CONFIG, else the
// default path when it exists) and the environment to the defaults. It
// returns the file it read ("" for none).
func (c *cli) loadConfig(path string) (config, string, error) {
	cfg := defaultConfig()
	named := path != ""
	if !named {
		path = c.getenv(envConfig)
		named = path != ""
	}
	if !named {
		path = defaultConfigPath()
	}
	if path != "" {
		data, err := smallfile.Read(path)
		switch {
		case err == nil:
			dec := yaml.NewDecoder(bytes.NewReader(data))
			dec.KnownFields(true)
			if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
				return cfg, path, usagef("config %s: %s", path, plainYAML(err))
			}
		case !named && errors.Is(err, fs.ErrNotExist):
			path = ""
		default:
			return cfg, path, usagef("config: %v", err)
		}
	}
	if err := cfg.applyEnv(c.getenv); err != nil {
		return cfg, path, err
	}
	return cfg, path, nil
}

func (cfg *config) applyEnv(getenv func(string) string) error {
	if v := getenv(envHeadless); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return usagef("$%s: %q is not true or false", envHeadless, v)
		}
		cfg.Browser.Headless = b
	}
	if v := getenv(envTimeout); v != "" {
		ms, err := parseMillis(v)
		if err != nil {
			return usagef("$%s: %v", envTimeout, err)
		}
		cfg.Browser.Timeout = millis(ms)
	}
	if v, ok := lookupEnv(getenv, envWhitelist); ok {
		list := splitList(v)
		cfg.Whitelist = &list
	}
	for name, dst := range map[string]*string{
		envProfileDir: &cfg.Browser.ProfileDir, envListen: &cfg.Bus.Listen, envBusURL: &cfg.Bus.URL,
		envPrefix: &cfg.Bus.Prefix, envLogLevel: &cfg.LogLevel, envViewport: &cfg.Viewport, envDevice: &cfg.Device,
		envBrowserUser: &cfg.Browser.User, envWebSocket: &cfg.Bus.WebSocket, envNode: &cfg.Node.Name,
	} {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	if v := getenv(envSchemes); v != "" {
		cfg.Schemes = splitList(v)
	}
	if v := getenv(envFileRoots); v != "" {
		cfg.Files.Roots = splitList(v)
	}
	return nil
}

// lookupEnv tells an empty variable (an empty whitelist: deny all) from
// an unset one. getenv cannot; os.LookupEnv can, for the real process.
func lookupEnv(getenv func(string) string, name string) (string, bool) {
	if v := getenv(name); v != "" {
		return v, true
	}
	if _, ok := os.LookupEnv(name); ok && getenv(name) == "" {
		return "", true
	}
	return "", false
}

// parseMillis reads a timeout: a number of milliseconds or a duration.
func parseMillis(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a timeout: give milliseconds (30000) or a duration (30s)", s)
	}
	return int(d / time.Millisecond), nil
}

// yamlWords rewrites the YAML decoder's messages, which speak of Go types
// (main.browserConfig, []string), into the file's terms.
var yamlWords = []struct {
	pattern *regexp.Regexp
	plain   string
}{
	{regexp.MustCompile(`field (\S+) not found in type \S+`), `"$1" is not a setting here`},
	{regexp.MustCompile(`mapping key (".*") already defined at line (\d+)`), `$1 is given twice (first at line $2)`},
	{regexp.MustCompile("cannot unmarshal !!\\w+ `(.*)` into \\[\\]string"), `$1 is not a list`},
	{regexp.MustCompile("cannot unmarshal !!\\w+ `(.*)` into map\\S*"), `$1 is not a mapping`},
	{regexp.MustCompile("cannot unmarshal !!\\w+ `(.*)` into (main\\.)?\\w+"), `$1 is not a value this setting takes`},
	{regexp.MustCompile(`cannot unmarshal !!seq into \S+`), `a list is not what this setting takes`},
	{regexp.MustCompile(`cannot unmarshal !!map into \S+`), `a mapping is not what this setting takes`},
	{regexp.MustCompile(`cannot unmarshal !!\w+ into \S+`), `this is not what the setting takes`},
}

// plainYAML is err's message without the decoder's Go words.
func plainYAML(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	lines := strings.Split(msg, "\n")
	for i, line := range lines {
		line = strings.TrimSpace(line)
		for _, w := range yamlWords {
			line = w.pattern.ReplaceAllString(line, w.plain)
		}
		lines[i] = line
	}
	return strings.Join(lines, "; ")
}

// millis is a timeout in milliseconds that YAML may also give as a
// duration, as the environment and the flags may.
type millis int

func (m *millis) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a timeout is milliseconds (30000) or a duration (30s)", n.Line)
	}
	ms, err := parseMillis(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*m = millis(ms)
	return nil
}

// applyFlags lets the serve flags that were given override the rest.
func (cfg *config) applyFlags(fs *pflag.FlagSet) {
	str := func(name string, dst *string) {
		if fs.Changed(name) {
			*dst, _ = fs.GetString(name)
		}
	}
	if fs.Changed("headed") {
		headed, _ := fs.GetBool("headed")
		cfg.Browser.Headless = !headed
	}
	duration := func(name string) time.Duration { return time.Duration(*fs.Lookup(name).Value.(*msDuration)) }
	if fs.Changed("timeout") {
		cfg.Browser.Timeout = millis(duration("timeout") / time.Millisecond)
	}
	if fs.Changed("dialog-timeout") {
		cfg.Browser.DialogTimeout = duration("dialog-timeout").String()
	}
	if fs.Changed("whitelist") {
		v, _ := fs.GetString("whitelist")
		list := splitList(v)
		cfg.Whitelist = &list
	}
	if fs.Changed("schemes") {
		v, _ := fs.GetString("schemes")
		cfg.Schemes = splitList(v)
	}
	if fs.Changed("file-roots") {
		v, _ := fs.GetString("file-roots")
		cfg.Files.Roots = splitList(v)
	}
	str("node", &cfg.Node.Name)
	if fs.Changed("max-tabs") {
		cfg.Node.MaxTabs, _ = fs.GetInt("max-tabs")
	}
	if fs.Changed("max-staged-bytes") {
		cfg.Files.MaxStagedBytes, _ = fs.GetInt64("max-staged-bytes")
	}
	str("profile-dir", &cfg.Browser.ProfileDir)
	str("browser-user", &cfg.Browser.User)
	str("start-url", &cfg.Browser.StartURL)
	str("dialog-default", &cfg.Browser.DialogDefault)
	str("full-page", &cfg.Frames.FullPage)
	str("full-page-policy", &cfg.Frames.Policy)
	str("listen", &cfg.Bus.Listen)
	str("bus-url", &cfg.Bus.URL)
	str("prefix", &cfg.Bus.Prefix)
	str("websocket", &cfg.Bus.WebSocket)
	if fs.Changed("websocket-origins") {
		v, _ := fs.GetString("websocket-origins")
		cfg.Bus.WebSocketOrigins = splitList(v)
	}
	str("cluster", &cfg.Bus.Cluster.Listen)
	str("cluster-secret-file", &cfg.Bus.Cluster.SecretFile)
	if fs.Changed("routes") {
		v, _ := fs.GetString("routes")
		cfg.Bus.Cluster.Routes = splitList(v)
	}
	if fs.Changed("leaf") {
		v, _ := fs.GetString("leaf")
		cfg.Bus.Leaf.URLs = splitList(v)
	}
	str("leaf-credentials", &cfg.Bus.Leaf.Credentials)
	str("leaf-js-domain", &cfg.Bus.Leaf.JSDomain)
	if fs.Changed("allow-remote") {
		cfg.Bus.AllowRemote, _ = fs.GetBool("allow-remote")
	}
	str("log-level", &cfg.LogLevel)
	str("history", &cfg.History.Storage)
	str("viewport", &cfg.Viewport)
	str("device", &cfg.Device)
}

// validate checks every setting and says which one is wrong.
func (cfg config) validate() error {
	if cfg.Browser.Timeout <= 0 {
		return usagef("browser.timeout (--timeout): %d is not a timeout in milliseconds", cfg.Browser.Timeout)
	}
	if d, err := time.ParseDuration(cfg.Browser.DialogTimeout); err != nil || d < 0 {
		return usagef("browser.dialogTimeout (--dialog-timeout): %q is not a duration (10s, 0 answers at once)", cfg.Browser.DialogTimeout)
	}
	if cfg.Browser.DialogDefault != "accept" && cfg.Browser.DialogDefault != "dismiss" {
		return usagef("browser.dialogDefault (--dialog-default): %q is not accept or dismiss", cfg.Browser.DialogDefault)
	}
	if _, err := frames.ParseFormat(cfg.Frames.FullPage); err != nil {
		return usagef("frames.fullPage (--full-page): %v", err)
	}
	if cfg.Frames.MaxContent < 0 {
		return usagef("frames.maxContent: %d is not a size in bytes (0: no limit)", cfg.Frames.MaxContent)
	}
	if d, err := time.ParseDuration(cfg.Frames.SettleTimeout); err != nil || d < 100*time.Millisecond {
		return usagef("frames.settleTimeout: %q is not a duration of at least 100ms (10s)", cfg.Frames.SettleTimeout)
	}
	if _, err := frames.ParsePolicy(cfg.Frames.Policy); err != nil {
		return usagef("frames.policy (--full-page-policy): %v", err)
	}
	if _, err := cfg.whitelist(); err != nil {
		return usagef("whitelist (--whitelist): %v", err)
	}
	if _, err := protocol.NewSubjects(cfg.Bus.Prefix); err != nil {
		return usagef("bus.prefix (--prefix): %v", err)
	}
	if cfg.Node.Name != "" && !protocol.ValidNodeName(cfg.Node.Name) {
		return usagef("node.name (--node): %q is not a node name (letters, digits, '-' and '_', at most %d)", cfg.Node.Name, protocol.MaxNodeName)
	}
	if cfg.Node.MaxTabs < -1 {
		return usagef("node.maxTabs (--max-tabs): %d is not a number of tabs (0: derived from the machine; -1: no bound)", cfg.Node.MaxTabs)
	}
	if cfg.Files.MaxStagedBytes < -1 {
		return usagef("files.maxStagedBytes (--max-staged-bytes): %d is not a number of bytes (0: derived from the free disk space; -1: no bound)", cfg.Files.MaxStagedBytes)
	}
	if cfg.Bus.URL == "" {
		if _, _, err := splitListen(cfg.Bus.Listen, cfg.Bus.AllowRemote); err != nil {
			return err
		}
	}
	if c := cfg.Bus.Cluster; c.Listen == "" && (len(c.Routes) > 0 || c.SecretFile != "") {
		return usagef("bus.cluster: routes and secretFile need listen (--cluster host:port)")
	}
	if cfg.Bus.URL != "" && cfg.Bus.Cluster.Listen != "" {
		return usagef("bus.cluster (--cluster) is the embedded server's; an external bus (bus.url) is clustered as its servers are")
	}
	if l := cfg.Bus.Leaf; len(l.URLs) == 0 && (l.Credentials != "" || l.JSDomain != "") {
		return usagef("bus.leaf: credentials and jsDomain need urls (--leaf nats://hub:7422)")
	}
	if len(cfg.Bus.Leaf.URLs) > 0 && (cfg.Bus.URL != "" || cfg.Bus.Cluster.Listen != "") {
		return usagef("bus.leaf (--leaf) excludes bus.url and bus.cluster: a node joins a NATS deployment as a leaf node, as a cluster member or as a client")
	}
	if cfg.Bus.URL != "" && (cfg.Bus.WebSocket != "" || len(cfg.Bus.Users) > 0) {
		return usagef("bus.websocket (--websocket) and bus.users are the embedded server's; an external bus (bus.url) has its own")
	}
	var users []bus.User
	for _, u := range cfg.Bus.Users {
		if serving.IsLocalUser(u.Name) {
			return usagef("bus.users: %q is the name of the node's own %s user; choose another", u.Name, u.Name)
		}
		users = append(users, bus.User{Name: u.Name, PasswordHash: u.Password, Role: u.Role})
	}
	if cfg.Bus.URL == "" {
		if err := (bus.Options{NoListen: true, Users: users, WebSocket: cfg.Bus.WebSocket, WebSocketOrigins: cfg.Bus.WebSocketOrigins,
			AllowRemote: cfg.Bus.AllowRemote, Prefix: cfg.Bus.Prefix}).Validate(); err != nil {
			return usagef("bus (websocket, websocketOrigins, users, allowRemote): %v", err)
		}
	}
	for _, server := range strings.Split(cfg.Bus.URL, ",") {
		u, err := url.Parse(strings.TrimSpace(server))
		if cfg.Bus.URL != "" && (err != nil || u.Host == "" || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme)) {
			return usagef("bus.url (--bus-url): %q is not a NATS server URL (nats://host:port; several separated by commas)", server)
		}
	}
	for _, scheme := range cfg.Schemes {
		if !urlScheme.MatchString(scheme) {
			return usagef("schemes (--schemes): %q is not a URL scheme (http, https, data, ...)", scheme)
		}
	}
	if _, err := cfg.fileRoots(); err != nil {
		return usagef("%v (--file-roots)", err)
	}
	if _, err := newLogLevel(cfg.LogLevel); err != nil {
		return err
	}
	if _, err := cfg.historyOptions(""); err != nil {
		return err
	}
	if _, err := cfg.httpOptions(); err != nil {
		return err
	}
	if err := cfg.checkSearch(); err != nil {
		return err
	}
	if _, err := cfg.viewport(); err != nil {
		return usagef("viewport (--viewport, --device): %v", err)
	}
	for name, p := range cfg.Profiles {
		if !protocol.ValidProfileName(name) || name == protocol.DefaultProfile {
			return usagef("profiles: %q is not a profile name (letters, digits, '-' and '_', labels separated by '.'; not %q)", name, protocol.DefaultProfile)
		}
		if p.Attach != "" {
			u, err := url.Parse(p.Attach)
			if err != nil || u.Host == "" || !slices.Contains([]string{"http", "https", "ws", "wss"}, u.Scheme) {
				return usagef("profiles.%s.attach: %q is not a DevTools URL (http://HOST:PORT or ws://HOST:PORT/devtools/browser/ID)", name, p.Attach)
			}
		}
		if _, err := p.viewport(); err != nil {
			return usagef("profiles.%s (viewport, device): %v", name, err)
		}
	}
	return nil
}

// urlScheme is what RFC 3986 allows a scheme to be.
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// windowViewport is the viewport setting that leaves tabs the browser
// window's own size.
const windowViewport = "window"

// viewport is the tabs' viewport: the size and the device preset, or the
// zero Viewport (no emulation) for "window".
func (cfg config) viewport() (protocol.Viewport, error) {
	size := cfg.Viewport
	if cfg.Device != "" && size == defaultConfig().Viewport {
		size = "" // the device's own, unless another size is asked for
	}
	return parseViewport(size, cfg.Device)
}

// parseViewport reads a viewport setting: a size ("" for the device's),
// "window", and a device preset.
func parseViewport(size, device string) (protocol.Viewport, error) {
	if size == windowViewport {
		if device != "" {
			return protocol.Viewport{}, fmt.Errorf("device %q emulates a device, which %q (the window's own size) does not; give one or the other", device, windowViewport)
		}
		return protocol.Viewport{}, nil
	}
	vp, err := protocol.NewViewport(size, device)
	if err != nil && device == "" {
		err = fmt.Errorf("%v, or %q for the browser window's own", err, windowViewport)
	}
	return vp, err
}

// viewport is the profile's own viewport, nil when it has none (its tabs
// take the node's).
func (p profileConfig) viewport() (*protocol.Viewport, error) {
	if p.Viewport == "" && p.Device == "" {
		return nil, nil
	}
	vp, err := parseViewport(p.Viewport, p.Device)
	return &vp, err
}

// fileRoots are the directories plans may name node files under.
func (cfg config) fileRoots() (*files.Roots, error) {
	dirs := make([]string, len(cfg.Files.Roots))
	for i, d := range cfg.Files.Roots {
		dirs[i] = expandHome(d)
	}
	return files.NewRoots(dirs)
}

// timeout is the default action deadline.
func (cfg config) timeout() time.Duration {
	return time.Duration(cfg.Browser.Timeout) * time.Millisecond
}

// dialogTimeout is the node's dialog timeout: 0 in the configuration
// means "answer at once", which the node spells as negative.
// settleTimeout is frames.settleTimeout (validated).
func (cfg config) settleTimeout() time.Duration {
	d, _ := time.ParseDuration(cfg.Frames.SettleTimeout)
	return d
}

func (cfg config) dialogTimeout() time.Duration {
	d, _ := time.ParseDuration(cfg.Browser.DialogTimeout)
	if d == 0 {
		return -1
	}
	return d
}

// framesOptions are the frames every tab makes.
func (cfg config) framesOptions() frames.Options {
	maxContent := cfg.Frames.MaxContent
	if maxContent == 0 {
		maxContent = -1 // frames.Options's "no limit"
	}
	return frames.Options{Format: frames.Format(cfg.Frames.FullPage), Policy: frames.Policy(cfg.Frames.Policy), MaxContent: maxContent}
}

// historyOptions are the node's history settings; file storage goes in
// history.dir, else <stateDir>/jetstream.
func (cfg config) historyOptions(stateDir string) (actors.HistoryOptions, error) {
	h := cfg.History
	if h.Storage == historyOff {
		return actors.HistoryOptions{Disabled: true}, nil
	}
	if h.Storage != actors.HistoryMemory && h.Storage != actors.HistoryFile {
		return actors.HistoryOptions{}, usagef("history.storage (--history): %q is not memory, file or off", h.Storage)
	}
	age, err := time.ParseDuration(h.MaxAge)
	if err != nil || age < time.Second {
		return actors.HistoryOptions{}, usagef("history.maxAge: %q is not a duration of 1s or more (24h, 30m)", h.MaxAge)
	}
	if h.MaxPerTab < 1 {
		return actors.HistoryOptions{}, usagef("history.maxPerTab: %d; keep at least 1 frame per tab (or history.storage: off)", h.MaxPerTab)
	}
	if h.MaxBytes < 1<<20 {
		return actors.HistoryOptions{}, usagef("history.maxBytes: %d; want at least 1 MiB (1048576)", h.MaxBytes)
	}
	o := actors.HistoryOptions{Storage: h.Storage, MaxPerTab: h.MaxPerTab, MaxAge: age, MaxBytes: h.MaxBytes}
	if h.Storage == actors.HistoryFile {
		o.Dir = expandHome(h.Dir)
		if o.Dir == "" && stateDir != "" {
			o.Dir = filepath.Join(stateDir, "jetstream")
		}
	}
	return o, nil
}

// httpOptions are the http resource's settings.
func (cfg config) httpOptions() (actors.HTTPOptions, error) {
	h := cfg.HTTP
	o := actors.HTTPOptions{MaxBytes: h.MaxBytes, MaxRedirects: h.MaxRedirects}
	switch {
	case h.MaxBytes < 1:
		return o, usagef("http.maxBytes: %d; want a body cap of 1 byte or more (default %d)", h.MaxBytes, protocol.DefaultFetchMaxBytes)
	case h.MaxRedirects < 1:
		return o, usagef("http.maxRedirects: %d; want 1 or more (default %d; a fetch that wants none says noRedirects)", h.MaxRedirects, protocol.DefaultFetchMaxRedirects)
	}
	if h.Timeout != "" {
		d, err := time.ParseDuration(h.Timeout)
		if err != nil || d <= 0 {
			return o, usagef("http.timeout: %q is not a duration above 0 (30s, 1m)", h.Timeout)
		}
		o.Timeout = d
	}
	return o, nil
}

// checkSearch checks the search settings without reading the key.
func (cfg config) checkSearch() error {
	s := cfg.Search
	if !slices.Contains(protocol.SearchEngines, s.Engine) {
		return usagef("search.engine: %q is not one of %s", s.Engine, strings.Join(protocol.SearchEngines, ", "))
	}
	for name, raw := range map[string]string{"search.duckduckgo.url": s.DuckDuckGo.URL, "search.google.url": s.Google.URL} {
		if u, err := url.Parse(raw); raw != "" && (err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https")) {
			return usagef("%s: %q is not an http(s) URL", name, raw)
		}
	}
	if (s.Google.KeyFile == "") != (s.Google.CX == "") {
		return usagef("search.google: give both keyFile (a file holding the Custom Search JSON API key, 0600) and cx (the search engine's id), or neither")
	}
	if s.Engine == protocol.EngineGoogle && s.Google.KeyFile == "" {
		return usagef("search.engine: google needs search.google.keyFile and search.google.cx")
	}
	return nil
}

// searchOptions are the search resource's settings, the Google key read
// from its file.
func (cfg config) searchOptions() (actors.SearchOptions, error) {
	s := cfg.Search
	o := actors.SearchOptions{Engine: s.Engine, DuckDuckGoURL: s.DuckDuckGo.URL, GoogleURL: s.Google.URL, GoogleCX: s.Google.CX}
	if s.Google.KeyFile != "" {
		key, err := smallfile.ReadSecret(expandHome(s.Google.KeyFile))
		if err != nil {
			return o, usagef("search.google.keyFile: %v", err)
		}
		o.GoogleKey = strings.TrimSpace(string(key))
	}
	return o, nil
}

// profileDir is the default profile's directory, "" for a temporary one.
func (cfg config) profileDir() string {
	if cfg.Browser.ProfileDir == "" {
		return ""
	}
	return filepath.Join(expandHome(cfg.Browser.ProfileDir), protocol.DefaultProfile)
}

// profilesDir is where named and per-domain profiles live: profileDir;
// else, when Chromium runs as another account (browserHome, framebus
// being root), <its home>/profiles, the one place it surely reaches;
// else $XDG_DATA_HOME/framebus/profiles (they exist to persist).
func (cfg config) profilesDir(getenv func(string) string, browserHome string) string {
	if cfg.Browser.ProfileDir != "" {
		return expandHome(cfg.Browser.ProfileDir)
	}
	if browserHome != "" {
		return filepath.Join(browserHome, "profiles")
	}
	data := getenv("XDG_DATA_HOME")
	if data == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		data = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(data, "framebus", "profiles")
}

func expandHome(dir string) string {
	if strings.HasPrefix(dir, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, dir[2:])
		}
	}
	return dir
}

// browserUser is the account Chromium runs as, nil for framebus's own
// (framebus is not root, or browser.user is root). The default account
// is created when missing.
func (cfg config) browserUser() (*cdpdriver.BrowserUser, error) {
	name := cfg.Browser.User
	if os.Geteuid() != 0 || name == cdpdriver.RootUser {
		return nil, nil
	}
	if name == "" {
		name = cdpdriver.DefaultBrowserUser
	}
	u, err := cdpdriver.LookupBrowserUser(name, name == cdpdriver.DefaultBrowserUser)
	if err != nil {
		return nil, usagef("browser.user (--browser-user): %v", err)
	}
	return u, nil
}

// profiles are the named profiles in name order.
func (cfg config) profiles() []actors.ProfileOptions {
	var out []actors.ProfileOptions
	for _, name := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		p := cfg.Profiles[name]
		vp, _ := p.viewport() // checked by validate
		out = append(out, actors.ProfileOptions{Name: name, Attach: p.Attach, Viewport: vp})
	}
	return out
}

func defaultConfigHint() string {
	if p := defaultConfigPath(); p != "" {
		return p
	}
	return "~/.config/framebus/config.yaml"
}

func configCommand() command {
	return command{
		name:    "config",
		summary: "print the configuration serve would run with: defaults, file, environment, flags",
		group:   groupNode,
		details: `Prints {"ok":true,"file":FILE,"config":{...}}. The layers, each overriding the one
before: defaults; the YAML file (--config, $` + envConfig + `, else ` + defaultConfigHint() + `
when it exists); the environment ($` + envHeadless + `, $` + envTimeout + ` (ms or a duration),
$` + envProfileDir + `, $` + envWhitelist + ` (comma-separated; set empty to deny all),
$` + envSchemes + `, $` + envListen + `, $` + envBusURL + `, $` + envPrefix + `, $` + envLogLevel + `,
$` + envViewport + `, $` + envDevice + `, $` + envBrowserUser + `, $` + envFileRoots + ` (comma-separated),
$` + envWebSocket + `, $` + envNode + `);
then the flags serve was given. It takes serve's flags.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			configFile := declareServeFlags(fs) // the same flags as serve
			return func(c *cli, args []string) error {
				if len(args) > 0 {
					return usagef("config: takes no arguments, got %q", args)
				}
				cfg, file, err := c.loadConfig(*configFile)
				if err != nil {
					return err
				}
				cfg.applyFlags(fs)
				if err := cfg.validate(); err != nil {
					return err
				}
				c.printJSON(struct {
					OK     bool   `json:"ok"`
					File   string `json:"file"`
					Config config `json:"config"`
				}{true, file, cfg})
				return nil
			}
		},
	}
}

// userConfig is a user of the bus in the configuration: its password only
// as a bcrypt hash (make one with: framebus creds add, or htpasswd -bnBC 10
// "" PASSWORD | tr -d ':\n').
type userConfig struct {
	Name     string `yaml:"name" json:"name"`
	Password string `yaml:"password" json:"password"` // bcrypt hash
	Role     string `yaml:"role" json:"role"`
}
