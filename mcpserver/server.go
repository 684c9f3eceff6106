// Package mcpserver serves framebus over the Model Context Protocol: the
// web tool of ADR-006 (resources http, search and browser), one tool per
// declared action (protocol.ActionSpecs) with the tab and lifecycle
// tools, and every tab's frames as resources a client can subscribe to.
//
// It is a client of the bus like the CLI: every call becomes a plan to a
// tab or a request to a node, so an MCP client shares tabs with the
// agents and observers on the bus. Every tool result names the tab and
// frame it left, a state-changing action's result carries the new
// frame's page when the URL changed, and every action tool takes
// basedOnSequence.
package mcpserver

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
)

// Tool sets, Options.Tools.
const (
	ToolsWeb     = "web"     // ADR-006's one web tool
	ToolsActions = "actions" // one tool per action, and the tab and lifecycle tools
	ToolsBoth    = "both"
)

// ToolSets are the values Options.Tools takes.
var ToolSets = []string{ToolsWeb, ToolsActions, ToolsBoth}

// Options configure a Server.
type Options struct {
	// Client is the bus connection every call goes through; the Server
	// does not close it.
	Client *busclient.Client
	// Tools is the tool set served (ToolsBoth when "").
	Tools string
	// Version is framebus's, in the server's implementation info.
	Version string
	// Logger logs the MCP sessions' activity (none when nil).
	Logger *slog.Logger
	// Page is what results show of the page by default (PageModes:
	// PageDelta when ""); PageBudget, the most bytes of it a result
	// shows (DefaultPageBudget when 0), past which it is summarized.
	Page       string
	PageBudget int
	// Viewer gives the URL of framebus view (with its token) when one
	// runs, named to a person a handoff asks through the client; nil or
	// "" names the CLI.
	Viewer func() string
}

// Server is framebus's MCP server. One Server serves any number of
// sessions (stdio's one, or streamable HTTP's many); each session has a
// tab of its own choosing (browser_tab_select), else the first listed.
type Server struct {
	bc  *busclient.Client
	mcp *mcp.Server

	mu       sync.Mutex
	selected map[*mcp.ServerSession]string // the tab each session chose
	watches  map[string]*tabWatch          // tabs whose frames are followed
	// subs are the sessions subscribed to each tab's latest frame.
	subs map[string]map[*mcp.ServerSession]bool
	// shown is the page each session was last shown of each tab (see
	// pages.go).
	shown  map[*mcp.ServerSession]map[string]heldPage
	page   string
	budget int
	viewer func() string
	// stateKey signs the request states of calls that ask a person.
	stateKey []byte
	// asking are the plans of calls that ask a person, sent and not yet
	// answered, by id: closed when the plan answers.
	asking map[string]chan struct{}
	closed bool
}

// New builds the server and its tools and resources.
func New(opts Options) (*Server, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("mcpserver: no bus client")
	}
	tools := opts.Tools
	if tools == "" {
		tools = ToolsBoth
	}
	s := &Server{bc: opts.Client, selected: map[*mcp.ServerSession]string{}, watches: map[string]*tabWatch{},
		subs: map[string]map[*mcp.ServerSession]bool{}, shown: map[*mcp.ServerSession]map[string]heldPage{},
		page: cmp.Or(opts.Page, PageDelta), budget: cmp.Or(opts.PageBudget, DefaultPageBudget), viewer: opts.Viewer, stateKey: newStateKey(),
		asking: map[string]chan struct{}{}}
	if !slices.Contains(PageModes, s.page) || s.budget < 0 {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "page %q, budget %d: want delta, full or none, and a budget of 1 byte or more", s.page, s.budget)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "framebus", Title: "framebus", Version: opts.Version}, &mcp.ServerOptions{
		Instructions:       instructions,
		Logger:             logger,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		Capabilities:       &mcp.ServerCapabilities{},
	})
	switch tools {
	case ToolsWeb:
		s.addWebTool()
	case ToolsActions:
		s.addActionTools()
	case ToolsBoth:
		s.addWebTool()
		s.addActionTools()
	default:
		return nil, protocol.Errorf(protocol.CodeBadRequest, "tools: %q is not a tool set (web, actions or both)", tools)
	}
	s.addFrameResources()
	return s, nil
}

// instructions tell the model how the tools fit together.
const instructions = `framebus drives real Chromium tabs shared over a message bus with other agents and observers.
Every tab has numbered frames: page states. Each result names the tab and the frame it left ("tab T1 · frame 7").
A state-changing action returns what it changed on the page, as a delta keyed by refs, or the new page's accessibility
snapshot when a new page loaded, with a ref (e5) for every interactive element: pass a ref as the selector (or ref) of
the next action. A page too long to show comes as a summary and a link; search it with browser_snapshot {"search": ...}
or read it in parts with its cursor. To act only while the page is as you saw
it, give basedOnSequence (the frame number you planned against): if another agent changed the page meanwhile, the
action is refused with stale_frame and the current frame number, and nothing runs.`

// MCP is the server to run on a transport (Run with a stdio transport,
// or behind mcp.NewStreamableHTTPHandler).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Close stops following tabs' frames. The bus client stays open.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	watches := s.watches
	s.watches = map[string]*tabWatch{}
	s.mu.Unlock()
	for _, w := range watches {
		w.stop()
	}
}

// selectTab makes tab the session's tab ("": none).
func (s *Server) selectTab(ss *mcp.ServerSession, tab string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneSessions()
	if tab == "" {
		delete(s.selected, ss)
		return
	}
	s.selected[ss] = tab
}

// pruneSessions forgets what sessions that ended chose and were shown.
// The caller holds s.mu.
func (s *Server) pruneSessions() {
	live := map[*mcp.ServerSession]bool{}
	for l := range s.mcp.Sessions() {
		live[l] = true
	}
	for old := range s.selected {
		if !live[old] {
			delete(s.selected, old)
		}
	}
	for old := range s.shown {
		if !live[old] {
			delete(s.shown, old)
		}
	}
}

// sessionTab is the tab the session chose, "" for none.
func (s *Server) sessionTab(ss *mcp.ServerSession) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.selected[ss]
}
