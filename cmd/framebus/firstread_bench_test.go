package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/benchkit"
	"github.com/framebus/framebus/internal/testchild"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// firstReadPages are the documentation pages BenchmarkFirstSnapshot
// reads, under Debian's rust-doc: an index, book and reference chapters,
// and the largest pages of the standard library (Vec's snapshot is about
// 600 KB).
var firstReadPages = []string{
	"std/index.html",
	"book/ch04-01-what-is-ownership.html",
	"book/ch08-02-strings.html",
	"reference/expressions.html",
	"rust-by-example/hello.html",
	"std/vec/struct.Vec.html",
	"std/string/struct.String.html",
	"std/iter/trait.Iterator.html",
	"std/collections/struct.HashMap.html",
}

// BenchmarkFirstSnapshot measures the first read of a page after its
// load on a real documentation set (the rust documentation of Debian's
// rust-doc, served on loopback; $FRAMEBUS_BENCH_DOCS names another
// directory with the same pages), in one run and interleaved, page by
// page, with the peer:
//
//   - framebus: navigate --wait, then snapshot with its defaults, sent
//     by bus/client from this process (logged in with the agent's
//     credentials file) to a node started as serve;
//   - playwright: page.goto, then the body's ariaSnapshot
//     (testdata/mcptasks/firstread.mjs, its own process and Chromium).
//
// Both browsers resolve no name but the docs server's: the mdBook pages
// fetch https://play.rust-lang.org as they load, which this machine
// (no internet) leaves hanging up to seconds now and then, where a
// machine online has its answer in a round trip. A snapshot waits for
// the requests in flight (up to 2 s, then it takes them for long polls),
// Playwright's read does not; so the benchmark would time the sandbox's
// resolver. $FRAMEBUS_BENCH_ONLINE=1 keeps the machine's resolver.
//
// Each of b.N rounds visits every page 20 times (run it with -benchtime
// 1x: a longer run logs its first, shorter run). It logs per page each
// side's p50 (load, read, both), the page's own load time, the bytes
// read, and which words of Playwright's read framebus's has nowhere (its
// content is to be the same or better). It reports per page
// and for the set (the sum of the pages' p50s) the ratio of framebus's
// load+read to Playwright's (the target: at most 1 on every page), and
// of all but the page's own load (the tools' share: serve's browser
// loads a page in its sandbox, under its own account; Playwright's runs
// as root without one). $FRAMEBUS_BENCH_SERVE_ENV adds environment
// variables to serve's, as for BenchmarkServeEval. Needs `apt-get
// install rust-doc` and `npm ci --prefix testdata/mcptasks` (not CI's).
func BenchmarkFirstSnapshot(b *testing.B) {
	docs := os.Getenv("FRAMEBUS_BENCH_DOCS")
	if docs == "" {
		docs = "/usr/share/doc/rust-doc/html"
	}
	for _, p := range firstReadPages {
		if _, err := os.Stat(filepath.Join(docs, p)); err != nil {
			b.Fatalf("the documentation set is not there (apt-get install rust-doc, or FRAMEBUS_BENCH_DOCS): %v", err)
		}
	}
	script := filepath.Join("..", "..", "testdata", "mcptasks", "firstread.mjs")
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "playwright-core")); err != nil {
		b.Fatalf("Playwright is not installed: npm ci --prefix testdata/mcptasks (%v)", err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(docs)))
	defer srv.Close()
	chromium, err := cdpdriver.FindChromium()
	if err != nil {
		b.Fatal(err)
	}
	if os.Getenv("FRAMEBUS_BENCH_ONLINE") == "" {
		// Where the browser's account can run it.
		wrapper := filepath.Join(testdir.Enterable(b), "chromium")
		script := "#!/bin/sh\nexec " + chromium + " '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1' \"$@\"\n"
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			b.Fatal(err)
		}
		chromium = wrapper
	}
	n := startNode(b, append(strings.Fields(os.Getenv("FRAMEBUS_BENCH_SERVE_ENV")), "FRAMEBUS_CHROMIUM="+chromium)...)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Minute))
	defer cancel()
	bc, err := busclient.Connect(ctx, busclient.Options{CredentialsFile: n.credsFile(serving.AgentCredsFile)})
	if err != nil {
		b.Fatal(err)
	}
	defer bc.Close()
	peer := startFirstReadPeer(b, ctx, script, chromium)
	defer peer.close()

	// load and read: the navigation's and the first read's times; page:
	// the page's own load time, as it tells (what is left of load is the
	// driver's).
	// $FRAMEBUS_BENCH_NETWORK_IDLE=1: the snapshot waits for network
	// idle, as it did by default before it settled.
	networkIdle := os.Getenv("FRAMEBUS_BENCH_NETWORK_IDLE") != ""
	type sample struct{ load, read, page, settle time.Duration }
	var fb, pw = map[string][]sample{}, map[string][]sample{}
	fbBytes, pwBytes := map[string]int{}, map[string]int{}
	fbText, pwText := map[string]string{}, map[string]string{}
	framebus := func(page string) {
		t0 := time.Now()
		nav, err := bc.Plan(ctx, n.tab(), protocol.Plan{Action: &protocol.Action{Type: "navigate", URL: srv.URL + "/" + page, Wait: true}})
		if err != nil || !nav.OK {
			b.Fatalf("framebus navigate %s: %v %+v", page, err, nav)
		}
		t1 := time.Now()
		snap, err := bc.Plan(ctx, n.tab(), protocol.Plan{Action: &protocol.Action{Type: "snapshot", NetworkIdle: networkIdle}})
		if err != nil || !snap.OK {
			b.Fatalf("framebus snapshot %s: %v %+v", page, err, snap)
		}
		t2 := time.Now()
		var v struct {
			Text    string `json:"text"`
			Settled struct {
				Waited protocol.Duration `json:"waited"`
			} `json:"settled"`
		}
		if err := json.Unmarshal(snap.Results[0].Value, &v); err != nil {
			b.Fatal(err)
		}
		loaded, err := bc.Plan(ctx, n.tab(), protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: inPageLoadJS}})
		var inPage float64
		if err != nil || !loaded.OK || json.Unmarshal(loaded.Results[0].Value, &inPage) != nil {
			b.Fatalf("framebus: the page's load time: %v %+v", err, loaded)
		}
		fb[page] = append(fb[page], sample{t1.Sub(t0), t2.Sub(t1), ms(inPage), v.Settled.Waited.Std()})
		fbBytes[page], fbText[page] = len(v.Text), v.Text
	}
	playwright := func(page string) {
		r := peer.read(b, srv.URL+"/"+page)
		pw[page] = append(pw[page], sample{ms(r.LoadMs), ms(r.ReadMs), ms(r.InPageMs), 0})
		pwBytes[page], pwText[page] = r.Bytes, r.Text
	}
	b.ResetTimer()
	for i := range b.N * 20 {
		for j, page := range firstReadPages {
			if (i+j)%2 == 0 {
				framebus(page)
				playwright(page)
			} else {
				playwright(page)
				framebus(page)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op") // the ratios say more
	p50 := func(s []sample, part func(sample) time.Duration) time.Duration {
		d := make([]time.Duration, len(s))
		for i := range s {
			d[i] = part(s[i])
		}
		return benchkit.P50(d)
	}
	load := func(s sample) time.Duration { return s.load }
	read := func(s sample) time.Duration { return s.read }
	both := func(s sample) time.Duration { return s.load + s.read }
	inPage := func(s sample) time.Duration { return s.page }
	settle := func(s sample) time.Duration { return s.settle }
	// The tools' own share: all but the page's own load, which differs
	// from browser to browser (serve's runs in its sandbox, under its
	// own account; Playwright's as root without one).
	driver := func(s sample) time.Duration { return s.load + s.read - s.page }
	// Printed whole: a benchmark's log keeps its first ten lines.
	var table strings.Builder
	var worst, worstDriver float64
	var fbAll, pwAll time.Duration // the set's: the sum of its pages' p50s
	for _, page := range firstReadPages {
		ratio := float64(p50(fb[page], both)) / float64(p50(pw[page], both))
		driverRatio := float64(p50(fb[page], driver)) / float64(p50(pw[page], driver))
		worst, worstDriver = max(worst, ratio), max(worstDriver, driverRatio)
		fbAll, pwAll = fbAll+p50(fb[page], both), pwAll+p50(pw[page], both)
		fmt.Fprintf(&table, "%-38s framebus load %4dms (in page %4dms) read %4dms (settle %3dms) = %4dms %7d B | playwright load %4dms (in page %4dms) read %4dms = %4dms %7d B | time %.2f, outside the page %.2f, bytes %.2f\n",
			page, p50(fb[page], load).Milliseconds(), p50(fb[page], inPage).Milliseconds(), p50(fb[page], read).Milliseconds(), p50(fb[page], settle).Milliseconds(), p50(fb[page], both).Milliseconds(), fbBytes[page],
			p50(pw[page], load).Milliseconds(), p50(pw[page], inPage).Milliseconds(), p50(pw[page], read).Milliseconds(), p50(pw[page], both).Milliseconds(), pwBytes[page],
			ratio, driverRatio, float64(fbBytes[page])/float64(pwBytes[page]))
		b.ReportMetric(ratio, strings.TrimSuffix(filepath.Base(page), ".html")+"-framebus/playwright")
		missing, all, most := missingWords(fbText[page], pwText[page])
		fmt.Fprintf(&table, "%-38s distinct words in Playwright's read: %d, of which framebus's lacks %d %q\n", page, all, missing, most)
	}
	fmt.Print(table.String())
	b.ReportMetric(worst, "worst-framebus/playwright")
	b.ReportMetric(worstDriver, "worst-outside-page-framebus/playwright")
	b.ReportMetric(float64(fbAll)/float64(pwAll), "all-framebus/playwright")
}

// ms is a JavaScript millisecond count as a duration.
func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// firstReadPeer is firstread.mjs, running: a URL in, a line out.
type firstReadPeer struct {
	cmd *exec.Cmd
	in  interface{ Write([]byte) (int, error) }
	out *bufio.Scanner
}

type firstRead struct {
	LoadMs, ReadMs, InPageMs float64
	Bytes                    int
	Text                     string
}

// words are what the contents are compared by: both tools write the
// page's text, but in their own lines (Playwright quotes a paragraph's
// text where framebus writes its text nodes), so lines and names do not
// compare.
var words = regexp.MustCompile(`[\p{L}\p{N}]+`)

// peerSyntax are words Playwright writes of its own (roles, keys) where
// framebus writes others: not the page's.
var peerSyntax = map[string]bool{"url": true, "text": true, "code": true, "emphasis": true, "strong": true, "paragraph": true,
	"listitem": true, "rowgroup": true, "rowheader": true, "columnheader": true, "cell": true, "row": true, "term": true,
	"definition": true, "superscript": true, "subscript": true, "deletion": true, "insertion": true, "blockquote": true,
	"level": true, "img": true, "separator": true, "group": true, "figure": true, "caption": true, "generic": true, "ref": true}

// missingWords counts the distinct words of peer's text (its syntax
// aside) that own's has nowhere, and names a few.
func missingWords(own, peer string) (missing, all int, some []string) {
	have := map[string]bool{}
	for _, w := range words.FindAllString(strings.ToLower(own), -1) {
		have[w] = true
	}
	seen := map[string]bool{}
	for _, w := range words.FindAllString(strings.ToLower(peer), -1) {
		if seen[w] || peerSyntax[w] {
			continue
		}
		seen[w] = true
		if !have[w] {
			missing++
			some = append(some, w)
		}
	}
	slices.Sort(some)
	return missing, len(seen), some[:min(len(some), 12)]
}

// inPageLoadJS is a page's own load time in ms: from its navigation's
// start to the end of its load event.
const inPageLoadJS = `performance.timing.loadEventEnd - performance.timing.navigationStart`

func startFirstReadPeer(b *testing.B, ctx context.Context, script, chromium string) *firstReadPeer {
	cmd := testchild.DieWithTest(exec.CommandContext(ctx, "node", script, chromium))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	return &firstReadPeer{cmd: cmd, in: in, out: sc}
}

func (p *firstReadPeer) read(b *testing.B, url string) firstRead {
	if _, err := fmt.Fprintln(p.in, url); err != nil {
		b.Fatal(err)
	}
	if !p.out.Scan() {
		b.Fatalf("playwright: no answer for %s: %v", url, p.out.Err())
	}
	var r firstRead
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		b.Fatalf("playwright: %q: %v", p.out.Text(), err)
	}
	return r
}

func (p *firstReadPeer) close() {
	if c, ok := p.in.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	_ = p.cmd.Wait()
}
