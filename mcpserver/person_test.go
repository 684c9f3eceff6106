package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/mcpserver"
	"github.com/framebus/framebus/protocol"
)

// A client that can ask its user (elicitation): a handoff asks there, and
// the user's accept hands the tab back; an ask's answer comes from the
// user's form; a declined handoff cancels its plan.
func TestHandoffAndAskThroughElicitation(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	var decline atomic.Bool
	s := startWith(t, mcpserver.ToolsActions, actors.NodeOptions{}, func(o *mcp.ClientOptions) {
		o.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			switch {
			case decline.Load():
				return &mcp.ElicitResult{Action: "decline"}, nil
			case strings.Contains(req.Params.Message, "Which size"):
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "M"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}
	})
	text, out, isErr := s.call(t, "browser_handoff", map[string]any{"message": "Please sign in"})
	if isErr || !strings.Contains(text, `"ended":"handback"`) {
		t.Fatalf("handoff: %s %v", text, out)
	}
	mu.Lock()
	first := slices.Clone(asked)
	mu.Unlock()
	if asked := first; len(asked) != 1 || !strings.Contains(asked[0], "Please sign in") || !strings.Contains(asked[0], "framebus takeover") {
		t.Fatalf("the user was asked %q", asked)
	}
	text, _, isErr = s.call(t, "browser_ask", map[string]any{"question": "Which size?", "choices": []string{"S", "M"}})
	if isErr || !strings.Contains(text, `"answer":"M"`) {
		t.Fatalf("ask: %s", text)
	}
	decline.Store(true)
	text, _, isErr = s.call(t, "browser_handoff", map[string]any{"message": "Pay, please"})
	if !isErr || !strings.Contains(text, "cancelled") {
		t.Fatalf("a declined handoff: %s", text)
	}
	if c := s.node.Tabs()[0].Control; c != nil {
		t.Fatalf("the tab is still a person's: %+v", c)
	}
}

// The user's reply comes before the handoff reaches the tab, and long
// before: the tab is busy with another plan for longer than a reply is
// otherwise held (5 s). The server knows its handoff is on its way still,
// so the reply waits for it and hands the tab back; it is not dropped,
// leaving the handoff to run to its timeout.
func TestElicitedReplyWaitsForAHandoffStillOnItsWay(t *testing.T) {
	s := startWith(t, mcpserver.ToolsActions, actors.NodeOptions{}, func(o *mcp.ClientOptions) {
		o.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}
	})
	tab := s.node.Tabs()[0].Tab
	// The long plan waits on a request answered 7 s after it came.
	reached := make(chan struct{}, 1)
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case reached <- struct{}{}:
		default:
		}
		select {
		case <-time.After(7 * time.Second):
		case <-r.Context().Done():
		}
	}))
	defer hold.Close()
	busy := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		defer cancel()
		_, err := s.agent.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: fmt.Sprintf("fetch(%q, {mode: 'no-cors'}).then(() => 1)", hold.URL)}})
		busy <- err
	}()
	select {
	case <-reached:
	case err := <-busy:
		t.Fatalf("the long plan: %v", err)
	}
	text, out, isErr := s.call(t, "browser_handoff", map[string]any{"message": "Please sign in", "until": map[string]any{"timeout": "40s"}})
	if isErr || !strings.Contains(text, `"ended":"handback"`) {
		t.Fatalf("a handoff behind a long plan: %s %v", text, out)
	}
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
}

// A client that cannot ask its user: the handoff waits for a hand-back
// from elsewhere (the viewer, the CLI: here the bus client).
func TestHandoffWithoutElicitation(t *testing.T) {
	s := start(t, mcpserver.ToolsActions)
	tab := s.node.Tabs()[0].Tab
	done := make(chan string, 1)
	go func() {
		text, _, _ := s.call(t, "browser_handoff", map[string]any{"message": "Solve the captcha"})
		done <- text
	}()
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for s.node.Tabs()[0].Control == nil {
		if time.Now().After(deadline) {
			t.Fatal("the tab was never handed off")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	if _, err := s.agent.HandBack(ctx, tab, "erin"); err != nil {
		t.Fatal(err)
	}
	if text := <-done; !strings.Contains(text, `"by":"erin"`) {
		t.Fatalf("handoff: %s", text)
	}
	if _, err := s.agent.HandBack(ctx, tab, "erin"); protocol.CodeOf(err) != protocol.CodeNotInControl {
		t.Fatalf("a second handback: %v", err)
	}
}
