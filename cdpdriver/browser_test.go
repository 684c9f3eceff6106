package cdpdriver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/browser"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/protocol/target"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/internal/testscale"
)

// browserTestConnect connects to the shared browser; the connection is
// closed when the test ends.
func browserTestConnect(t *testing.T) *Browser {
	t.Helper()
	p := launchTestBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	b, err := p.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func browserTestCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
	t.Cleanup(cancel)
	return ctx
}

func browserTestFind(targets []TargetInfo, id string) (TargetInfo, bool) {
	for _, ti := range targets {
		if ti.ID == id {
			return ti, true
		}
	}
	return TargetInfo{}, false
}

func TestBrowserTargets(t *testing.T) {
	t.Parallel()
	b := browserTestConnect(t)
	ctx := browserTestCtx(t)

	blank, err := b.NewTarget(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	titled, err := b.NewTarget(ctx, "data:text/html,<title>framebus</title>hello")
	if err != nil {
		t.Fatal(err)
	}
	if blank == "" || blank == titled {
		t.Fatalf("target ids %q, %q", blank, titled)
	}

	launchTestWaitFor(t, 10*time.Second, "both targets listed with their URL and title", func() error {
		targets, err := b.Targets(ctx)
		if err != nil {
			return err
		}
		for _, ti := range targets {
			if ti.Type != "page" {
				return fmt.Errorf("non-page target listed: %+v", ti)
			}
		}
		ti, ok := browserTestFind(targets, blank)
		if !ok || ti.URL != "about:blank" {
			return fmt.Errorf("blank target %s: %+v in %+v", blank, ti, targets)
		}
		ti, ok = browserTestFind(targets, titled)
		if !ok || ti.Title != "framebus" {
			return fmt.Errorf("titled target %s: %+v", titled, ti)
		}
		return nil
	})

	for _, id := range []string{blank, titled} {
		if err := b.CloseTarget(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	launchTestWaitFor(t, 10*time.Second, "closed targets no longer listed", func() error {
		targets, err := b.Targets(ctx)
		if err != nil {
			return err
		}
		for _, id := range []string{blank, titled} {
			if ti, ok := browserTestFind(targets, id); ok {
				return fmt.Errorf("still listed: %+v", ti)
			}
		}
		return nil
	})

	if err := b.CloseTarget(ctx, blank); err == nil {
		t.Error("closing a closed target succeeded; want an error")
	} else if errors.Is(err, ErrConnectionLost) {
		t.Errorf("closing a closed target reported a lost connection: %v", err)
	}
}

// DialPage gives a connection of its own to a page: a session on the
// pipe of a browser framebus launched, the page's websocket on one
// reached by its DevTools port.
func TestBrowserDialPage(t *testing.T) {
	t.Parallel()
	ctx := browserTestCtx(t)
	ported, err := Launch(context.Background(), LaunchOptions{Headless: true, DebuggingPort: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ported.Close()
	overWS, err := ConnectBrowser(ctx, ported.BrowserWebSocketURL(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer overWS.Close()
	for name, b := range map[string]*Browser{"pipe": browserTestConnect(t), "websocket": overWS} {
		id, err := b.NewTarget(ctx, "about:blank")
		if err != nil {
			t.Fatal(err)
		}
		defer b.CloseTarget(ctx, id)
		conn, err := b.DialPage(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer conn.Close()
		reply, err := cdp.NewClient(conn).Runtime.Evaluate(ctx, runtime.NewEvaluateArgs("6*7").SetReturnByValue(true))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(reply.Result.Value) != "42" {
			t.Errorf("%s: 6*7 = %s over the page connection", name, reply.Result.Value)
		}
		info, err := cdp.NewClient(conn).Target.GetTargetInfo(ctx, target.NewGetTargetInfoArgs())
		if err != nil || string(info.TargetInfo.TargetID) != id {
			t.Errorf("%s: the connection is to %v (%v); want target %s", name, info, err, id)
		}
	}
}

func TestBrowserVersion(t *testing.T) {
	t.Parallel()
	b := browserTestConnect(t)
	product, err := b.Version(browserTestCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(product, "Chrome/") {
		t.Errorf("Version() = %q; want Chrome/<version> or HeadlessChrome/<version>", product)
	}
	if b.Client() == nil {
		t.Error("Client() is nil")
	}
}

// TestBrowserTimeout: a request that passes its deadline is a TimeoutError
// and leaves the connection usable.
func TestBrowserTimeout(t *testing.T) {
	t.Parallel()
	b := browserTestConnect(t)
	expired, cancel := WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-expired.Done()
	_, err := b.Targets(expired)
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("Targets with an expired context: %v; want a *TimeoutError", err)
	}
	select {
	case <-b.Done():
		t.Fatal("a timeout closed the connection")
	default:
	}
	if _, err := b.Version(browserTestCtx(t)); err != nil {
		t.Fatalf("connection unusable after a timeout: %v", err)
	}
}

func TestBrowserConnectErrors(t *testing.T) {
	t.Parallel()
	ctx := browserTestCtx(t)
	for _, ws := range []string{"", "http://127.0.0.1:1/devtools/browser/x", "not a url", "ws:///devtools/browser/x"} {
		if b, err := ConnectBrowser(ctx, ws, zerolog.Nop()); err == nil {
			b.Close()
			t.Errorf("ConnectBrowser(%q) succeeded", ws)
		} else if !strings.Contains(err.Error(), "ws://HOST:PORT/devtools/browser/ID") {
			t.Errorf("ConnectBrowser(%q): %v; want it to say what a right URL looks like", ws, err)
		}
	}
	// Nothing listens on port 1.
	if b, err := ConnectBrowser(ctx, "ws://127.0.0.1:1/devtools/browser/x", zerolog.Nop()); err == nil {
		b.Close()
		t.Error("ConnectBrowser to a closed port succeeded")
	}
}

// TestBrowserDone: Done closes when the browser goes away, and commands
// then fail with ErrConnectionLost; Close closes Done too.
func TestBrowserDone(t *testing.T) {
	launchTestNeedChromium(t)
	p, err := Launch(context.Background(), LaunchOptions{Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := browserTestCtx(t)
	b, err := p.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b2, err := p.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b2.Done():
	default:
		t.Error("Done() not closed after Close")
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	case <-ctx.Done():
		t.Fatal("Done() not closed after the browser exited")
	}
	if _, err := b.NewTarget(ctx, ""); !errors.Is(err, ErrConnectionLost) {
		t.Errorf("NewTarget on a lost connection: %v; want ErrConnectionLost", err)
	}
}

// After OwnWindows, every tab NewTarget opens is shown: a window of its
// own, so a tab opened after it does not hide it. A hidden page never runs
// requestAnimationFrame (so a page that draws in animation frames stands
// still) and is not laid out until asked. The windows take the size the
// browser was launched with (LaunchOptions.WindowWidth/Height).
func TestBrowserTabsAreShown(t *testing.T) {
	t.Parallel()
	proc, err := Launch(context.Background(), LaunchOptions{Headless: true, WindowWidth: 1000, WindowHeight: 700})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Close() })
	ctx := browserTestCtx(t)
	b, err := proc.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	b.OwnWindows()
	var pages []*Page
	for range 3 {
		id, err := b.NewTarget(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		p, err := b.ConnectPage(ctx, id, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		pages = append(pages, p)
	}
	// The oldest tab first: the one a tab opened in the same window
	// would hide.
	const shownJS = `new Promise(done => {
		requestAnimationFrame(() => done(document.visibilityState + " " + innerWidth + " animation frame ran"));
		setTimeout(() => done(document.visibilityState + " " + innerWidth + " no animation frame in 2s"), 2000);
	})`
	for i, p := range pages {
		v, err := p.Eval(ctx, shownJS, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(v), `"visible 1000 animation frame ran"`; got != want {
			t.Errorf("tab %d of 3: %s, want %s", i+1, got, want)
		}
	}
	windows := map[browser.WindowID]bool{}
	for i, p := range pages {
		w, err := b.client.Browser.GetWindowForTarget(ctx, browser.NewGetWindowForTargetArgs().SetTargetID(target.ID(p.TargetID())))
		if err != nil {
			t.Fatal(err)
		}
		windows[w.WindowID] = true
		if got := fmt.Sprintf("%dx%d", deref(w.Bounds.Width), deref(w.Bounds.Height)); got != "1000x700" {
			t.Errorf("tab %d's window is %s, want 1000x700", i+1, got)
		}
	}
	if len(windows) != len(pages) {
		t.Errorf("%d tabs in %d windows, want a window each", len(pages), len(windows))
	}
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
