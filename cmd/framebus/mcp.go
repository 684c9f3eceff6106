package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/smallfile"
	"github.com/framebus/framebus/mcpserver"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// mcpPath is where the streamable HTTP transport answers.
const mcpPath = "/mcp"

func mcpCommand() command {
	return command{
		name:    "mcp",
		summary: "serve the Model Context Protocol (stdio, or streamable HTTP with --http): the web tool and a tool per action, backed by the running node (or one started in this process)",
		group:   groupNode,
		details: `An MCP client's configuration needs one line: {"command":"framebus","args":["mcp"]}.
It connects to the running node (the state file, --bus, $` + envURL + `) and, when none
runs, starts one in this process (its configuration from --config, as serve),
registered in the state file while it runs, so other framebus commands see its tabs.
Over stdio, stdout carries only the protocol; logs and errors go to stderr.
With --http host:port (loopback) it serves streamable HTTP at http://host:port/mcp
and prints {"ok":true,"mcp":URL,"tokenFile":FILE}: every request needs
"Authorization: Bearer <token>", the token in FILE (0600), or in --token-file.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declare(fs, false)
			httpAddr := fs.String("http", "", "serve streamable HTTP at `host:port` (loopback; port 0 picks a free one) instead of stdio")
			tools := fs.String("tools", mcpserver.ToolsBoth, "the tools served: web (ADR-006's web tool), actions (one per action, and the tab and lifecycle tools) or both")
			tokenFile := fs.String("token-file", "", "with --http: the bearer token clients must send, read from this `file` (0600); default: a new one, written beside the state file")
			configFile := fs.String("config", "", "configuration `file` of the node started when none runs (as serve's --config)")
			page := fs.String("page", mcpserver.PageDelta, "what results show of the page: delta (what changed since the page the session was last shown), full (the whole page) or none; a call's page argument overrides it")
			budget := fs.Int("page-budget", mcpserver.DefaultPageBudget, "the most `bytes` of page a result shows; a longer page comes as a summary and a link to read it")
			return func(c *cli, args []string) error {
				if len(args) > 0 {
					return usagef("mcp: takes no arguments, got %q", args)
				}
				if !slices.Contains(mcpserver.ToolSets, *tools) {
					return usagef("--tools: %q is not web, actions or both", *tools)
				}
				if *tokenFile != "" && *httpAddr == "" {
					return usagef("--token-file: only with --http")
				}
				if !slices.Contains(mcpserver.PageModes, *page) {
					return usagef("--page: %q is not delta, full or none", *page)
				}
				if *budget < 1 {
					return usagef("--page-budget: %d is not a size in bytes (1 or more)", *budget)
				}
				return c.mcp(target, *configFile, *httpAddr, *tools, *tokenFile, mcpserver.Options{Page: *page, PageBudget: *budget})
			}
		},
	}
}

func (c *cli) mcp(target clientFlags, configFile, httpAddr, tools, tokenFile string, pages mcpserver.Options) error {
	protocolOut := c.stdout
	if httpAddr == "" {
		// stdout is the protocol's: nothing else may be written there.
		c.stdout = c.stderr
	}
	cl, stopNode, err := c.mcpBus(target, configFile)
	if err != nil {
		return err
	}
	defer stopNode()
	defer cl.close()
	srv, err := mcpserver.New(mcpserver.Options{Client: cl.bc, Tools: tools, Version: buildVersion(),
		Logger: slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Page:   pages.Page, PageBudget: pages.PageBudget, Viewer: c.viewURL})
	if err != nil {
		return err
	}
	defer srv.Close()
	if httpAddr == "" {
		err := srv.MCP().Run(c.ctx, &lineTransport{in: c.stdin, out: &lockedWriter{w: protocolOut}})
		if err != nil && c.ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
			return protocol.Errorf(protocol.CodeInternal, "mcp over stdio: %v", err)
		}
		return nil
	}
	return c.serveMCPHTTP(srv, httpAddr, tokenFile)
}

// mcpGCPercent is the GC target of an MCP server that is a client only
// (no node in its process): the MCP SDK decodes each JSON message with a
// new 32 KB buffer, several a call, and at Go's default of 100 the
// collector took a third of the server's CPU (BenchmarkMCPEvalVsNATS).
// Its heap is a few megabytes, so four times that is cheap. GOGC, when
// set, decides instead.
const mcpGCPercent = 400

// clientGC sets the GC target of a client-only MCP server.
func (c *cli) clientGC() {
	if c.getenv("GOGC") == "" {
		debug.SetGCPercent(mcpGCPercent)
	}
}

// mcpBus connects to the running node's bus; when none runs (and no bus
// was named), it starts one in this process and connects to it. stop
// stops that node (a no-op for a node of its own).
func (c *cli) mcpBus(target clientFlags, configFile string) (*client, func(), error) {
	noStop := func() {}
	// It runs as long as its MCP client: it follows the node through
	// restarts (see followNode).
	cl, err := c.dial(target, busclient.Options{NATSOptions: c.followNode(target)})
	if err == nil {
		c.clientGC()
		return cl, noStop, nil
	}
	named := target.bus != "" || c.getenv(envURL) != "" || target.creds != "" || c.getenv(envCreds) != ""
	if named || protocol.CodeOf(err) != protocol.CodeUnavailable {
		return nil, nil, err
	}
	cfg, _, err := c.loadConfig(configFile)
	if err != nil {
		return nil, nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	log, err := newLogger(c.stderr, cfg.LogLevel)
	if err != nil {
		return nil, nil, err
	}
	log.Info().Msg("no framebus node running: starting one in this process")
	sn, err := c.startServing(cfg, log, false)
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		if err := sn.stop(c); err != nil {
			log.Error().Err(err).Msg("the node mcp started")
		}
	}
	if cl, err = c.dial(target, busclient.Options{}); err != nil {
		stop()
		return nil, nil, err
	}
	return cl, stop, nil
}

// buildVersion is the module's version this binary was built from.
func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "devel"
}

// serveMCPHTTP serves streamable HTTP on a loopback address until the
// process is stopped. Every request must carry the bearer token: any
// user of the machine can reach a loopback port.
func (c *cli) serveMCPHTTP(srv *mcpserver.Server, addr, tokenFile string) error {
	host, port, err := splitListen(addr, false)
	if err != nil {
		return usagef("--http: %v", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return protocol.Errorf(protocol.CodeUnavailable, "--http %s: %v", addr, err)
	}
	defer ln.Close()
	token, written, err := c.mcpToken(tokenFile, ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		return err
	}
	if written != "" {
		defer os.Remove(written)
		tokenFile = written
	}
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		// The token does not expire while the server runs.
		return &auth.TokenInfo{Expiration: time.Now().Add(24 * 365 * time.Hour)}, nil
	}
	// A session its client left without closing it ends after an idle
	// hour, with what it chose.
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCP() },
		&mcp.StreamableHTTPOptions{SessionTimeout: time.Hour})
	mux := http.NewServeMux()
	mux.Handle(mcpPath, auth.RequireBearerToken(verify, nil)(handler))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	url := "http://" + ln.Addr().String() + mcpPath
	c.printJSON(map[string]any{"ok": true, "mcp": url, "tokenFile": tokenFile})
	select {
	case <-c.ctx.Done():
	case err := <-served:
		return protocol.Errorf(protocol.CodeInternal, "mcp over HTTP: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if hs.Shutdown(ctx) != nil {
		hs.Close() // event streams that stay open
	}
	return nil
}

// readTokenFile reads a --token-file: a secret of 16 characters or more.
func readTokenFile(path string) (string, error) {
	data, err := smallfile.ReadSecret(path)
	if err != nil {
		return "", usagef("--token-file: %v", err)
	}
	token := strings.TrimSpace(string(data))
	if len(token) < 16 {
		return "", usagef("--token-file: the token in %s is too short (want 16 characters or more)", path)
	}
	return token, nil
}

// mcpToken is the bearer token HTTP clients must send: read from
// tokenFile, or a new one written (0600) beside the state file, whose
// path it returns to remove at exit.
func (c *cli) mcpToken(tokenFile string, port int) (token, written string, err error) {
	if tokenFile != "" {
		token, err := readTokenFile(tokenFile)
		return token, "", err
	}
	b := make([]byte, 32)
	rand.Read(b)
	token = hex.EncodeToString(b)
	path, err := c.statePath()
	if err != nil {
		return "", "", protocol.Errorf(protocol.CodeInternal, "%v", err)
	}
	dir := filepath.Dir(path)
	if err := serving.PrivateDir(dir); err != nil {
		return "", "", protocol.Errorf(protocol.CodeInternal, "token directory: %v", err)
	}
	written = filepath.Join(dir, fmt.Sprintf("mcp-%d.token", port))
	if err := os.WriteFile(written, []byte(token+"\n"), 0o600); err != nil {
		return "", "", protocol.Errorf(protocol.CodeInternal, "write the token: %v", err)
	}
	return token, written, nil
}
