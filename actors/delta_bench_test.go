package actors

import (
	"encoding/json"
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
