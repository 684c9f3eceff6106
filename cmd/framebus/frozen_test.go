package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// freezeProcess stops a process (SIGSTOP, as a GC pause, a swapped VM or a
// partition look from outside) until the returned thaw, which the test's
// end calls too. It returns once every thread of the process is stopped:
// kill returns before they are.
func freezeProcess(t *testing.T, p *process) (thaw func()) {
	t.Helper()
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every thread of the process stopped", 10*time.Second, func() bool { return allStopped(pid) })
	thawed := false
	thaw = func() {
		if !thawed {
			thawed = true
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(thaw)
	return thaw
}

// allStopped reports whether every thread of process pid is stopped
// (state T in /proc/PID/task/TID/stat).
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// pid (comm) state ...: the command may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Issue 33, item 1: a plan its client gave up on does not run later.
// With the node frozen (its bus server too), a client connected before
// sends plans with short deadlines, side by side: one from its call's
// context, one written in the plan. Neither is answered; each call ends
// by its deadline with outcome_unknown naming the plan's id and how to
// look. The node is thawed at once, before it would count as having
// stood still (stall.go refuses every plan then, deadline or not): it
// takes both plans, past their deadlines, and starts neither. The page
// has no trace of them, the tab no frame of them, and the one with its
// own deadline, sent again under its id, is answered expired.
func TestFrozenNodeStartsNoLatePlan(t *testing.T) {
	n := startNode(t)
	tab := n.tab()
	mustOK(t, n.env, "navigate", site("/"), "--tab", tab)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	bc, err := busclient.Connect(ctx, busclient.Options{CredentialsFile: n.credsFile(serving.AgentCredsFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	late := func(id string) protocol.Plan {
		return protocol.Plan{ID: id, Action: &protocol.Action{Type: "eval", Expression: "window.lateRuns = (window.lateRuns || 0) + 1"}}
	}

	thaw := freezeProcess(t, n.process)
	byContext, byPlan := late("frozen-by-context"), late("frozen-by-plan")
	byPlan.Deadline = time.Now().Add(700 * time.Millisecond)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		pctx, pcancel := context.WithTimeout(ctx, 700*time.Millisecond)
		defer pcancel()
		_, errs[0] = bc.Plan(pctx, tab, byContext)
	})
	wg.Go(func() { _, errs[1] = bc.Plan(ctx, tab, byPlan) }) // no deadline but the plan's
	wg.Wait()
	thaw()
	checkOutcomeUnknown(t, errs[0], byContext.ID, tab)
	checkOutcomeUnknown(t, errs[1], byPlan.ID, tab)

	// A freeze a busy machine made longer than the node's stall limit
	// (stall.go) has the node refuse plans for a moment after the thaw,
	// node_unavailable, having run nothing: then it is asked again.
	res, err := bc.Plan(ctx, tab, byPlan)
	stalled := func() bool {
		return protocol.CodeOf(err) == protocol.CodeNodeUnavailable || res.Code == protocol.CodeNodeUnavailable
	}
	for deadline := time.Now().Add(testscale.D(10 * time.Second)); stalled() && res.Executed == 0 && time.Now().Before(deadline); {
		t.Logf("plan %s sent again after the thaw: %+v, %v (the freeze outlasted the stall limit); again", byPlan.ID, res, err)
		time.Sleep(100 * time.Millisecond)
		res, err = bc.Plan(ctx, tab, byPlan)
	}
	if err != nil || res.OK || res.Code != protocol.CodeExpired || res.Executed != 0 {
		t.Errorf("plan %s sent again after the thaw: %+v, %v; want expired", byPlan.ID, res, err)
	}
	res, err = bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "window.lateRuns ?? 0"}})
	if err != nil || !res.OK || string(res.Results[0].Value) != "0" {
		t.Fatalf("after the thaw, the late plans' evals ran: %+v, %v", res, err)
	}
	r := framebus(t, n.env, "", "frames", "--tab", tab)
	for _, f := range frameLines(t, r.stdout) {
		if f.PlanID == byContext.ID || f.PlanID == byPlan.ID {
			t.Errorf("the tab has a frame of a late plan: %+v", f)
		}
	}
}

// checkOutcomeUnknown fails unless err is outcome_unknown naming plan id
// and how to look at tab's frames.
func checkOutcomeUnknown(t *testing.T, err error, id, tab string) {
	t.Helper()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if protocol.CodeOf(err) != protocol.CodeOutcomeUnknown || !strings.Contains(msg, "plan "+id+" ") || !strings.Contains(msg, "framebus frames --tab "+tab) {
		t.Errorf("a plan to a frozen node: %q (%s); want outcome_unknown naming plan %s and how to look", msg, protocol.CodeOf(err), id)
	}
}

// planFile is a plan as the CLI reads it, with a deadline d from now.
func planFile(t *testing.T, id, expression string, d time.Duration) string {
	t.Helper()
	data, err := json.Marshal(protocol.Plan{ID: id, Deadline: time.Now().Add(d), Action: &protocol.Action{Type: "eval", Expression: expression}})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
