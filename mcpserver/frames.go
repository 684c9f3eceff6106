package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
}

func (s *Server) readTabs(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	list, err := s.bc.Tabs(ctx)
	if err != nil {
		return nil, err
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
	if w != nil {
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
	if !ok || frame != latest {
		return fmt.Errorf("%s: only a tab's latest frame can be subscribed to (%s)", req.Params.URI, LatestFrameURI("{tab}"))
	}
	// A tab no node lists is not followed: made-up ids would push real
	// subscriptions out of the few tabs followed.
	if _, err := s.findTab(ctx, tab); err != nil {
		return err
	}
	w, err := s.watch(ctx, tab)
	if err == nil {
		w.subscribers.Add(1)
	}
	return err
}

// unsubscribe counts a subscriber of a tab's latest frame gone.
func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	tab, frame, ok := parseFrameURI(req.Params.URI)
	if !ok || frame != latest {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.watches[tab]; w != nil && w.subscribers.Load() > 0 {
		w.subscribers.Add(-1)
	}
	return nil
}

// maxWatches bounds the tabs followed at once; past it the one followed
// longest that nobody subscribes to is let go (it is followed again when
// next used), else the one followed longest.
const maxWatches = 256

// watch is tab's watch, started when the tab is first used.
func (s *Server) watch(ctx context.Context, tab string) (*tabWatch, error) {
	s.mu.Lock()
	if w := s.watches[tab]; w != nil && !w.ended() {
		s.mu.Unlock()
		return w, nil
	}
	s.mu.Unlock()
	wctx, cancel := context.WithCancel(context.Background())
	w, err := s.bc.Watch(wctx, tab, busclient.FromNext)
	if err != nil {
		cancel()
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
	if len(s.watches) >= maxWatches {
		var out *tabWatch
		for _, o := range s.watches {
			if out == nil || o.goesBefore(out) {
				out = o
			}
		}
		delete(s.watches, out.tab)
		go out.stop()
	}
	s.watches[tab] = tw
	s.mu.Unlock()
	return tw, nil
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

// keptFrames is how many of a tab's latest frames a watch keeps.
const keptFrames = 8

// tabWatch follows one tab's frames and keeps the latest few.
type tabWatch struct {
	tab     string
	w       *busclient.Watcher
	cancel  context.CancelFunc
	done    chan struct{}
	started time.Time
	// subscribers count the subscriptions to the tab's latest frame.
	subscribers atomic.Int64

	mu      sync.Mutex
	frames  []busclient.Frame // the latest, oldest first
	changed chan struct{}     // closed and replaced on each frame
}

func (tw *tabWatch) follow(updated func()) {
	defer close(tw.done)
	for f := range tw.w.Frames() {
		tw.mu.Lock()
		tw.frames = append(tw.frames, f)
		if len(tw.frames) > keptFrames {
			tw.frames = tw.frames[len(tw.frames)-keptFrames:]
		}
		close(tw.changed)
		tw.changed = make(chan struct{})
		tw.mu.Unlock()
		updated()
	}
}

// goesBefore says which of two watches to let go first: one nobody
// subscribes to, then the one followed longer.
func (tw *tabWatch) goesBefore(o *tabWatch) bool {
	free, oFree := tw.subscribers.Load() == 0, o.subscribers.Load() == 0
	if free != oFree {
		return free
	}
	return tw.started.Before(o.started)
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
