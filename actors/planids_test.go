package actors

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/protocol"
)

// A plan id sent twice runs once: one after the other, and at the same
// moment; the repeat is answered with the first run's result marked
// duplicate. A plan without an id always runs.
func TestPlanIDRunsOnce(t *testing.T) {
	tab, _, _ := tabAt(t, "/index.html")
	count := protocol.Action{Type: "eval", Expression: "window.runs = (window.runs || 0) + 1"}
	runs := func() int {
		t.Helper()
		res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "window.runs || 0"}))
		var n int
		if err := json.Unmarshal(res.Results[0].Value, &n); err != nil {
			t.Fatalf("runs: %+v %v", res, err)
		}
		return n
	}

	first := send(t, tab.ID(), protocol.Plan{ID: "once", Action: &count})
	again := send(t, tab.ID(), protocol.Plan{ID: "once", Action: &count})
	if !first.OK || first.Duplicate || !again.OK || !again.Duplicate {
		t.Fatalf("first %+v, again %+v", first, again)
	}
	if again.Sequence != first.Sequence || string(again.Results[0].Value) != "1" || again.Results[0].Sequence != first.Results[0].Sequence {
		t.Fatalf("the repeat's result is not the first's: %+v vs %+v", again, first)
	}
	if n := runs(); n != 1 {
		t.Fatalf("the plan ran %d times", n)
	}
	if seq := tab.Info().Sequence; seq != first.Sequence+1 { // the eval of runs() made one frame more
		t.Fatalf("sequence %d after the repeat, want %d: the repeat made frames", seq, first.Sequence+1)
	}

	// At the same moment, and behind a plan that keeps the tab busy.
	busy := make(chan error, 1)
	go func() {
		a := protocol.Action{Type: "eval", Expression: "new Promise(r => setTimeout(r, 300))"}
		_, err := request(testConn, tab.ID(), protocol.Plan{ID: "busy", Action: &a})
		busy <- err
	}()
	waitUntil(t, func() bool { return tab.cancels.runningID() == "busy" })
	results := make(chan protocol.PlanResult, 2)
	for range 2 {
		go func() {
			res, err := request(testConn, tab.ID(), protocol.Plan{ID: "together", Action: &count})
			if err != nil {
				t.Error(err)
			}
			results <- res
		}()
	}
	dups := 0
	for range 2 {
		select {
		case res := <-results:
			if !res.OK {
				t.Fatalf("together: %+v", res)
			}
			if res.Duplicate {
				dups++
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no answer within 60s")
		}
	}
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	if dups != 1 {
		t.Fatalf("%d of 2 answers say duplicate, want 1", dups)
	}
	if n := runs(); n != 2 {
		t.Fatalf("runs = %d, want 2: the concurrent pair ran %d times", n, n-1)
	}
	// Without an id, each plan runs.
	send(t, tab.ID(), one(count))
	send(t, tab.ID(), one(count))
	if n := runs(); n != 4 {
		t.Fatalf("runs = %d after two plans without an id, want 4", n)
	}
}

// The memory is bounded: the oldest ids go past planIDsKept or
// planIDsAge, and past planIDsValueBytes the oldest results lose their
// values, not their outcome.
func TestPlanIDsBounds(t *testing.T) {
	var p planIDs
	now := time.Unix(1000, 0)
	big := json.RawMessage(`"` + strings.Repeat("a", planIDsValueBytes/2) + `"`)
	p.remember("a", protocol.PlanResult{OK: true, Results: []protocol.ActionResult{{OK: true, Value: big}}}, now)
	p.remember("b", protocol.PlanResult{OK: true, Results: []protocol.ActionResult{{OK: true, Value: big}}}, now)
	if res, ok := p.result("a", now); !ok || !res.Duplicate || res.Results[0].Value != nil || res.Results[0].Code != protocol.CodeTooLarge {
		t.Fatalf("a, past the value bound: %+v %v", res.Results, ok)
	}
	if res, ok := p.result("b", now); !ok || len(res.Results[0].Value) != len(big) {
		t.Fatalf("b keeps its value: %v", ok)
	}
	for i := range planIDsKept {
		p.remember(fmt.Sprint("p", i), protocol.PlanResult{OK: true}, now)
	}
	if _, ok := p.result("a", now); ok {
		t.Fatal("a is still remembered past planIDsKept")
	}
	if len(p.runs) != planIDsKept || len(p.order) != planIDsKept || p.valueBytes != 0 {
		t.Fatalf("%d runs, %d in order, %d value bytes", len(p.runs), len(p.order), p.valueBytes)
	}
	if _, ok := p.result("p0", now.Add(planIDsAge+time.Second)); ok || len(p.runs) != 0 {
		t.Fatalf("ids older than planIDsAge are still remembered: %d", len(p.runs))
	}
}
