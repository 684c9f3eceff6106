package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/bus"
	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A person's control is theirs: from the side of every other client of
// the bus, with its own credentials, and of one that forges the header
// in which the server names a request's sender. While an agent's handoff
// waits for a person, a rival agent cannot take the tab, act in it, hand
// it back or answer the first agent's question; a second operator cannot
// act in the tab the first one took; the rival cannot cancel the plan
// that waits for the person either; an observer can do none of it; and
// the agent whose handoff it is hands it back, and answers its own
// question, for a person it asked itself. The test counts what got
// through: none of it may.
func TestPersonControlIsThePersons(t *testing.T) {
	node := startTestNode(t, NodeOptions{})
	tab := node.Tabs()[0].Tab
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	client := func(role string) *busclient.Client {
		creds := bustest.AddUser(t, node.Bus(), role)
		bc, err := busclient.Connect(ctx, busclient.Options{URL: node.Bus().ClientURL(), Credentials: &creds, Prefix: node.Subjects().Prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(bc.Close)
		return bc
	}
	owner, rival := client(protocol.RoleAgent), client(protocol.RoleAgent)
	alice, bob := client(protocol.RoleOperator), client(protocol.RoleOperator)
	eve := client(protocol.RoleObserver)
	nav, err := owner.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: site("/login.html"), Wait: true}})
	if err != nil || !nav.OK {
		t.Fatalf("navigate: %+v %v", nav, err)
	}

	type attempt struct {
		who, what string
		err       error
	}
	var through []attempt
	tries := 0
	refused := func(who, what string, err error, code protocol.Code) {
		t.Helper()
		tries++
		if err == nil {
			through = append(through, attempt{who, what, nil})
			return
		}
		if protocol.CodeOf(err) != code {
			t.Errorf("%s's %s: %v (code %q), want %s", who, what, err, protocol.CodeOf(err), code)
		}
	}
	click := protocol.InputRequest{Type: protocol.InputMouse, Event: "down", X: 10, Y: 10, Button: "left", ClickCount: 1}

	// The owner's plan hands the tab off; it waits for a person.
	done := make(chan protocol.PlanResult, 1)
	go func() {
		res, _ := owner.Plan(ctx, tab, protocol.Plan{ID: "mine", Agent: "owner", Actions: []protocol.Action{{Type: "handoff", Message: "sign in, please"}}})
		done <- res
	}()
	waitControl(t, node, func(c *protocol.Control) bool { return c != nil })

	// Nobody has taken it yet: no one acts in it, and the rival agent
	// cannot take it nor hand it back.
	_, err = alice.Input(ctx, tab, click)
	refused("alice (not yet holding)", "input", err, protocol.CodeNotInControl)
	_, err = rival.Input(ctx, tab, click)
	refused("rival agent", "input", err, protocol.CodePermissionDenied)
	_, err = rival.TakeOver(ctx, tab, "rival", "")
	refused("rival agent", "takeover", err, protocol.CodePermissionDenied)
	_, err = rival.HandBack(ctx, tab, "rival")
	refused("rival agent", "handback", err, protocol.CodePermissionDenied)
	_, err = eve.TakeOver(ctx, tab, "eve", "")
	refused("observer", "takeover", err, protocol.CodePermissionDenied)
	_, err = eve.Input(ctx, tab, click)
	refused("observer", "input", err, protocol.CodePermissionDenied)

	// A forged sender: a request that names alice's account in the
	// header the server stamps. The server replaces it with the rival's.
	forged := nats.NewMsg(node.Subjects().TabControl(tab))
	forged.Data, _ = json.Marshal(protocol.ControlRequest{Op: protocol.ControlTakeover, By: "alice"})
	forged.Header.Set("Nats-Request-Info", fmt.Sprintf(`{"acc":%q}`, bus.UserAccount(alice.User(), protocol.RoleOperator)))
	m, err := rival.Conn().RequestMsgWithContext(ctx, forged)
	if err != nil {
		t.Fatal(err)
	}
	tries++
	var reply protocol.ErrorReply
	if json.Unmarshal(m.Data, &reply) != nil || reply.OK {
		through = append(through, attempt{"rival agent, forging alice", "takeover", nil})
	} else if reply.Code != protocol.CodePermissionDenied {
		t.Errorf("a forged takeover: %s, want permission_denied", m.Data)
	}

	// Alice takes it: it is hers. Bob, another operator, cannot act in
	// it or take it from her; she can.
	if r, err := alice.TakeOver(ctx, tab, "alice", ""); err != nil || r.Control.Holder != alice.User() {
		t.Fatalf("alice takes the handoff: %+v %v", r, err)
	}
	_, err = bob.Input(ctx, tab, click)
	refused("bob (another operator)", "input", err, protocol.CodeNotInControl)
	_, err = bob.TakeOver(ctx, tab, "bob", "")
	refused("bob (another operator)", "takeover", err, protocol.CodeUserControl)
	if _, err := alice.Input(ctx, tab, click); err != nil {
		t.Fatalf("alice's input in the tab she has: %v", err)
	}
	if _, err := alice.Input(ctx, tab, protocol.InputRequest{Type: protocol.InputMouse, Event: "up", X: 10, Y: 10, Button: "left", ClickCount: 1}); err != nil {
		t.Fatalf("alice's input: %v", err)
	}
	_, err = rival.HandBack(ctx, tab, "rival")
	refused("rival agent", "handback", err, protocol.CodePermissionDenied)
	// Nor can it end the handoff by cancelling the plan that waits.
	cancelled, err := rival.Cancel(ctx, tab, "mine")
	if err == nil && !cancelled.OK {
		err = &protocol.Error{Code: cancelled.Code, Message: cancelled.Error}
	}
	refused("rival agent", "cancel of the owner's handoff", err, protocol.CodePermissionDenied)

	// The owner's plan gets the tab back from the owner itself (its MCP
	// client's user said done).
	if _, err := owner.HandBack(ctx, tab, "owner's user"); err != nil {
		t.Fatalf("the owner hands back its own handoff: %v", err)
	}
	if res := <-done; !res.OK {
		t.Fatalf("the handoff: %+v", res)
	}

	// Questions: the rival can neither answer the owner's question nor
	// find it; the owner answers its own; an operator answers any.
	for _, answerer := range []*busclient.Client{owner, alice} {
		asked := make(chan protocol.PlanResult, 1)
		go func() {
			res, _ := owner.Plan(ctx, tab, protocol.Plan{Agent: "owner", Actions: []protocol.Action{{Type: "ask", Question: "Which size?", Choices: []string{"S", "M"}}}})
			asked <- res
		}()
		var id string
		waitQuestion(t, node, &id)
		err = rival.Answer(ctx, tab, protocol.AnswerRequest{ID: id, Answer: "S"})
		refused("rival agent", "answer by id", err, protocol.CodePermissionDenied)
		err = rival.Answer(ctx, tab, protocol.AnswerRequest{Answer: "S"})
		refused("rival agent", "answer", err, protocol.CodeBadRequest)
		err = eve.Answer(ctx, tab, protocol.AnswerRequest{ID: id, Answer: "S"})
		refused("observer", "answer", err, protocol.CodePermissionDenied)
		if err := answerer.Answer(ctx, tab, protocol.AnswerRequest{ID: id, Answer: "M"}); err != nil {
			t.Fatalf("%s answers: %v", answerer.User(), err)
		}
		res := <-asked
		var v struct{ Answer string }
		if !res.OK || json.Unmarshal(res.Results[0].Value, &v) != nil || v.Answer != "M" {
			t.Fatalf("the ask, answered by %s: %+v", answerer.User(), res)
		}
	}

	// A takeover of its own by an agent: refused, so no agent passes for
	// a person past user_control.
	_, err = owner.TakeOver(ctx, tab, "owner", "")
	refused("the owner agent", "takeover", err, protocol.CodePermissionDenied)
	if len(through) > 0 {
		t.Fatalf("%d of %d attempts got through: %+v", len(through), tries, through)
	}
	t.Logf("0 of %d attempts got through", tries)
}

// waitControl waits for the tab's control to satisfy ok.
func waitControl(t *testing.T, node *Node, ok func(*protocol.Control) bool) {
	t.Helper()
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for !ok(node.Tabs()[0].Control) {
		if time.Now().After(deadline) {
			t.Fatalf("the tab's control is still %+v", node.Tabs()[0].Control)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitQuestion waits for the tab's open question and sets id to its id.
func waitQuestion(t *testing.T, node *Node, id *string) {
	t.Helper()
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for {
		if qs := node.Tabs()[0].Questions; len(qs) > 0 {
			*id = qs[0].ID
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no question was asked")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
