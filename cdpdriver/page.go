package cdpdriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/input"
	"github.com/mafredri/cdp/protocol/network"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/protocol/target"
	"github.com/mafredri/cdp/rpcc"
	"github.com/rs/zerolog"
)

// writeBufferSize is the websocket write limit of a page connection. rpcc's
// default of 4 KiB rejects any longer command (a long script, a big value).
// A pipe session has no such limit, but keeps the same one (maxCommand),
// so a plan works the same in either.
const writeBufferSize = 1 << 20

// Page is one connection to one page target (see DialPage). Its methods are the page
// operations; its events (navigations, loads, dialogs, crashes) are queued
// in arrival order and drained with TakeEvents. A Page is meant to be used
// by one goroutine, the tab actor that owns it.
type Page struct {
	// frontWhenHidden: a screenshot brings the tab to the front when it
	// is hidden (see FrontWhenHidden).
	frontWhenHidden bool
	targetID        string
	conn            *rpcc.Conn
	client          *cdp.Client
	codec           *eventCodec
	events          *eventQueue
	decoder         *eventDecoder
	log             zerolog.Logger

	// doc caches the remote object of the current document for element
	// lookups; docGeneration says which document it belongs to.
	doc           runtime.RemoteObjectID
	docGeneration uint64
	// mainCtx is the page's own JavaScript context in that document
	// (0: not known).
	mainCtx runtime.ExecutionContextID
	// taken is the generation of the last main-frame document whose
	// commit TakeEvents handed out: the newest one its caller knows of.
	taken uint64
	// pin is 1 + the only document generation element functions may run
	// in (see PinDocument); 0 when none is pinned. Atomic: a test may
	// evaluate on the page beside its actor.
	pin atomic.Uint64
	// installed holds, per installed function, 1 + the document
	// generation it was last installed in (see callInstalled).
	installed map[string]uint64
	// trackedAfter: every document after this generation has the
	// activity tracker from its start (see TrackActivity); 0: none.
	trackedAfter uint64
	// restless is the document generation a settle ran out in (see
	// SettleActivity); 0: none.
	restless uint64
	// resultLimit is the longest value an action may return (see
	// SetResultLimit); 0: no limit.
	resultLimit int
	// contentLimit is the longest content Content reads (see
	// SetContentLimit); 0 for no limit.
	contentLimit int
	// nextRef is the number the next new document's refs start at: one
	// past the last ref this tab gave out, in any document, so no ref is
	// ever given to two elements.
	nextRef int

	dialogs dialogState
	crash   crashState
	pointer pointer // where the mouse is (see Click)
	// personButtons are the mouse buttons a person holds down (DOM
	// buttons bits), personPressed the last pressed (see PersonMouse).
	personButtons int
	personPressed input.MouseButton
	// emulation is what Emulate last set (zero: the window's own);
	// emulated says Close must clear it (set by Emulate, read by Close
	// from any goroutine).
	emulation Emulation
	emulated  atomic.Bool
}

// ConnectPage connects to a page target of the browser (a connection of
// its own, see DialPage) and enables the events the tab actor needs.
func (b *Browser) ConnectPage(ctx context.Context, targetID string, log zerolog.Logger) (*Page, error) {
	q := newEventQueue()
	dec := &eventDecoder{targetID: targetID, mainFrameID: targetID, net: newNetTracker(), requests: newRequestLog()}
	var codec *eventCodec
	conn, err := b.DialPage(ctx, targetID,
		rpcc.WithCodec(func(rw io.ReadWriter) rpcc.Codec {
			codec = newEventCodec(rw, q, dec.decode)
			codec.refused = func(err *rpcc.ResponseError) {
				log.Warn().Str("error", err.Error()).Msg("browser refused a command it could not read")
			}
			return codec
		}))
	if err != nil {
		return nil, fmt.Errorf("connect to page %s: %w", targetID, err)
	}
	p := &Page{targetID: targetID, conn: conn, client: cdp.NewClient(conn), codec: codec, events: q, decoder: dec, log: log}
	p.dialogs.init()
	p.crash.init()
	q.dialog = p.dialogEvent
	q.crash = p.crash.crash
	dec.newDocument = func(frameID string) {
		p.crash.newDocument()
		p.prepareWorld(frameID)
	}
	if err := p.enable(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("enable page %s: %w", targetID, err)
	}
	return p, nil
}

func (p *Page) enable(ctx context.Context) error {
	c := p.client
	if err := c.Page.Enable(ctx); err != nil {
		return err
	}
	if err := c.Page.SetLifecycleEventsEnabled(ctx, page.NewSetLifecycleEventsEnabledArgs(true)); err != nil {
		return err
	}
	if err := c.Network.Enable(ctx, network.NewEnableArgs()); err != nil {
		return err
	}
	if err := c.Inspector.Enable(ctx); err != nil {
		return err
	}
	// Title changes reach us as Target.targetInfoChanged for our own target.
	return c.Target.SetDiscoverTargets(ctx, target.NewSetDiscoverTargetsArgs(true))
}

// FrontWhenHidden makes a screenshot of the tab, when it is hidden behind
// another tab of its window, bring it to the front first: for a browser
// framebus runs, never for someone's own, whose window it would change.
func (p *Page) FrontWhenHidden() { p.frontWhenHidden = true }

// Document names the main frame's current document: a number that
// changes with every document the page commits (a navigation, a reload),
// as its events arrive, so a value read before and after a call says
// whether the call ran in one document.
func (p *Page) Document() uint64 { return p.decoder.generation.Load() }

