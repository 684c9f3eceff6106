package client

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// preparePlan adds an id and the call's deadline to a plan as written,
// replaces an id that is not one and a later deadline of the plan's, and
// leaves an earlier deadline of the plan's, and one that is not a time
// (for the node to refuse), as they are.
func TestPreparePlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	end, _ := ctx.Deadline()
	soon := time.Now().Add(10 * time.Second).UTC().Format(time.RFC3339Nano)
	for _, tc := range []struct {
		name, plan string
		id         string // "" for a new one
		deadline   string // "ctx" for the call's; else as written
	}{
		{"plain", `{"action":{"type":"eval","expression":"1"}}`, "", "ctx"},
		{"spaced", " {\"id\":\"p1\", \"action\":{\"type\":\"url\"}}\n", "p1", "ctx"},
		{"id not a string", `{"id":7,"action":{"type":"url"}}`, "", "ctx"},
		{"later deadline", `{"id":"p2","deadline":"2999-01-01T00:00:00Z","action":{"type":"url"}}`, "p2", "ctx"},
		{"earlier deadline", `{"id":"p3","deadline":"` + soon + `","action":{"type":"url"}}`, "p3", soon},
		{"deadline not a time", `{"id":"p4","deadline":"soon","action":{"type":"url"}}`, "p4", "bad"},
	} {
		p, err := preparePlan(ctx, []byte(tc.plan))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		plan, err := protocol.DecodePlan(p.data)
		if tc.deadline == "bad" {
			if protocol.CodeOf(err) != protocol.CodeBadRequest || !strings.Contains(string(p.data), `"deadline":"soon"`) {
				t.Errorf("%s: %s, %v; want the deadline left for the node to refuse", tc.name, p.data, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %s: %v", tc.name, p.data, err)
		}
		if plan.ID != p.id || tc.id != "" && p.id != tc.id || tc.id == "" && !strings.HasPrefix(p.id, "p-") {
			t.Errorf("%s: id %q (%q in the plan), want %q", tc.name, p.id, plan.ID, tc.id)
		}
		want := end.Add(-maxReplyMargin)
		if tc.deadline != "ctx" {
			want, _ = time.Parse(time.RFC3339Nano, tc.deadline)
		}
		if !plan.Deadline.Equal(p.deadline) || plan.Deadline.Sub(want).Abs() > 100*time.Millisecond {
			t.Errorf("%s: deadline %v (%v in the plan), want %v", tc.name, p.deadline, plan.Deadline, want)
		}
	}
	if _, err := preparePlan(ctx, []byte(`null`)); protocol.CodeOf(err) != protocol.CodeBadRequest {
		t.Errorf("a plan of null: %v", err)
	}
}

// The cost of giving a plan its id and deadline, beside WithPlanID's
// (what a plan cost before it carried a deadline).
func BenchmarkPreparePlan(b *testing.B) {
	data := []byte(`{"id":"p-0123456789abcdef","action":{"type":"eval","expression":"1+1"}}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.Run("withPlanID", func(b *testing.B) {
		for b.Loop() {
			WithPlanID(data)
		}
	})
	b.Run("preparePlan", func(b *testing.B) {
		for b.Loop() {
			preparePlan(ctx, data)
		}
	})
}
