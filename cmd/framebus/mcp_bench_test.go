package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/benchkit"
	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// BenchmarkMCPEvalVsNATS measures, in one run and interleaved so machine
// noise hits both alike, an `eval 1+1` as an MCP tool call (browser_eval,
// the Go SDK's client speaking to a framebus mcp process over stdio)
// against the same one-action plan sent over NATS (bus/client Plan) to
// the same node's tab: the difference is what the MCP server adds (its
// process hop, JSON-RPC, the result's text and structure). Beside them
// it times an MCP ping over the same stdio (the transport alone, no
// framebus work), so the plan plus the ping is the floor of any MCP
// server on NATS. It reports each p50 and the ratios.
//
// Then what a model reads of testdata/site/table.html (the big table:
// 1,000 rows with a link, a button and a field each, as the snapshot
// benchmark's page; Playwright MCP's ariaSnapshot of it is 317 KB) and
// big.html (3,000 rows of text with a link each): the navigation's
// result (a summary past the page budget) and a search for one of its
// links, beside the whole snapshot.
func BenchmarkMCPEvalVsNATS(b *testing.B) {
	n := startNode(b)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	tab := n.tab()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Minute))
	defer cancel()

	creds, err := serving.ReadCredentials(filepath.Join(filepath.Dir(n.stateFile), "credentials.json"))
	if err != nil {
		b.Fatal(err)
	}
	bc, err := busclient.Connect(ctx, busclient.Options{Credentials: &creds})
	if err != nil {
		b.Fatal(err)
	}
	defer bc.Close()
	cmd := testchild.DieWithTest(exec.Command(binary, "mcp"))
	cmd.Env = n.env
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()

	viaMCP := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_eval", Arguments: map[string]any{"expression": "1+1", "tab": tab}})
		if err != nil || res.IsError {
			b.Fatalf("browser_eval 1+1: %v %+v", err, res)
		}
		if out, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(out), `"value":2`) {
			b.Fatalf("browser_eval 1+1: %s", out)
		}
	}
	plan := protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}}
	viaNATS := func() {
		res, err := bc.Plan(ctx, tab, plan)
		if err != nil || !res.OK || string(res.Results[0].Value) != "2" {
			b.Fatalf("plan eval 1+1: %v %+v", err, res)
		}
	}
	ping := func() {
		if err := cs.Ping(ctx, nil); err != nil {
			b.Fatalf("ping: %v", err)
		}
	}
	for range 20 { // warm them up
		viaMCP()
		viaNATS()
		ping()
	}
	var mcpT, natsT, pingT []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		viaMCP()
		t1 := time.Now()
		viaNATS()
		t2 := time.Now()
		ping()
		mcpT, natsT, pingT = append(mcpT, t1.Sub(t0)), append(natsT, t2.Sub(t1)), append(pingT, time.Since(t2))
	}
	b.StopTimer()
	m, p, g := benchkit.P50(mcpT), benchkit.P50(natsT), benchkit.P50(pingT)
	b.ReportMetric(float64(m.Microseconds()), "mcp-stdio-p50-µs")
	b.ReportMetric(float64(p.Microseconds()), "nats-plan-p50-µs")
	b.ReportMetric(float64(g.Microseconds()), "mcp-ping-p50-µs")
	b.ReportMetric(float64(m)/float64(p), "mcp/nats")
	b.ReportMetric(float64(m)/float64(p+g), "mcp/(nats+ping)")

	// What a model reads of a big page: the navigation's result (a
	// summary and where to read the page, past the budget), and a search
	// of it for one element; beside the whole snapshot, read from its
	// resource.
	sizes := func(page, find, want string) (result, search, whole int) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{"url": site(page), "wait": true, "tab": tab}})
		if err != nil || res.IsError {
			b.Fatalf("navigate to %s: %v %+v", page, err, res)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		structured, _ := json.Marshal(res.StructuredContent)
		var out struct{ Page struct{ PageResource string } }
		if json.Unmarshal(structured, &out) != nil || out.Page.PageResource == "" {
			b.Fatalf("navigate to %s: no page resource in %s", page, structured)
		}
		found, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_snapshot", Arguments: map[string]any{"search": find, "tab": tab}})
		if err != nil || found.IsError || !strings.Contains(found.Content[0].(*mcp.TextContent).Text, want) {
			b.Fatalf("search %q on %s: %v %+v", find, page, err, found)
		}
		read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: out.Page.PageResource})
		if err != nil {
			b.Fatalf("read %s: %v", out.Page.PageResource, err)
		}
		return len(text), len(found.Content[0].(*mcp.TextContent).Text), len(read.Contents[0].Text)
	}
	result, search, whole := sizes("/table.html", "Order 1000", `link "Order 1000"`)
	b.ReportMetric(float64(result), "table-navigate-result-bytes")
	b.ReportMetric(float64(search), "table-search-result-bytes")
	b.ReportMetric(float64(whole), "table-snapshot-bytes")
	b.ReportMetric(float64(result+search)/317_000, "table-read/playwright-317KB")
	result, search, whole = sizes("/big.html", "link 2999", `link "link 2999"`)
	b.ReportMetric(float64(result), "big-navigate-result-bytes")
	b.ReportMetric(float64(search), "big-search-result-bytes")
	b.ReportMetric(float64(whole), "big-snapshot-bytes")
}
