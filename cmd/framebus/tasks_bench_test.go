package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testchild"
)

// BenchmarkMCPTasks runs whole tasks (testdata/site/tasks/tasks.json: a
// login, a search, a long form, a checkout, a documentation page ...)
// through framebus mcp, against a node started as serve, and through
// Playwright MCP in each of its ways (its snapshot file read whole, or
// only the lines looked for, or no snapshot and browser_snapshot when
// needed), with the same scripted model (testdata/mcptasks/run.mjs). It
// logs per task and in total: success, tool calls, the bytes the model
// reads (results, and what it reads of files and resources they point
// to) and wall time; and reports framebus's bytes against the peer's
// best way. Needs `npm ci --prefix testdata/mcptasks` (not CI's).
func BenchmarkMCPTasks(b *testing.B) {
	dir := filepath.Join("..", "..", "testdata", "mcptasks")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@playwright", "mcp")); err != nil {
		b.Fatalf("Playwright MCP is not installed: npm ci --prefix testdata/mcptasks (%v)", err)
	}
	tasksFile, err := filepath.Abs(filepath.Join("..", "..", "testdata", "site", "tasks", "tasks.json"))
	if err != nil {
		b.Fatal(err)
	}
	n := startNode(b)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	type row struct {
		Task, Server, Failed string
		OK                   bool
		Calls, Bytes, MS     int
	}
	servers := []string{"framebus", "playwright-read", "playwright-find", "playwright-none"}
	rows := map[string]map[string][]row{} // task -> server -> runs
	var order []string
	for range b.N {
		for _, server := range servers {
			cmd := testchild.DieWithTest(exec.Command("node", filepath.Join(dir, "run.mjs"), server, site(""), tasksFile, binary))
			cmd.Env = n.env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("%s: %v\n%s\n%s", server, err, out, stderr.String())
			}
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				var r row
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					b.Fatalf("%s: %q: %v", server, sc.Text(), err)
				}
				if rows[r.Task] == nil {
					rows[r.Task] = map[string][]row{}
					order = append(order, r.Task)
				}
				rows[r.Task][r.Server] = append(rows[r.Task][r.Server], r)
			}
		}
	}
	// The last run of each, and totals.
	var table strings.Builder
	fmt.Fprintf(&table, "%-22s", "task")
	for _, s := range servers {
		fmt.Fprintf(&table, " | %-28s", s+" ok calls bytes ms")
	}
	table.WriteString(" | fb/best\n")
	total := map[string]int{}
	okAll := map[string]int{}
	within, tasks := 0, 0
	for _, task := range order {
		fmt.Fprintf(&table, "%-22s", task)
		best := 0
		for _, s := range servers {
			runs := rows[task][s]
			if len(runs) == 0 {
				fmt.Fprintf(&table, " | %-28s", "-")
				continue
			}
			r := runs[len(runs)-1]
			fmt.Fprintf(&table, " | %-2v %5d %9d %8d", map[bool]string{true: "y", false: "N"}[r.OK], r.Calls, r.Bytes, r.MS)
			total[s] += r.Bytes
			if r.OK {
				okAll[s]++
			}
			if s != "framebus" && r.OK && (best == 0 || r.Bytes < best) {
				best = r.Bytes
			}
		}
		fb := rows[task]["framebus"]
		if best > 0 && len(fb) > 0 {
			ratio := float64(fb[len(fb)-1].Bytes) / float64(best)
			fmt.Fprintf(&table, " | %.2f", ratio)
			tasks++
			if ratio <= 0.5 {
				within++
			}
		}
		table.WriteString("\n")
		for _, s := range servers {
			for _, r := range rows[task][s] {
				if !r.OK {
					fmt.Fprintf(&table, "    %s failed: %s\n", s, r.Failed)
				}
			}
		}
	}
	fmt.Fprintf(&table, "%-22s", "total bytes (tasks ok)")
	bestTotal := 0
	for _, s := range servers {
		fmt.Fprintf(&table, " | %9d (%2d ok)%11s", total[s], okAll[s], "")
		if s != "framebus" && (bestTotal == 0 || total[s] < bestTotal) {
			bestTotal = total[s]
		}
	}
	table.WriteString("\n")
	fmt.Print(table.String()) // b.Log cuts long output
	b.ReportMetric(0, "ns/op")
	if bestTotal > 0 {
		b.ReportMetric(float64(total["framebus"])/float64(bestTotal), "fb/best-peer-bytes")
	}
	b.ReportMetric(float64(within), "tasks-within-0.5x")
	b.ReportMetric(float64(tasks), "tasks")
}
