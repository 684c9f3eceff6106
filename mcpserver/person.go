package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/framebus/framebus/protocol"
)

// People in the loop over MCP (docs/people.md). A handoff or ask tool
// call, from a client that can ask its user (elicitation), asks there:
// the call's plan goes out to the tab and the call answers "input
// required" with the question (MCP's multi round-trip requests; the SDK
// sends an older client an elicitation/create itself). The client's
// retry brings the user's reply: an accepted handoff hands the tab back,
// an answer answers the question, a declined one cancels the plan; then
// the call answers with the plan's result (the same plan id: it runs
// once). A handoff ended meanwhile by other means (the viewer, the CLI,
// its until) keeps its ending. A client that cannot ask waits for those.

// personInput is the id of the one input request a call asks.
const personInput = "person"

// personRetry is how long a user's reply waits for the tab to have the
// handoff or question it answers (the plan may reach the tab after it)
// when this server does not know the plan to be on its way still (it
// was sent by another server, or before a restart). A plan this server
// sent and that has not answered is waited for as long as the call.
const personRetry = 5 * time.Second

// sentAsking records plan id of a call that asks a person as sent; the
// function returned records its answer.
func (s *Server) sentAsking(id string) (answered func()) {
	done := make(chan struct{})
	s.mu.Lock()
	s.asking[id] = done
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.asking[id] == done {
			delete(s.asking, id)
		}
		s.mu.Unlock()
		close(done)
	}
}

// askingAnswered is closed when plan id, sent by this server, answers;
// nil when this server is not waiting for it.
func (s *Server) askingAnswered(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asking[id]
}

// elicits reports whether ss's client can ask its user a question.
func elicits(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// roundTrip is what a retried call brings: its users' replies and the
// state the first call gave.
type roundTrip struct {
	responses mcp.InputResponseMap
	state     string
}

type roundTripKey struct{}

// withRoundTrip keeps req's round-trip fields for the tool's handler.
func withRoundTrip(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req.Params == nil || req.Params.RequestState == "" {
		return ctx
	}
	return context.WithValue(ctx, roundTripKey{}, roundTrip{responses: req.Params.InputResponses, state: req.Params.RequestState})
}

// inputRequired is a call's first answer: ask the user, then retry.
type inputRequired struct {
	params *mcp.ElicitParams
	state  string
}

func (inputRequired) Error() string { return "input required" }

func (r inputRequired) result() *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{personInput: r.params}, RequestState: r.state}
}

// personRound is the person's part of a handoff or ask call: on the
// first call, the question for the user (the plan then goes out); on
// the retry, the user's reply carried out, and plan's id set to the
// first call's.
func (s *Server) personRound(ctx context.Context, ss *mcp.ServerSession, tab string, plan *protocol.Plan) (*mcp.ElicitParams, error) {
	rt, retried := ctx.Value(roundTripKey{}).(roundTrip)
	if !retried {
		return s.personQuestion(tab, plan.Actions[0]), nil
	}
	id, ok := s.openState(rt.state, tab)
	if !ok {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "requestState: not one this server gave for tab %s", tab)
	}
	plan.ID = id
	res, _ := rt.responses[personInput].(*mcp.ElicitResult)
	if res == nil {
		return nil, nil // nothing to carry out: the plan's result, as it ends
	}
	a := plan.Actions[0]
	by := "mcp client"
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
		by = p.ClientInfo.Name
	}
	reply := func() error {
		switch {
		case res.Action != "accept":
			_, err := s.bc.Cancel(ctx, tab, id)
			return err
		case a.Type == "handoff":
			_, err := s.bc.HandBack(ctx, tab, by)
			return err
		}
		answer, _ := res.Content["answer"].(string)
		return s.bc.Answer(ctx, tab, protocol.AnswerRequest{Answer: strings.TrimSpace(answer), By: by})
	}
	deadline, answered := time.Now().Add(personRetry), s.askingAnswered(id)
	for {
		err := reply()
		code := protocol.CodeOf(err)
		if err == nil || code != protocol.CodeNotInControl && code != protocol.CodeBadRequest || answered == nil && !time.Now().Before(deadline) {
			// Not there (any more): ended by other means, whose result
			// the plan's answer says.
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-answered: // ended, by other means
			return nil, nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// personQuestion is what the user is asked for a handoff or ask.
func (s *Server) personQuestion(tab string, a protocol.Action) *mcp.ElicitParams {
	if a.Type == "ask" {
		answer := map[string]any{"type": "string", "title": "Answer"}
		if len(a.Choices) > 0 {
			answer["enum"] = a.Choices
		}
		return &mcp.ElicitParams{Mode: "form", Message: a.Question,
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": answer}, "required": []string{"answer"}}}
	}
	where := "framebus takeover " + tab + ", then framebus handback " + tab
	if s.viewer != nil {
		if url := s.viewer(); url != "" {
			where = url + "#tab=" + tab
		}
	}
	return &mcp.ElicitParams{Mode: "form",
		Message:         fmt.Sprintf("The agent hands you browser tab %s: %s\n\nAct in it at %s. Accept when you are done to hand it back; decline to give up.", tab, a.Message, where),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
}

// sealState is the request state of a call's plan: its tab and id,
// signed with the server's key, so a retry names no plan of another's.
func (s *Server) sealState(tab, id string) string {
	msg := tab + " " + id
	return msg + " " + base64.RawURLEncoding.EncodeToString(s.stateMAC(msg))
}

// openState checks a request state and returns its plan id.
func (s *Server) openState(state, tab string) (string, bool) {
	parts := strings.Split(state, " ")
	if len(parts) != 3 || parts[0] != tab {
		return "", false
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(mac, s.stateMAC(parts[0]+" "+parts[1])) {
		return "", false
	}
	return parts[1], true
}

func (s *Server) stateMAC(msg string) []byte {
	h := hmac.New(sha256.New, s.stateKey)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// newStateKey is a server's key for its request states.
func newStateKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}
