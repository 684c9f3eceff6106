package cdpdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Attaching to a browser framebus did not start: a Chrome or Chromium run
// with --remote-debugging-port is reached by its DevTools URL, either the
// browser websocket itself or the HTTP endpoint that names it.

// maxVersionReply bounds the /json/version answer read.
const maxVersionReply = 1 << 20

// ResolveBrowserURL turns a DevTools URL into the browser websocket:
// ws://HOST:PORT/devtools/browser/ID is returned as it is; http://HOST:PORT
// (any path) is asked for it at /json/version, as Chromium serves it.
func ResolveBrowserURL(ctx context.Context, devtools string) (string, error) {
	u, err := url.Parse(devtools)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("devtools URL %q: want http://HOST:PORT or ws://HOST:PORT/devtools/browser/ID", devtools)
	}
	switch u.Scheme {
	case "ws", "wss":
		if !strings.HasPrefix(u.Path, "/devtools/browser/") {
			return "", fmt.Errorf("devtools URL %q: a websocket URL must be the browser's, /devtools/browser/ID", devtools)
		}
		return devtools, nil
	case "http", "https":
	default:
		return "", fmt.Errorf("devtools URL %q: want http://HOST:PORT or ws://HOST:PORT/devtools/browser/ID", devtools)
	}
	version := url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/json/version"}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, version.String(), nil)
	if err != nil {
		return "", fmt.Errorf("devtools URL %q: %w", devtools, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("no browser answers at %s: %w", version.String(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxVersionReply))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", version.String(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s, not a DevTools endpoint", version.String(), resp.Status)
	}
	var v struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.WebSocketDebuggerURL == "" {
		return "", fmt.Errorf("%s did not name the browser websocket (webSocketDebuggerUrl); is it a DevTools endpoint?", version.String())
	}
	return v.WebSocketDebuggerURL, nil
}
