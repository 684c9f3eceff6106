package main

import (
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/smallfile"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/viewer"
)

// viewFile is where a running viewer's URL (with its token) is kept, 0600
// beside the state file, for the MCP server to name it to a person.
const viewFile = "view.url"

func viewCommand() command {
	return command{
		name:    "view",
		summary: "serve the viewer, a web page for people: every tab live, its frames and plans, handoffs and questions, and taking a tab over",
		group:   groupNode,
		details: `Serves one page on a loopback address and prints {"ok":true,"view":URL}:
open the URL (it carries the token; without it the viewer refuses). The
viewer is a client of the bus with the operator's credentials (a person's:
they take tabs over and answer, and send no plans), or those --creds
gives: with an observer's it watches and may not take over. See
docs/people.md.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var target clientFlags
			target.declarePerson(fs, false)
			listen := fs.String("listen", "127.0.0.1:0", "serve at `host:port` (loopback; port 0 picks a free one)")
			tokenFile := fs.String("token-file", "", "the token the URL carries, read from this `file` (0600); default: a new one")
			by := declareBy(fs)
			return func(c *cli, args []string) error {
				if len(args) > 0 {
					return usagef("view: takes no arguments, got %q", args)
				}
				return c.view(target, *listen, *tokenFile, *by)
			}
		},
	}
}

// view serves the viewer until the process is stopped.
func (c *cli) view(target clientFlags, listen, tokenFile, by string) error {
	host, port, err := splitListen(listen, false)
	if err != nil {
		return usagef("--listen: %v", err)
	}
	token := viewer.NewToken()
	if tokenFile != "" {
		if token, err = readTokenFile(tokenFile); err != nil {
			return err
		}
	}
	cl, err := c.dial(target, busclient.Options{NATSOptions: c.followNode(target)})
	if err != nil {
		return err
	}
	defer cl.close()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return protocol.Errorf(protocol.CodeUnavailable, "--listen %s: %v", listen, err)
	}
	defer ln.Close()
	logger := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := viewer.New(viewer.Options{Client: cl.bc, Token: token, By: c.personName(cl, by), Log: logger.Warn})
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "%v", err)
	}
	defer srv.Close()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	url := srv.URL(ln)
	if written := c.keepViewURL(url); written != "" {
		defer os.Remove(written)
	}
	c.printJSON(map[string]any{"ok": true, "view": url})
	select {
	case <-c.ctx.Done():
	case err := <-served:
		if err != nil && err != http.ErrServerClosed {
			return protocol.Errorf(protocol.CodeInternal, "view: %v", err)
		}
	}
	return nil
}

// keepViewURL writes the viewer's URL beside the state file for the MCP
// server; "" when there is no state directory to write to.
func (c *cli) keepViewURL(url string) string {
	path, err := c.statePath()
	if err != nil {
		return ""
	}
	file := filepath.Join(filepath.Dir(path), viewFile)
	if os.WriteFile(file, []byte(url+"\n"), 0o600) != nil {
		return ""
	}
	return file
}

// viewURL is a running viewer's URL, for the MCP server ("" for none).
func (c *cli) viewURL() string {
	path, err := c.statePath()
	if err != nil {
		return ""
	}
	data, err := smallfile.ReadSecret(filepath.Join(filepath.Dir(path), viewFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
