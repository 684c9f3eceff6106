// Package cdpdriver finds and launches Chromium and does every page
// operation framebus needs, as typed Go methods over the Chrome DevTools
// Protocol (github.com/mafredri/cdp, pinned at v0.35.0).
//
// It knows nothing of NATS, plans or frame sequences: the tab actor in
// package actors drives it.
//
//	proc, err := cdpdriver.Launch(ctx, cdpdriver.LaunchOptions{Headless: true})
//	defer proc.Close() // stops Chromium, removes the temporary profile
//	b, err := proc.Connect(ctx, log) // over the browser's pipe
//	id, err := b.NewTarget(ctx, "about:blank")
//	page, err := b.ConnectPage(ctx, id, log)
//	res, err := page.Navigate(ctx, "http://127.0.0.1:8080/")
//	err = page.Click(ctx, "#buy")
//	v, err := page.Eval(ctx, "document.title", 30*time.Second)
//
// A browser framebus launches has no DevTools port: it speaks CDP on a
// pipe (--remote-debugging-pipe) that only this process holds, and the
// pipe is split into one connection per page by flat session (pipe.go).
// A browser someone else runs (ConnectBrowser, by its DevTools URL) gives
// each page its own websocket instead. Either way each page has an
// rpcc.Conn of its own, owned by one tab actor.
// Its events are taken off the wire by the connection's codec, in order,
// before the reply of any later command is delivered; TakeEvents therefore
// returns exactly "everything Chromium said so far", which is what makes
// the tab actor's check-and-act atomic.
//
// Errors are typed (NavigationError, ElementNotFoundError, JSError,
// TimeoutError, ...) so callers decide with errors.As; a lost connection is
// ErrConnectionLost, decided from the connection's state. JavaScript is
// never built by formatting arguments into source: element lookups use
// Runtime.callFunctionOn with the selector as an argument.
package cdpdriver
