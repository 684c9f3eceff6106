package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssKB is the resident set of process pid in kB, from /proc.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	kb, err := readRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

func readRSS(pid int) (int, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// TestLargeValuesDoNotStayInMemory: small plans that make the page hold
// 100 MB (an eval's value, a page's text) leave the node's memory where
// it was: the page refuses what is too large before it crosses CDP, and
// nothing large stays referenced. The figures are logged for the note:
// idle, the peak seen, and where it settles.
func TestLargeValuesDoNotStayInMemory(t *testing.T) {
	n := startNode(t)
	pid := n.cmd.Process.Pid
	tabs := []string{n.tab()}
	for range 3 {
		opened := mustOK(t, n.env, "tab", "new", site("/index.html"))
		tabs = append(tabs, opened["tab"].(map[string]any)["tab"].(string))
	}
	// Warm: every path the cases take has run once with small values.
	for _, tab := range tabs {
		mustOK(t, n.env, "navigate", site("/huge.html?mb=1"), "--wait", "--tab", tab)
		mustOK(t, n.env, "eval", "'x'.repeat(1000)", "--tab", tab)
		mustOK(t, n.env, "text", "--tab", tab)
		mustOK(t, n.env, "snapshot", "--tab", tab)
	}
	idle := rssKB(t, pid)
	t.Logf("idle: %d MB", idle>>10)

	// sample keeps the highest resident set seen until stop is called.
	sample := func() (stop func() int) {
		done, peak := make(chan struct{}), make(chan int)
		go func() {
			high := 0
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				if kb, err := readRSS(pid); err == nil {
					high = max(high, kb)
				}
				select {
				case <-done:
					peak <- high
					return
				case <-tick.C:
				}
			}
		}()
		return func() int { close(done); return <-peak }
	}

	// settled waits for the node's memory to come back within 2x idle.
	settled := func(what string, peak int) {
		t.Helper()
		var now int
		waitFor(t, what+": the node's memory back within 2x idle", 20*time.Second, func() bool {
			now = rssKB(t, pid)
			return now <= 2*idle
		})
		t.Logf("%s: peak seen %d MB, after %d MB (idle %d MB)", what, peak>>10, now>>10, idle>>10)
	}
	refused := func(r result, what string) {
		t.Helper()
		m := r.reply(t)
		if r.status == 0 || m["code"] != "result_too_large" {
			t.Errorf("%s: exit %d, %v; want result_too_large", what, r.status, m)
		}
	}

	// One tab: an 83-byte eval whose value is 100 MB.
	stop := sample()
	r := framebus(t, n.env, "", "eval", "'x'.repeat(100 << 20)", "--tab", tabs[0])
	peak := stop()
	refused(r, "eval of 100 MB")
	settled("eval of 100 MB on one tab", peak)

	// Four tabs at once: the same eval.
	stop = sample()
	var wg sync.WaitGroup
	results := make([]result, len(tabs))
	for i, tab := range tabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = framebus(t, n.env, "", "eval", "'x'.repeat(100 << 20)", "--tab", tab)
		}()
	}
	wg.Wait()
	peak = stop()
	for i, r := range results {
		refused(r, fmt.Sprintf("tab %d: eval of 100 MB", i))
	}
	settled("eval of 100 MB on four tabs at once", peak)

	// A page of 24 MB of text: more than a frame or a reply carries. Its
	// frame comes without content, its reads are refused, in the page.
	stop = sample()
	nav := mustOK(t, n.env, "navigate", site("/huge.html?mb=24"), "--wait", "--timeout", "2m", "--tab", tabs[0])
	for _, read := range []string{"text", "snapshot", "html"} {
		refused(framebus(t, n.env, "", read, "--timeout", "2m", "--tab", tabs[0]), read+" of a 24 MB page")
	}
	peak = stop()
	t.Logf("navigate: %.300v", nav)
	settled("a 24 MB page: its frame, text, snapshot and html", peak)
}
