package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
)

// Frames as resources: framebus://tabs lists the tabs,
// framebus://tabs/{tab}/frames/latest is a tab's current frame (a client
// may subscribe to it: notifications/resources/updated on each new
// frame), framebus://tabs/{tab}/frames/{sequence} one frame.
const (
	tabsURI        = "framebus://tabs"
	framesURIStart = "framebus://tabs/"
	latest         = "latest"
)

// LatestFrameURI is the resource of tab's current frame.
func LatestFrameURI(tab string) string { return FrameURI(tab, latest) }

// FrameURI is the resource of one of tab's frames ("latest" or a
// sequence).
func FrameURI(tab, frame string) string { return framesURIStart + tab + "/frames/" + frame }

// parseFrameURI splits a frame resource's URI.
func parseFrameURI(uri string) (tab, frame string, ok bool) {
	rest, found := strings.CutPrefix(uri, framesURIStart)
	if !found {
		return "", "", false
	}
	tab, frame, found = strings.Cut(rest, "/frames/")
	if !found || !protocol.ValidTabID(tab) {
		return "", "", false
	}
	if frame != latest {
		if n, err := strconv.ParseInt(frame, 10, 64); err != nil || n < 1 {
			return "", "", false
		}
	}
	return tab, frame, true
}

func (s *Server) addFrameResources() {
	s.mcp.AddResource(&mcp.Resource{URI: tabsURI, Name: "tabs", MIMEType: "application/json",
		Description: "the tabs on the bus: id, URL, title, current frame sequence, node, profile"}, s.readTabs)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: framesURIStart + "{tab}/frames/latest", Name: "latest-frame",
		MIMEType:    "application/json",
		Description: "a tab's current frame (URL, title, the action that made it, and its page when the URL changed); subscribe to hear of every new frame"}, s.readFrame)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: framesURIStart + "{tab}/frames/{sequence}", Name: "frame",
		MIMEType: "application/json", Description: "one frame of a tab, by its sequence, from the bus's frame history"}, s.readFrame)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: framesURIStart + "{tab}/snapshots/{frame}/{hash}", Name: "snapshot",
		MIMEType: "text/plain", Description: "a page snapshot a tab keeps (the last 16 of its document), by its id 12#1a2b3c4d as /snapshots/12/1a2b3c4d: a result too long to show points here"}, s.readSnapshot)
}

func (s *Server) readTabs(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	list, err := s.bc.Tabs(ctx)
	if err != nil {
		return nil, resourceError(noNode(err))
	}
	return jsonResource(req.Params.URI, list)
}

// readFrameTimeout bounds reading a frame for a resource.
const readFrameTimeout = 10 * time.Second

func (s *Server) readFrame(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	tab, frame, ok := parseFrameURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	ctx, cancel := context.WithTimeout(ctx, readFrameTimeout)
	defer cancel()
	var f *busclient.Frame
	if frame == latest {
		f = s.latestFrame(ctx, tab)
	} else {
		seq, _ := strconv.ParseInt(frame, 10, 64)
		f = s.storedFrame(ctx, tab, seq)
	}
	if f == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(f.Data)}}}, nil
}

// latestFrame is tab's current frame: the last one its watch saw, else
// the history's; nil when neither has one.
func (s *Server) latestFrame(ctx context.Context, tab string) *busclient.Frame {
	s.mu.Lock()
	w := s.watches[tab]
	s.mu.Unlock()
	if w != nil && !w.ended() {
		if f := w.last(); f != nil {
			return f
		}
	}
	f, err := s.bc.Current(ctx, tab)
	if err != nil {
		return nil
	}
	return &f
}

