package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/cdpdriver"
)

// Browser owns one Chromium process and its browser-level connection, and
// opens page targets in it; or, attached, only the connection to a browser
// someone else runs.
type Browser struct {
	proc     *cdpdriver.Process // nil when attached
	conn     *cdpdriver.Browser
	endpoint string // the browser websocket when attached; a launched browser has none
	log      zerolog.Logger
}

// StartBrowser launches Chromium and connects to it.
func StartBrowser(ctx context.Context, opts cdpdriver.LaunchOptions, log zerolog.Logger) (*Browser, error) {
	opts.Logger = log
	proc, err := cdpdriver.Launch(ctx, opts)
	if err != nil {
		return nil, err
	}
	conn, err := proc.Connect(ctx, log)
	if err == nil {
		// A browser framebus runs takes no downloads; one it attaches to
		// is its user's, and keeps its own settings.
		if err = conn.DenyDownloads(ctx); err != nil {
			conn.Close()
		}
	}
	if err != nil {
		proc.Close()
		return nil, err
	}
	conn.OwnWindows()
	return &Browser{proc: proc, conn: conn, log: log}, nil
}

// AttachBrowser connects to a browser already running, by its DevTools
// URL (see cdpdriver.ResolveBrowserURL). Closing it only disconnects.
func AttachBrowser(ctx context.Context, devtools string, log zerolog.Logger) (*Browser, error) {
	ws, err := cdpdriver.ResolveBrowserURL(ctx, devtools)
	if err != nil {
		return nil, err
	}
	conn, err := cdpdriver.ConnectBrowser(ctx, ws, log)
	if err != nil {
		return nil, err
	}
	return &Browser{conn: conn, endpoint: ws, log: log}, nil
}

// Pages lists the browser's page targets (the tabs already open).
func (b *Browser) Pages(ctx context.Context) ([]cdpdriver.TargetInfo, error) {
	return b.conn.Targets(ctx)
}

// NewTarget opens a tab at url without connecting to it.
func (b *Browser) NewTarget(ctx context.Context, url string) (string, error) {
	id, err := b.conn.NewTarget(ctx, url)
	if err != nil {
		return "", fmt.Errorf("open tab: %w", err)
	}
	return id, nil
}

// CloseTarget closes a tab by id.
func (b *Browser) CloseTarget(ctx context.Context, id string) error {
	return b.conn.CloseTarget(ctx, id)
}

// OpenPage opens a new tab at url and connects to it.
func (b *Browser) OpenPage(ctx context.Context, url string) (*cdpdriver.Page, error) {
	id, err := b.conn.NewTarget(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open tab: %w", err)
	}
	p, err := b.conn.ConnectPage(ctx, id, b.log)
	if err != nil {
		_ = b.conn.CloseTarget(ctx, id)
		return nil, err
	}
	b.watch(p)
	return p, nil
}

// AttachPage connects to a tab that already exists (one a page opened).
func (b *Browser) AttachPage(ctx context.Context, id string) (*cdpdriver.Page, error) {
	p, err := b.conn.ConnectPage(ctx, id, b.log)
	if err != nil {
		return nil, err
	}
	b.watch(p)
	return p, nil
}

// watch has the browser watch a page it connected to; in a browser
// framebus runs, a screenshot brings a hidden tab to the front.
func (b *Browser) watch(p *cdpdriver.Page) {
	if b.proc != nil {
		p.FrontWhenHidden()
	}
	b.conn.Watch(p)
}

// WatchOpened reports the tabs pages open, and with all every tab that
// appears (see cdpdriver.WatchOpened).
func (b *Browser) WatchOpened(ctx context.Context, all bool) (<-chan cdpdriver.PageOpened, error) {
	return b.conn.WatchOpened(ctx, all)
}

// ClosePage closes a tab.
func (b *Browser) ClosePage(ctx context.Context, p *cdpdriver.Page) error {
	b.conn.Unwatch(p)
	p.Close()
	return b.conn.CloseTarget(ctx, p.TargetID())
}

// FilterRequests makes every request of every tab pass filter, in the
// browser's network layer (see cdpdriver.FilterRequests).
func (b *Browser) FilterRequests(ctx context.Context, filter cdpdriver.RequestFilter) error {
	return b.conn.FilterRequests(ctx, filter)
}

// Process is the Chromium process; nil when attached.
func (b *Browser) Process() *cdpdriver.Process { return b.proc }

// Endpoint is the DevTools websocket of a browser attached to; "" for
// one framebus launched, which has no DevTools port (its pipe is this
// process's alone).
func (b *Browser) Endpoint() string { return b.endpoint }

// Gone is closed when the browser is gone for this node: its process
// exited, or (attached) the connection to it was lost.
func (b *Browser) Gone() <-chan struct{} {
	if b.proc == nil {
		return b.conn.Done()
	}
	return b.proc.Done()
}

// shutdownGrace bounds a clean exit before the process is stopped.
const shutdownGrace = 5 * time.Second

// Close stops Chromium, cleanly first so a persistent profile keeps its
// state (cookies, localStorage), then by signal if it lingers; a
// temporary profile is removed. An attached browser is only disconnected:
// it and its tabs keep running.
func (b *Browser) Close() error {
	if b.proc == nil {
		return b.conn.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := b.conn.Shutdown(ctx); err == nil {
		select {
		case <-b.proc.Done():
		case <-ctx.Done():
			b.log.Warn().Msg("chromium did not exit after Browser.close; stopping it")
		}
	}
	b.conn.Close()
	return b.proc.Close()
}

// Cookies are the cookies the browser holds (its default context).
func (b *Browser) Cookies(ctx context.Context) ([]cdpdriver.Cookie, error) {
	return b.conn.Cookies(ctx)
}
