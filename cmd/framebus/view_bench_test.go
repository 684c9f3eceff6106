package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors"
	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/benchkit"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// BenchmarkViewer measures framebus view as people run it: a node started
// as serve, framebus view as a process of its own logged in with the
// node's credentials file, its page in a second headless Chromium, and an
// agent in this process.
//
//   - picture: a page's change (its own clock) to the picture in the
//     viewer's page, decoded (p50, p99), beside its floor, the change to
//     the tab sending the picture (Chromium's screencast);
//   - input: a click on the viewer's picture (its handler's clock) to the
//     page's mousedown, beside the same input sent on the bus directly;
//   - bytes: what a tab animating at 60 fps costs the bus watched, and
//     once no one watches;
//   - sixteen tabs animating, all watched by one page: the CPU of the
//     node, its Chromium, the viewer and the viewer's browser.
//
// Run it with -benchtime 1x; it prints its table (fmt: a benchmark's log
// keeps 10 lines).
func BenchmarkViewer(b *testing.B) {
	for range b.N {
		benchViewer(b)
	}
}

func benchViewer(b *testing.B) {
	n := startNode(b)
	defer n.stop(syscall.SIGTERM, 30*time.Second)
	site := httptest.NewServer(http.FileServer(http.Dir(filepath.Join("..", "..", "testdata", "site"))))
	defer site.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Minute))
	defer cancel()
	bc, err := busclient.Connect(ctx, busclient.Options{CredentialsFile: n.credsFile(serving.AgentCredsFile)})
	if err != nil {
		b.Fatal(err)
	}
	defer bc.Close()
	// The person's own input on the bus, beside the viewer's: as the
	// operator the viewer is (only the person who has a tab acts in it).
	person, err := busclient.Connect(ctx, busclient.Options{CredentialsFile: n.credsFile(serving.OperatorCredsFile)})
	if err != nil {
		b.Fatal(err)
	}
	defer person.Close()
	tab := n.tab()
	plan := func(a protocol.Action) protocol.PlanResult {
		res, err := bc.Plan(ctx, tab, protocol.Plan{Action: &a})
		if err != nil || !res.OK {
			b.Fatalf("%s: %+v %v", a.Type, res, err)
		}
		return res
	}
	plan(protocol.Action{Type: "navigate", URL: site.URL + "/read.html", Wait: true})

	view := startProcessOf(b, binary, n.env, "view", "--listen", "127.0.0.1:0")
	defer view.stop(syscall.SIGTERM, 10*time.Second)
	var url string
	waitFor(b, "view prints its URL", 30*time.Second, func() bool {
		line, err := bufio.NewReader(strings.NewReader(view.stdout.String())).ReadString('\n')
		var out struct{ View string }
		if err == nil && json.Unmarshal([]byte(line), &out) == nil {
			url = out.View
		}
		return url != ""
	})
	browser, err := actors.StartBrowser(ctx, cdpdriver.LaunchOptions{Headless: true, WindowWidth: 1280, WindowHeight: 800}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer browser.Close()
	page, err := browser.OpenPage(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	eval := func(expr string, out any) {
		v, err := page.Eval(ctx, expr, 10*time.Second)
		if err != nil {
			b.Fatalf("viewer: %s: %v", expr, err)
		}
		if out != nil {
			_ = json.Unmarshal(v, out)
		}
	}
	until := func(expr string) {
		waitFor(b, expr, 30*time.Second, func() bool {
			v, err := page.Eval(ctx, "!!(document.body && ("+expr+"))", 10*time.Second)
			return err == nil && string(v) == "true" // a page loading again may not answer
		})
	}
	eval(fmt.Sprintf("location.hash = '#tab=%s'; location.reload()", tab), nil)
	until(`document.body.dataset.conn === "live" && window.framebusScreen`)
	// Every picture the viewer shows: when it was decoded, its colour at
	// the top left, and when the tab sent it.
	eval(`(() => {
		window.__pics = [];
		window.__readPics = true;
		const img = document.getElementById("screen"), c = document.createElement("canvas"), g = c.getContext("2d");
		img.addEventListener("load", () => {
			if (!window.__readPics) return;
			const at = Date.now(), sent = Date.parse(window.framebusScreen.meta.sent);
			c.width = img.naturalWidth; c.height = img.naturalHeight; g.drawImage(img, 0, 0);
			const d = g.getImageData(4, 4, 1, 1).data;
			window.__pics.push({at, sent, rgb: [d[0], d[1], d[2]]});
		});
	})()`, nil)

	// Pictures.
	var picture, floor []time.Duration
	for i := range 40 {
		rgb := [3]int{(i*67 + 40) % 256, (i*131 + 90) % 256, (i*29 + 160) % 256}
		res := plan(protocol.Action{Type: "eval", Expression: fmt.Sprintf(`document.body.style.background = "rgb(%d,%d,%d)"; Date.now()`, rgb[0], rgb[1], rgb[2])})
		var changed int64
		_ = json.Unmarshal(res.Results[0].Value, &changed)
		var got struct{ At, Sent int64 }
		waitFor(b, "the picture of a change", 20*time.Second, func() bool {
			eval(fmt.Sprintf(`window.__pics.find(p => p.at >= %d && Math.abs(p.rgb[0]-%d) < 12 && Math.abs(p.rgb[1]-%d) < 12 && Math.abs(p.rgb[2]-%d) < 12) || null`, changed, rgb[0], rgb[1], rgb[2]), &got)
			return got.At != 0
		})
		picture = append(picture, time.Duration(got.At-changed)*time.Millisecond)
		floor = append(floor, time.Duration(got.Sent-changed)*time.Millisecond)
	}

	// Input: the viewer takes over; clicks on its picture and on the bus
	// directly, interleaved. (The pictures' colours are not read now.)
	eval(`window.__readPics = false`, nil)
	plan(protocol.Action{Type: "eval", Expression: `document.addEventListener("mousedown", () => { let e = document.getElementById("__t"); if (!e) { e = document.createElement("p"); e.id = "__t"; document.body.append(e); } e.textContent = String(Date.now()); })`})
	eval(`document.getElementById("screen").addEventListener("mousedown", () => { window.__inAt = Date.now(); }, true)`, nil)
	page.Click(ctx, "#takeover", cdpdriver.ClickOptions{})
	until(`!document.getElementById("handback").disabled`)
	var at struct{ X, Y float64 }
	eval(`(() => { const r = document.getElementById("screen").getBoundingClientRect(); return {X: r.left + r.width / 2, Y: r.top + r.height / 2}; })()`, &at)
	pageDown := func(last int64) int64 {
		var v int64
		waitFor(b, "the page's mousedown", 20*time.Second, func() bool {
			res, err := bc.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "text", Selector: "#__t"}})
			if err == nil && res.OK {
				var s string
				_ = json.Unmarshal(res.Results[0].Value, &s)
				v, _ = strconv.ParseInt(s, 10, 64)
			}
			time.Sleep(2 * time.Millisecond)
			return v > last
		})
		return v
	}
	var viaViewer, viaBus []time.Duration
	var last int64
	for range 30 {
		for _, ev := range []string{"down", "up"} {
			if err := page.PersonMouse(ctx, ev, at.X, at.Y, "left", 1, 0, 0, 0); err != nil {
				b.Fatal(err)
			}
		}
		last = pageDown(last)
		var inAt int64
		eval(`window.__inAt`, &inAt)
		viaViewer = append(viaViewer, time.Duration(last-inAt)*time.Millisecond)
		sent := time.Now().UnixMilli()
		for _, ev := range []string{"down", "up"} {
			if _, err := person.Input(ctx, tab, protocol.InputRequest{Type: protocol.InputMouse, Event: ev, X: 20, Y: 20, ClickCount: 1}); err != nil {
				b.Fatal(err)
			}
		}
		last = pageDown(last)
		viaBus = append(viaBus, time.Duration(last-sent)*time.Millisecond)
	}
	page.Click(ctx, "#handback", cdpdriver.ClickOptions{})
	until(`document.getElementById("handback").disabled`)

	// Bytes on the bus: watched, then not.
	plan(protocol.Action{Type: "navigate", URL: site.URL + "/anim.html", Wait: true})
	var bytes, msgs atomic.Int64
	sub, err := bc.Conn().Subscribe(bc.Subjects().TabEvents("*", "screen"), func(m *nats.Msg) {
		bytes.Add(int64(len(m.Data) + len(m.Header.Get(protocol.ScreenHeader))))
		msgs.Add(1)
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	rate := func(d time.Duration) (float64, float64) {
		bytes.Store(0)
		msgs.Store(0)
		time.Sleep(d)
		return float64(bytes.Load()) / d.Seconds(), float64(msgs.Load()) / d.Seconds()
	}
	time.Sleep(time.Second)
	watchedBytes, watchedPics := rate(5 * time.Second)
	eval(`window.framebusWatch([])`, nil)
	time.Sleep(time.Duration(protocol.DefaultWatch+1) * time.Second) // the last lease runs out
	idleBytes, idlePics := rate(5 * time.Second)
	eval(`window.framebusWatch([], [`+strconv.Quote(tab)+`])`, nil)
	time.Sleep(time.Second)
	thumbBytes, thumbPics := rate(5 * time.Second)
	eval(`window.framebusWatch([])`, nil)
	time.Sleep(time.Duration(protocol.DefaultWatch+1) * time.Second)

	// Sixteen tabs animating, all watched.
	tabs := []string{tab}
	for range 15 {
		info, err := bc.NewTab(ctx, "", site.URL+"/anim.html")
		if err != nil {
			b.Fatal(err)
		}
		tabs = append(tabs, info.Tab)
	}
	time.Sleep(2 * time.Second)
	procs := map[string][]int{
		"node (serve)":      {n.process.cmd.Process.Pid},
		"node's Chromium":   childrenOf(n.process.cmd.Process.Pid),
		"viewer (view)":     {view.cmd.Process.Pid},
		"viewer's Chromium": append([]int{browser.Process().Pid()}, childrenOf(browser.Process().Pid())...),
	}
	// The CPU of 10 s: first of the sixteen animating unwatched, then
	// watched.
	measure := func() (map[string]float64, float64, float64) {
		before := map[string]float64{}
		for k, pids := range procs {
			before[k] = cpuSeconds(pids)
		}
		bytes, pics := rate(10 * time.Second)
		cpu := map[string]float64{}
		for k, pids := range procs {
			cpu[k] = (cpuSeconds(pids) - before[k]) / 10
		}
		return cpu, bytes, pics
	}
	unwatched, _, _ := measure()
	list, _ := json.Marshal(tabs)
	eval(`window.framebusWatch(`+string(list)+`)`, nil)
	time.Sleep(2 * time.Second)
	cpu, sixteenBytes, sixteenPics := measure()
	eval(`window.framebusWatch([], `+string(list)+`)`, nil)
	time.Sleep(time.Duration(protocol.DefaultWatch+1) * time.Second) // the full leases run out
	thumbCPU, sixteenThumbBytes, sixteenThumbPics := measure()

	p50, p99 := func(d []time.Duration) time.Duration { return benchkit.P50(d) }, func(d []time.Duration) time.Duration { return benchkit.Percentile(d, 99) }
	var out strings.Builder
	fmt.Fprintf(&out, "\nBenchmarkViewer (%d pictures, %d clicks each way)\n", len(picture), len(viaViewer))
	fmt.Fprintf(&out, "picture: change -> viewer p50 %v p99 %v; floor (change -> tab sends it) p50 %v p99 %v; ratio p50 %.2f\n",
		p50(picture), p99(picture), p50(floor), p99(floor), float64(p50(picture))/float64(max(p50(floor), time.Millisecond)))
	fmt.Fprintf(&out, "input: viewer click -> page p50 %v p99 %v; bus input -> page p50 %v p99 %v; ratio p50 %.2f\n",
		p50(viaViewer), p99(viaViewer), p50(viaBus), p99(viaBus), float64(p50(viaViewer))/float64(max(p50(viaBus), time.Millisecond)))
	fmt.Fprintf(&out, "bus, one tab at 60 fps: watched %.0f B/s (%.1f pictures/s); as a thumbnail %.0f B/s (%.1f pictures/s); no one watching %.0f B/s (%.1f pictures/s)\n",
		watchedBytes, watchedPics, thumbBytes, thumbPics, idleBytes, idlePics)
	fmt.Fprintf(&out, "16 tabs at 60 fps, all watched: %.0f B/s (%.1f pictures/s) on the bus; CPU (cores):", sixteenBytes, sixteenPics)
	for _, k := range []string{"node (serve)", "node's Chromium", "viewer (view)", "viewer's Chromium"} {
		fmt.Fprintf(&out, " %s %.2f (unwatched %.2f);", k, cpu[k], unwatched[k])
	}
	fmt.Fprintf(&out, "\n16 tabs at 60 fps as thumbnails: %.0f B/s (%.1f pictures/s); CPU (cores):", sixteenThumbBytes, sixteenThumbPics)
	for _, k := range []string{"node (serve)", "node's Chromium", "viewer (view)", "viewer's Chromium"} {
		fmt.Fprintf(&out, " %s %.2f;", k, thumbCPU[k])
	}
	fmt.Print(out.String() + "\n")
}

// childrenOf lists the processes below pid, from /proc.
func childrenOf(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	var walk func(int)
	walk = func(of int) {
		for p, pp := range parent {
			if pp == of {
				out = append(out, p)
				walk(p)
			}
		}
	}
	walk(pid)
	return out
}

// cpuSeconds is the user and system CPU time of pids, now.
func cpuSeconds(pids []int) float64 {
	var ticks float64
	for _, pid := range pids {
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		if len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			s, _ := strconv.ParseFloat(f[12], 64)
			ticks += u + s
		}
	}
	return ticks / 100 // USER_HZ
}
