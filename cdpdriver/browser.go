package cdpdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/browser"
	"github.com/mafredri/cdp/protocol/target"
	"github.com/mafredri/cdp/rpcc"
	"github.com/rs/zerolog"
)

// browserWriteBufferSize is the websocket write limit of the browser
// connection; rpcc's 4 KiB default rejects longer commands.
const browserWriteBufferSize = 1 << 20

// Browser is a browser-level CDP connection, used to create, list and
// close page targets, each of which then gets a connection of its own
// (ConnectPage, DialPage). For a browser framebus launched it is a session
// on the browser's pipe (Process.Connect), and so is each page's; for one
// someone else runs, a websocket to its DevTools port (ConnectBrowser),
// and each page its own websocket. A Browser is safe for concurrent use.
type Browser struct {
	conn   *rpcc.Conn
	client *cdp.Client
	wsURL  *url.URL       // the browser websocket; nil over a pipe
	pipe   *pipeTransport // nil over a websocket
	log    zerolog.Logger
	filter filterState
	// ownWindows: NewTarget gives each tab a window of its own (see
	// OwnWindows).
	ownWindows bool
}

// OwnWindows makes every tab NewTarget opens the only tab of a window of
// its own, for a browser framebus runs. A window shows one tab at a time:
// the others are hidden (document.visibilityState), and a hidden page
// never runs requestAnimationFrame and is not laid out or painted until
// something asks, so a page that draws in animation frames would stand
// still in every tab but the newest. A browser someone else runs keeps
// its tabs in its windows: new windows would open on their desktop.
func (b *Browser) OwnWindows() { b.ownWindows = true }

// TargetInfo describes a page target.
type TargetInfo struct {
	ID, Type, URL, Title string
	Attached             bool   // some client is attached to it
	OpenerID             string // the target that opened it (window.open), if any
}

// ConnectBrowser dials the browser websocket of a browser someone else
// runs with a DevTools port (see ResolveBrowserURL). ctx bounds the dial
// only.
func ConnectBrowser(ctx context.Context, wsURL string, logger zerolog.Logger) (*Browser, error) {
	u, err := url.Parse(wsURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, fmt.Errorf("connect to browser: %q is not a websocket URL; want ws://HOST:PORT/devtools/browser/ID", wsURL)
	}
	conn, err := rpcc.DialContext(ctx, wsURL, rpcc.WithWriteBufferSize(browserWriteBufferSize))
	if err != nil {
		return nil, fmt.Errorf("connect to browser %s: %w", wsURL, err)
	}
	return &Browser{conn: conn, client: cdp.NewClient(conn), wsURL: u, log: logger}, nil
}

// NewTarget opens a new page target (a tab) at url; "" means about:blank.
// After OwnWindows, in a window of its own.
func (b *Browser) NewTarget(ctx context.Context, url string) (targetID string, err error) {
	if url == "" {
		url = "about:blank"
	}
	args := target.NewCreateTargetArgs(url)
	if b.ownWindows {
		args.SetNewWindow(true)
	}
	reply, err := b.client.Target.CreateTarget(ctx, args)
	if err != nil {
		return "", b.wrap(ctx, "create target", err)
	}
	b.log.Debug().Str("target", string(reply.TargetID)).Str("url", url).Msg("target created")
	return string(reply.TargetID), nil
}

// CloseTarget closes a target (for a page: the tab).
func (b *Browser) CloseTarget(ctx context.Context, targetID string) error {
	if _, err := b.client.Target.CloseTarget(ctx, target.NewCloseTargetArgs(target.ID(targetID))); err != nil {
		return b.wrap(ctx, "close target "+targetID, err)
	}
	b.log.Debug().Str("target", targetID).Msg("target closed")
	return nil
}

// Targets lists the page targets (tabs); workers, iframes, the browser
// target and other kinds are left out.
func (b *Browser) Targets(ctx context.Context) ([]TargetInfo, error) {
	reply, err := b.client.Target.GetTargets(ctx, target.NewGetTargetsArgs())
	if err != nil {
		return nil, b.wrap(ctx, "list targets", err)
	}
	var out []TargetInfo
	for _, t := range reply.TargetInfos {
		if t.Type != "page" {
			continue
		}
		ti := TargetInfo{ID: string(t.TargetID), Type: t.Type, URL: t.URL, Title: t.Title, Attached: t.Attached}
		if t.OpenerID != nil {
			ti.OpenerID = string(*t.OpenerID)
		}
		out = append(out, ti)
	}
	return out, nil
}