// TargetID is the page's CDP target id.
func (p *Page) TargetID() string { return p.targetID }

// Notify is signalled (coalesced) when events are waiting in TakeEvents.
func (p *Page) Notify() <-chan struct{} { return p.events.notify }

// TakeEvents returns every event received so far, oldest first. Any event
// the browser sent before the reply of a command that has returned is
// included.
func (p *Page) TakeEvents() []Event {
	evs := p.events.take()
	for _, ev := range evs {
		if nav, ok := ev.(FrameNavigated); ok && nav.Main {
			p.taken = nav.generation
		}
	}
	return evs
}

// Done is closed when the connection is lost.
func (p *Page) Done() <-chan struct{} { return p.conn.Context().Done() }

// Close closes the connection (not the tab). An emulation it set is
// cleared first: the page gets its window's own size, touch and user
// agent back, as an attached browser's user had them. (Chromium 148
// keeps a session's device metrics after the session detaches; earlier
// ones dropped them with it.)
func (p *Page) Close() error {
	if p.emulated.Load() && !p.lost() {
		ctx, cancel := context.WithTimeout(context.Background(), clearEmulationWait)
		p.clearEmulation(ctx)
		cancel()
	}
	return p.conn.Close()
}

// clearEmulationWait bounds Close's clearing of an emulation (a page
// that does not answer is left as it is).
const clearEmulationWait = 500 * time.Millisecond

// lost reports whether the connection is gone.
func (p *Page) lost() bool { return p.conn.Context().Err() != nil }

// wrap turns the error of a CDP call into the driver's error types: a lost
// connection becomes ErrConnectionLost, a passed deadline a TimeoutError.
func (p *Page) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if tooLarge, ok := replyTooLong(err, op); ok {
		return tooLarge
	}
	// A call cut off while the connection closes (the tab was closed)
	// can end before the connection says it is lost.
	if p.lost() || errors.Is(err, rpcc.ErrConnClosing) {
		return fmt.Errorf("%s: %w", op, ErrConnectionLost)
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrDialogOpened) || errors.Is(cause, ErrPageCrashed) {
		return fmt.Errorf("%s: %w", op, cause)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{Op: op, After: deadlineOf(ctx)}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Location returns the document's URL and title. It is one renderer round
// trip, so it also works as a barrier: navigation requests the page made
// before it are reported (as events) before it returns.
func (p *Page) Location(ctx context.Context) (url, title string, err error) {
	var v [2]string
	if err := p.evalValue(ctx, "location", `[location.href, document.title]`, &v); err != nil {
		return "", "", err
	}
	return v[0], v[1], nil
}

// BrowserLocation is where the browser process says the page is: its URL
// and title, read without a renderer round trip, which just after a load
// waits behind the renderer's layout and paint. The browser has the title
// the document parsed before its load event; a page without one gets its
// URL (see Chromium's tab title).
func (p *Page) BrowserLocation(ctx context.Context) (Location, error) {
	reply, err := p.client.Target.GetTargetInfo(ctx, target.NewGetTargetInfoArgs())
	if err != nil {
		return Location{}, p.wrap(ctx, "target info", err)
	}
	return Location{URL: reply.TargetInfo.URL, Title: reply.TargetInfo.Title}, nil
}

// Location is where the page is, as one renderer round trip saw it: the
// document's URL and title. An action whose last call answers it needs no
// barrier after it (see Type).
type Location struct{ URL, Title string }

// locationReply is an element function's answer that may carry the
// page's location.
type locationReply struct {
	elementReply
	URL   *string `json:"url"`
	Title string  `json:"title"`
}

// location is the answer's Location, nil when it has none.
func (r *locationReply) location() *Location {
	if r.URL == nil {
		return nil
	}
	return &Location{URL: *r.URL, Title: r.Title}
}

// StopLoading cancels a pending navigation.
func (p *Page) StopLoading(ctx context.Context) error {
	return p.wrap(ctx, "stop loading", p.client.Page.StopLoading(ctx))
}

// evalValue evaluates a framebus-internal expression and decodes its value.
func (p *Page) evalValue(ctx context.Context, op, expr string, out any) error {
	reply, err := p.client.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(expr).SetReturnByValue(true))
	if err != nil {
		return p.wrap(ctx, op, err)
	}
	if reply.ExceptionDetails != nil {
		return fmt.Errorf("%s: %w", op, exceptionError(reply.ExceptionDetails))
	}
	if err := json.Unmarshal(reply.Result.Value, out); err != nil {
		return fmt.Errorf("%s: unexpected value %s: %w", op, reply.Result.Value, err)
	}
	return nil
}

// deadlineOf is how long ctx had in total, for messages; zero when unknown.
func deadlineOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(timeoutKey{}).(time.Duration); ok {
		return d
	}
	return 0
}

type timeoutKey struct{}

// WithTimeout is context.WithTimeout that remembers d, so a TimeoutError
// can say "after 2s". A ctx that already has this timeout, set no later,
// is returned as it is (an action's deadline passed on to the driver call
// that makes it): one timer per action is enough.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if had, ok := ctx.Value(timeoutKey{}).(time.Duration); ok && had == d {
		if dl, ok := ctx.Deadline(); ok && !dl.After(time.Now().Add(d)) {
			return ctx, func() {}
		}
	}
	return context.WithTimeout(context.WithValue(ctx, timeoutKey{}, d), d)
}

// WithDeadline is WithTimeout for a timeout d that started earlier and
// ends at deadline.
func WithDeadline(ctx context.Context, deadline time.Time, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithDeadline(context.WithValue(ctx, timeoutKey{}, d), deadline)
}
