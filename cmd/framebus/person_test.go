package main

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// A person at the command line: an agent's handoff waits; the person takes
// the tab over (their takeover claims the handoff), an agent's change is
// refused with user_control meanwhile, and the person's handback ends the
// handoff with its frame, which the handoff's reply names.
func TestPersonCommands(t *testing.T) {
	t.Parallel() // its own node
	n := startNode(t)
	handoff := startProcessOf(t, binary, n.env, "handoff", "Please", "sign", "in", "-t", "2m")
	waitFor(t, "the tab is handed off", 30*time.Second, func() bool {
		r := framebus(t, n.env, "", "eval", "1")
		return r.reply(t)["code"] == "user_control"
	})
	// The agent's credentials take no tab over: a person's commands log
	// in as the node's operator.
	agentCreds := slices.Concat(n.env, []string{envCreds + "=" + n.credsFile(serving.AgentCredsFile)})
	if r := framebus(t, agentCreds, "", "takeover", "--by", "mallory"); r.reply(t)["code"] != string(protocol.CodePermissionDenied) {
		t.Fatalf("an agent's takeover: %s %s", r.stdout, r.stderr)
	}
	claim := mustOK(t, n.env, "takeover", "--by", "alice")
	if c, _ := claim["control"].(map[string]any); c["by"] != "alice" || c["holder"] != serving.LocalOperatorUser || c["message"] != "Please sign in" {
		t.Fatalf("takeover: %v", claim)
	}
	// And the operator sends no plans.
	operatorCreds := slices.Concat(n.env, []string{envCreds + "=" + n.credsFile(serving.OperatorCredsFile)})
	if r := framebus(t, operatorCreds, "", "eval", "1"); r.reply(t)["code"] != string(protocol.CodePermissionDenied) {
		t.Fatalf("the operator's plan: %s %s", r.stdout, r.stderr)
	}
	back := mustOK(t, n.env, "handback", n.tab(), "--by", "alice")
	waitFor(t, "the handoff answers", 30*time.Second, handoff.exited)
	var res struct {
		OK       bool
		Sequence float64
		Value    struct{ Ended, By string }
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(handoff.stdout.String())), &res); err != nil || !res.OK || res.Value.Ended != "handback" || res.Value.By != "alice" || res.Sequence != back["sequence"] {
		t.Fatalf("handoff: %s (handback %v)", handoff.stdout, back)
	}
	if r := framebus(t, n.env, "", "handback"); r.reply(t)["code"] != "not_in_control" {
		t.Fatalf("a second handback: %s", r.stdout)
	}
	// A question, and its answer from the command line.
	ask := startProcessOf(t, binary, n.env, "ask", "Which", "size?", "--choices", "S", "--choices", "M", "-t", "2m")
	defer ask.stop(syscall.SIGTERM, 10*time.Second)
	waitFor(t, "the question is open", 30*time.Second, func() bool {
		r := framebus(t, n.env, "", "answer", "XL")
		return strings.Contains(r.stdout, "not one of the choices")
	})
	mustOK(t, n.env, "answer", "M", "--by", "dave")
	waitFor(t, "the ask answers", 30*time.Second, ask.exited)
	if !strings.Contains(ask.stdout.String(), `"answer":"M"`) {
		t.Fatalf("ask: %s", ask.stdout)
	}
}