// DialPage opens a connection of its own to a page target: a session on
// the pipe, or the page's websocket, ws://HOST:PORT/devtools/page/ID.
// opts are rpcc's (a codec); a websocket writes commands of up to 1 MiB.
// Closing the connection detaches from the page; the tab stays.
func (b *Browser) DialPage(ctx context.Context, targetID string, opts ...rpcc.DialOption) (*rpcc.Conn, error) {
	if b.pipe == nil {
		u := url.URL{Scheme: b.wsURL.Scheme, Host: b.wsURL.Host, Path: "/devtools/page/" + targetID}
		opts = append([]rpcc.DialOption{rpcc.WithWriteBufferSize(writeBufferSize)}, opts...)
		return rpcc.DialContext(ctx, u.String(), opts...)
	}
	session, err := b.pipe.attachPage(ctx, targetID)
	if err != nil {
		return nil, err
	}
	return dialPipe(ctx, session, opts...)
}

// dialPipe makes an rpcc connection of a pipe session.
func dialPipe(ctx context.Context, session *pipeConn, opts ...rpcc.DialOption) (*rpcc.Conn, error) {
	dial := rpcc.WithDialer(func(context.Context, string) (io.ReadWriteCloser, error) { return session, nil })
	conn, err := rpcc.DialContext(ctx, "pipe:"+session.sid, append(opts, dial)...)
	if err != nil {
		session.Close() // rpcc closed it, unless ctx ended first
	}
	return conn, err
}

// Version returns the browser's product string, e.g. "Chrome/156.0.8078.79"
// (Chromium's new headless mode no longer says "HeadlessChrome" here).
func (b *Browser) Version(ctx context.Context) (product string, err error) {
	reply, err := b.client.Browser.GetVersion(ctx)
	if err != nil {
		return "", b.wrap(ctx, "get version", err)
	}
	return reply.Product, nil
}

// DenyDownloads makes the browser refuse downloads: a link or a
// navigation to an attachment saves nothing (a navigation fails with
// net::ERR_ABORTED). Left alone, Chromium saves them in ~/Downloads,
// where no agent asked for them and nobody is told.
func (b *Browser) DenyDownloads(ctx context.Context) error {
	if err := b.client.Browser.SetDownloadBehavior(ctx, browser.NewSetDownloadBehaviorArgs("deny")); err != nil {
		return b.wrap(ctx, "deny downloads", err)
	}
	return nil
}

// Client is the underlying CDP client of the browser target.
func (b *Browser) Client() *cdp.Client { return b.client }

// Done is closed when the connection is lost (browser exited, Close called).
func (b *Browser) Done() <-chan struct{} { return b.conn.Context().Done() }

// Shutdown asks the browser to exit cleanly (Browser.close), which saves
// its profile: cookies, localStorage, session. The process exits soon
// after; Process.Close waits for it.
func (b *Browser) Shutdown(ctx context.Context) error {
	err := b.client.Browser.Close(ctx)
	if err == nil || b.conn.Context().Err() != nil {
		return nil // done, or the connection went with the browser
	}
	return b.wrap(ctx, "close browser", err)
}

// Close closes the connection only; the browser and its tabs keep running.
func (b *Browser) Close() error { return b.conn.Close() }

// wrap classifies the error of a browser command by the connection's own
// state: a lost connection is ErrConnectionLost, a passed deadline a
// *TimeoutError; the connection itself is never torn down by either.
func (b *Browser) wrap(ctx context.Context, op string, err error) error {
	if b.conn.Context().Err() != nil {
		return fmt.Errorf("browser: %s: %w", op, ErrConnectionLost)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{Op: "browser: " + op, After: deadlineOf(ctx)}
	}
	return fmt.Errorf("browser: %s: %w", op, err)
}