// storedFrame is one of tab's frames from its watch or the history.
func (s *Server) storedFrame(ctx context.Context, tab string, seq int64) *busclient.Frame {
	s.mu.Lock()
	w := s.watches[tab]
	s.mu.Unlock()
	if w != nil {
		if f := w.frame(seq); f != nil {
			return f
		}
	}
	var found *busclient.Frame
	err := s.bc.Frames(ctx, tab, seq, seq, func(f busclient.Frame) error {
		if f.Sequence == seq {
			found = &f
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return found
}

// resourceError is a framebus error as a JSON-RPC one: its code in the
// message (a request about resources has no tool result to carry it).
func resourceError(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: string(protocol.CodeOf(err)) + ": " + capMessage(err.Error())}
}

func jsonResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}

// subscribe follows the tab of a latest-frame resource, so its
// subscribers hear of each new frame. Only latest changes: a frame, once
// made, never does.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	tab, frame, ok := parseFrameURI(req.Params.URI)
	if !ok {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	if frame != latest {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("%s: a frame never changes; subscribe to the tab's latest frame (%s)", capMessage(req.Params.URI), LatestFrameURI(tab))}
	}
	// A tab no node lists is not followed: made-up ids would keep real
	// tabs' watches out.
	if _, err := s.findTab(ctx, tab); err != nil {
		if protocol.CodeOf(err) == protocol.CodeTabNotFound {
			return mcp.ResourceNotFoundError(req.Params.URI)
		}
		return resourceError(err)
	}
	if _, err := s.watch(ctx, tab); err != nil {
		return resourceError(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[tab] == nil {
		s.subs[tab] = map[*mcp.ServerSession]bool{}
	}
	s.subs[tab][req.Session] = true
	return nil
}

// unsubscribe forgets a session's subscription to a tab's latest frame.
func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if tab, frame, ok := parseFrameURI(req.Params.URI); ok && frame == latest {
		s.mu.Lock()
		delete(s.subs[tab], req.Session)
		s.mu.Unlock()
	}
	return nil
}

// subscribed says whether a live session subscribes to tab's latest
// frame. A session that ended is dropped from the subscriptions here:
// the SDK forgets its subscriptions without unsubscribing. Called with
// s.mu held.
func (s *Server) subscribed(tab string, live map[*mcp.ServerSession]bool) bool {
	for ss := range s.subs[tab] {
		if !live[ss] {
			delete(s.subs[tab], ss)
		}
	}
	return len(s.subs[tab]) > 0
}

// maxWatches bounds the tabs followed that nobody subscribes to; past it
// the one of them followed longest is let go (it is followed again when
// next used). Tabs subscribed to are followed as long as they are: they
// are tabs the nodes listed.
const maxWatches = 256

// watchStart bounds starting to follow a tab (a subscription and a read
// of the history's bounds): the bus may be reconnecting.
const watchStart = 10 * time.Second

// watch is tab's watch, started when the tab is first used.
func (s *Server) watch(ctx context.Context, tab string) (*tabWatch, error) {
	s.mu.Lock()
	if w := s.watches[tab]; w != nil && !w.ended() {
		s.mu.Unlock()
		return w, nil
	}
	s.mu.Unlock()
	w, cancel, err := s.startWatch(ctx, tab)
	if err != nil {
		return nil, err
	}
	tw := &tabWatch{tab: tab, w: w, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{}), started: time.Now()}
	go tw.follow(func() {
		s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: LatestFrameURI(tab)})
	})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		tw.stop()
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the MCP server is closing")
	}
	if old := s.watches[tab]; old != nil && !old.ended() {
		s.mu.Unlock()
		tw.stop() // another call started one meanwhile
		return old, nil
	}
	s.watches[tab] = tw
	out := s.spareWatch()
	if out != nil {
		delete(s.watches, out.tab)
	}
	s.mu.Unlock()
	if out != nil {
		go out.stop()
	}
	return tw, nil
}

// startWatch starts following tab's frames, within ctx and watchStart:
// the watch itself lives until stopped (cancel).
func (s *Server) startWatch(ctx context.Context, tab string) (*busclient.Watcher, context.CancelFunc, error) {
	wctx, cancel := context.WithCancel(context.Background())
	type started struct {
		w   *busclient.Watcher
		err error
	}
	done := make(chan started, 1)
	go func() {
		// Followed while used or subscribed: through its node's restart
		// or freeze too (the watch ends only with the tab).
		w, err := s.bc.Watch(wctx, tab, busclient.FromNext, busclient.KeepWaiting())
		done <- started{w, err}
	}()
	limit := time.NewTimer(watchStart)
	defer limit.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			cancel()
			return nil, nil, r.err
		}
		return r.w, cancel, nil
	case <-ctx.Done():
	case <-limit.C:
	}
	cancel() // the watch's start ends with it
	return nil, nil, protocol.Errorf(protocol.CodeUnavailable, "following tab %s's frames did not start within %s: is the bus reachable?", tab, watchStart)
}

// spareWatch is the watch to let go when more tabs nobody subscribes to
// are followed than maxWatches: the one followed longest; nil for none.
// Called with s.mu held.
func (s *Server) spareWatch() *tabWatch {
	live := map[*mcp.ServerSession]bool{}
	for ss := range s.mcp.Sessions() {
		live[ss] = true
	}
	var out *tabWatch
	spare := 0
	for tab, w := range s.watches {
		if s.subscribed(tab, live) {
			continue
		}
		spare++
		if out == nil || w.started.Before(out.started) {
			out = w
		}
	}
	if spare <= maxWatches {
		return nil
	}
	return out
}

// forget stops following tab (it was closed).
func (s *Server) forget(tab string) {
	s.mu.Lock()
	w := s.watches[tab]
	delete(s.watches, tab)
	s.mu.Unlock()
	if w != nil {
		w.stop()
	}
}

// keptFrames and keptFrameBytes bound the latest frames of a tab a watch
// keeps, for the frames results name (a busy tab makes a frame every few
// milliseconds while a result's page is read), and their size: frames
// carry pages.
const (
	keptFrames     = 256
	keptFrameBytes = 8 << 20
)

// tabWatch follows one tab's frames and keeps the latest few.
type tabWatch struct {
	tab     string
	w       *busclient.Watcher
	cancel  context.CancelFunc
	done    chan struct{}
	started time.Time

	mu      sync.Mutex
	frames  []busclient.Frame // the latest, oldest first
	bytes   int               // their messages' size
	changed chan struct{}     // closed and replaced on each frame
}

