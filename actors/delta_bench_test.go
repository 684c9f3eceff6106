package actors

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/benchkit"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/snaptext"
)

// BenchmarkFrameDelta is what the delta policy costs an action, and what
// making the delta costs: a one-cell change on a 300-row table (a
// snapshot of about 80 KB), the same eval under fullPagePolicy
// url-change (no content) and delta (a snapshot and its delta per
// frame), interleaved, and snaptext.Diff alone on two of its snapshots.
// Reported: each p50, delta/url-change, and the diff's share of the
// action's time under delta (the target: at most 10%).
func BenchmarkFrameDelta(b *testing.B) {
	tab, _, agent := benchSetup(b, "/rows.html?n=300")
	seq := tab.Info().Sequence
	change := 0
	plan := func(policy string) time.Duration {
		change++
		a := protocol.Action{Type: "eval", Expression: "document.querySelector('td').textContent = 'cell " + time.Now().String() + "'", BasedOnSequence: protocol.Based(seq)}
		data, _ := json.Marshal(protocol.Plan{FullPagePolicy: policy, Action: &a})
		t0 := time.Now()
		msg, err := agent.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 30*time.Second)
		took := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		var res protocol.PlanResult
		if err := json.Unmarshal(msg.Data, &res); err != nil || !res.OK {
			b.Fatalf("plan: %s %v", msg.Data, err)
		}
		seq = res.Sequence
		return took
	}
	text := func() string {
		data, _ := json.Marshal(protocol.Plan{Action: &protocol.Action{Type: "snapshot", NoIdle: true}})
		msg, err := agent.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		var res protocol.PlanResult
		var v snapshotValue
		if json.Unmarshal(msg.Data, &res) != nil || !res.OK || json.Unmarshal(res.Results[0].Value, &v) != nil {
			b.Fatalf("snapshot: %s", msg.Data)
		}
		return v.Text
	}
	for range 10 {
		plan("url-change")
		plan("delta")
	}
	var plain, delta, diff []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			plain = append(plain, plan("url-change"))
			delta = append(delta, plan("delta"))
		} else {
			delta = append(delta, plan("delta"))
			plain = append(plain, plan("url-change"))
		}
		b.StopTimer()
		before := text()
		plan("url-change")
		after := text()
		t0 := time.Now()
		if _, ok := snaptext.Diff(before, after); !ok {
			b.Fatal("no delta")
		}
		diff = append(diff, time.Since(t0))
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	p, d, f := benchkit.P50(plain), benchkit.P50(delta), benchkit.P50(diff)
	b.ReportMetric(float64(p.Microseconds()), "url-change-p50-µs")
	b.ReportMetric(float64(d.Microseconds()), "delta-p50-µs")
	b.ReportMetric(float64(f.Microseconds()), "diff-p50-µs")
	b.ReportMetric(float64(d)/float64(p), "delta/url-change")
	b.ReportMetric(float64(f)/float64(d), "diff/action")
}

// BenchmarkSettle is what settling on the page's activity adds to an
// action's snapshot: a fill on a field nothing listens to, then a
// snapshot at once or after a settle, interleaved (the difference is
// the settle's cost on a page that does nothing); and on a debounced
// autocomplete (300 ms, then a request), how long the settle waits for
// its suggestions (Playwright waits a fixed 500 ms after every action).
func BenchmarkSettle(b *testing.B) {
	tab, _, agent := benchSetup(b, "/autocomplete.html")
	run := func(actions ...protocol.Action) (time.Duration, protocol.PlanResult) {
		data, _ := json.Marshal(protocol.Plan{Actions: actions})
		t0 := time.Now()
		msg, err := agent.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), data, 30*time.Second)
		took := time.Since(t0)
		var res protocol.PlanResult
		if err != nil || json.Unmarshal(msg.Data, &res) != nil || !res.OK {
			b.Fatalf("plan: %v %+v", err, res)
		}
		return took, res
	}
	fill := func(sel, text string) protocol.Action {
		return protocol.Action{Type: "fill", Selector: sel, Text: text}
	}
	run(protocol.Action{Type: "snapshot", Settle: true})
	words := []string{"la", "lan", "lad", "so", "ch"}
	var at, settled, suggest []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, _ := run(fill("#plain", words[i%5]), protocol.Action{Type: "snapshot", NoIdle: true})
		s, _ := run(fill("#plain", words[(i+1)%5]), protocol.Action{Type: "snapshot", Settle: true})
		if i%2 == 1 {
			s, _ = run(fill("#plain", words[i%5]), protocol.Action{Type: "snapshot", Settle: true})
			a, _ = run(fill("#plain", words[(i+1)%5]), protocol.Action{Type: "snapshot", NoIdle: true})
		}
		at, settled = append(at, a), append(settled, s)
		_, res := run(fill("#q", words[i%5]), protocol.Action{Type: "snapshot", Settle: true})
		var v snapshotValue
		if json.Unmarshal(res.Results[1].Value, &v) != nil || v.Settled == nil || !strings.Contains(v.Text, "option") {
			b.Fatalf("no suggestions after the settle: %s", res.Results[1].Value)
		}
		suggest = append(suggest, v.Settled.Waited.Std())
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(benchkit.P50(at).Microseconds()), "quiet-at-once-p50-µs")
	b.ReportMetric(float64(benchkit.P50(settled).Microseconds()), "quiet-settled-p50-µs")
	b.ReportMetric(float64(benchkit.P50(suggest).Milliseconds()), "autocomplete-settle-p50-ms")
}