func (tw *tabWatch) follow(updated func()) {
	defer close(tw.done)
	for f := range tw.w.Frames() {
		tw.mu.Lock()
		tw.frames = append(tw.frames, f)
		tw.bytes += len(f.Data)
		drop := 0
		for len(tw.frames)-drop > 1 && (len(tw.frames)-drop > keptFrames || tw.bytes > keptFrameBytes) {
			tw.bytes -= len(tw.frames[drop].Data)
			drop++
		}
		// Dropped from the front: the array is copied only when append
		// outgrows it (a copy of up to keptFrames frames on every frame
		// cost an MCP call a fifth of its time in the GC).
		clear(tw.frames[:drop])
		tw.frames = tw.frames[drop:]
		close(tw.changed)
		tw.changed = make(chan struct{})
		tw.mu.Unlock()
		updated()
	}
}

func (tw *tabWatch) stop() {
	tw.cancel()
	tw.w.Stop()
	<-tw.done
}

func (tw *tabWatch) ended() bool {
	select {
	case <-tw.done:
		return true
	default:
		return false
	}
}

// lastSeen is the newest frame the watch saw, nil for none (or no
// watch).
func (tw *tabWatch) lastSeen() *busclient.Frame {
	if tw == nil {
		return nil
	}
	return tw.last()
}

func (tw *tabWatch) last() *busclient.Frame {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if len(tw.frames) == 0 {
		return nil
	}
	f := tw.frames[len(tw.frames)-1]
	return &f
}

func (tw *tabWatch) frame(seq int64) *busclient.Frame {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	for i := range tw.frames {
		if tw.frames[i].Sequence == seq {
			f := tw.frames[i]
			return &f
		}
	}
	return nil
}

// errFrameNotSeen: the watch did not see the frame in time.
var errFrameNotSeen = errors.New("frame not seen")

// await is frame seq once the watch has it, within ctx.
func (tw *tabWatch) await(ctx context.Context, seq int64) (*busclient.Frame, error) {
	for {
		tw.mu.Lock()
		changed := tw.changed
		var found *busclient.Frame
		newest := int64(0)
		for i := range tw.frames {
			newest = max(newest, tw.frames[i].Sequence)
			if tw.frames[i].Sequence == seq {
				f := tw.frames[i]
				found = &f
			}
		}
		tw.mu.Unlock()
		switch {
		case found != nil:
			return found, nil
		case newest > seq:
			return nil, errFrameNotSeen // gone past it (dropped from the few kept)
		}
		select {
		case <-changed:
		case <-tw.done:
			return nil, errFrameNotSeen
		case <-ctx.Done():
			return nil, errFrameNotSeen
		}
	}
}

// SnapshotURI is the resource of a snapshot a tab keeps, by its id
// (12#1a2b3c4d: framebus://tabs/T/snapshots/12/1a2b3c4d): a result that
// shows less than the whole page points there.
func SnapshotURI(tab, id string) string {
	return framesURIStart + tab + "/snapshots/" + strings.Replace(id, "#", "/", 1)
}

// parseSnapshotURI splits a snapshot resource's URI.
func parseSnapshotURI(uri string) (tab string, id protocol.SnapshotID, ok bool) {
	rest, found := strings.CutPrefix(uri, framesURIStart)
	if !found {
		return "", id, false
	}
	tab, rest, found = strings.Cut(rest, "/snapshots/")
	if !found || !protocol.ValidTabID(tab) {
		return "", id, false
	}
	id, err := protocol.ParseSnapshotID(strings.Replace(rest, "/", "#", 1))
	return tab, id, err == nil && id.Hash != ""
}

// snapshotPartBytes is the part of a snapshot a resource read asks its
// tab for at a time: well within a reply.
const snapshotPartBytes = 1 << 20

// readSnapshot reads a snapshot the tab keeps, a part at a time, whole.
func (s *Server) readSnapshot(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	tab, id, ok := parseSnapshotURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	ctx, cancel := context.WithTimeout(ctx, readFrameTimeout)
	defer cancel()
	var b strings.Builder
	for cursor := id.String() + "@0"; cursor != ""; {
		res, err := s.bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "snapshot", Cursor: cursor, MaxBytes: snapshotPartBytes}})
		switch {
		case err != nil:
			return nil, resourceError(s.tabError(ctx, tab, err))
		case !res.OK && len(res.Results) > 0:
			return nil, resourceError(&protocol.Error{Code: res.Results[0].Code, Message: res.Results[0].Error})
		case !res.OK:
			return nil, resourceError(&protocol.Error{Code: res.Code, Message: res.Error})
		}
		var part struct{ Text, Next string }
		if err := json.Unmarshal(res.Results[0].Value, &part); err != nil {
			return nil, resourceError(protocol.Errorf(protocol.CodeInternal, "snapshot part: %v", err))
		}
		b.WriteString(part.Text)
		cursor = part.Next
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: b.String()}}}, nil
}
