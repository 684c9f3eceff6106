package cdpdriver

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mafredri/cdp"
	cdpruntime "github.com/mafredri/cdp/protocol/runtime"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/internal/testscale"
)

// pipeTestLaunch launches a browser of the test's own (these tests stop
// it) with a browser connection and one blank tab.
func pipeTestLaunch(t *testing.T) (*Process, *Browser, string) {
	t.Helper()
	launchTestNeedChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(60*time.Second))
	defer cancel()
	p, err := Launch(ctx, LaunchOptions{Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	b, err := p.Connect(ctx, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	id, err := b.NewTarget(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	return p, b, id
}

// pipeTestStop stops the browser (SIGSTOP) until the returned function,
// or the test's end, continues it.
func pipeTestStop(t *testing.T, p *Process) (cont func()) {
	t.Helper()
	if err := syscall.Kill(p.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont = func() { syscall.Kill(p.Pid(), syscall.SIGCONT) }
	t.Cleanup(cont)
	return cont
}

// Commands to a session the browser already dropped are answered on no
// session with the tab's ids; an attach waiting meanwhile still gets its
// own reply, and the session works. (With the transport's ids starting
// at 1, the attach took the reply to the tab's id 3 and failed, its
// session left attached.)
func TestPipeDroppedSessionRepliesWithChromium(t *testing.T) {
	p, b, target := pipeTestLaunch(t)
	tr := b.pipe
	cont := pipeTestStop(t, p)
	// Stopped, the browser answers nothing before the attach waits.
	const gone = "DEADBEEFDEADBEEFDEADBEEFDEADBEEF"
	for _, id := range []uint64{1, 2, 3, 4, 5, 6, 7, 8, postedIDs + 1, postedIDs + 2} {
		if err := tr.write(gone, fmt.Appendf(nil, `{"id":%d,"method":"Runtime.evaluate","params":{"expression":"1"}}`, id)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	done := pipeTestAttachLater(ctx, tr, target)
	launchTestWaitFor(t, 10*time.Second, "the attach waits for its reply", func() error {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if len(tr.calls) == 0 {
			return fmt.Errorf("no call waiting")
		}
		return nil
	})
	cont()
	a := <-done
	if a.err != nil {
		t.Fatalf("attach while the browser answered a dropped session's commands: %v", a.err)
	}
	conn, err := dialPipe(ctx, a.c)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := cdp.NewClient(conn).Runtime.Evaluate(ctx, cdpruntime.NewEvaluateArgs("6*7"))
	if err != nil || string(r.Result.Value) != "42" {
		t.Fatalf("the attached session evaluates: %v, %v", r, err)
	}
}

// With the browser stopped and its pipe full, a command fails by its
// context's deadline, another tab's Close returns at once, and the
// browser connection's commands fail by theirs; continued, the browser
// answers again.
func TestPipeStoppedBrowserWithChromium(t *testing.T) {
	p, b, one := pipeTestLaunch(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(60*time.Second))
	defer cancel()
	two, err := b.NewTarget(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	c1, err := b.DialPage(ctx, one)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := b.DialPage(ctx, two)
	if err != nil {
		t.Fatal(err)
	}
	cont := pipeTestStop(t, p)

	// More than the pipe holds: the rest waits for a reader.
	callCtx, cancelCall := context.WithTimeout(ctx, testscale.D(2*time.Second))
	defer cancelCall()
	_, err = cdp.NewClient(c1).Runtime.Evaluate(callCtx, cdpruntime.NewEvaluateArgs("'"+strings.Repeat("a", 512<<10)+"'.length"))
	if err == nil || callCtx.Err() == nil {
		t.Fatalf("a command to a stopped browser: %v; want it failed by its deadline", err)
	}

	closed := make(chan error, 1)
	go func() { closed <- c2.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("another tab's Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("another tab's Close waits for the stopped browser")
	}

	targetsCtx, cancelTargets := context.WithTimeout(ctx, testscale.D(2*time.Second))
	defer cancelTargets()
	if _, err := b.Targets(targetsCtx); err == nil {
		t.Fatal("the browser connection answered while the browser was stopped")
	}

	cont()
	r, err := cdp.NewClient(c1).Runtime.Evaluate(ctx, cdpruntime.NewEvaluateArgs("6*7"))
	if err != nil || string(r.Result.Value) != "42" {
		t.Fatalf("after the browser continued: %v, %v", r, err)
	}
	if _, err := b.Targets(ctx); err != nil {
		t.Fatalf("the browser connection after the browser continued: %v", err)
	}
}

// pipeTestHeap is the heap in use after collecting, and the process's
// resident size after returning free memory to the system, in MiB.
func pipeTestHeap() (heap, rss uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &rss)
		}
	}
	return ms.HeapInuse >> 20, rss >> 10
}

// A 50 MB reply over the pipe, and four at once on four tabs, leave
// nothing large referenced once read (issue 19 §5): the heap is back near
// where it was with the tabs still open. (The framer's buffer used to stay at the largest message:
// 64 MiB for the life of the browser.)
func TestPipeBigReplyLeavesNothingWithChromium(t *testing.T) {
	_, b, target := pipeTestLaunch(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(4*time.Minute))
	defer cancel()
	page, err := b.ConnectPage(ctx, target, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()
	if _, err := page.Eval(ctx, "1", testscale.D(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	heap0, rss0 := pipeTestHeap()
	v, err := page.Eval(ctx, "'x'.repeat(50e6)", testscale.D(100*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 50e6+2 {
		t.Fatalf("the value is %d bytes; want 50 MB and its quotes", len(v))
	}
	v = nil
	heap1, rss1 := pipeTestHeap()
	t.Logf("heap in use: %d MiB before, %d MiB after a 50 MB reply; RSS %d MiB, %d MiB", heap0, heap1, rss0, rss1)
	if heap1 > heap0+16 {
		t.Errorf("%d MiB more heap in use after a 50 MB reply was read and dropped; want nothing large left", heap1-heap0)
	}
	if _, err := page.Eval(ctx, "1", testscale.D(10*time.Second)); err != nil {
		t.Fatalf("the tab after the large reply: %v", err)
	}

	// Four at once, on four tabs: 20 MB each, enough to overlap on the
	// pipe (a 50 MB one each took minutes under -race on a busy machine).
	pages := []*Page{page}
	for range 3 {
		id, err := b.NewTarget(ctx, "about:blank")
		if err != nil {
			t.Fatal(err)
		}
		pg, err := b.ConnectPage(ctx, id, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		pages = append(pages, pg)
	}
	errs := make(chan error, len(pages))
	for _, pg := range pages {
		go func() {
			v, err := pg.Eval(ctx, "'x'.repeat(20e6)", testscale.D(100*time.Second))
			if err == nil && len(v) != 20e6+2 {
				err = fmt.Errorf("a value of %d bytes", len(v))
			}
			errs <- err
		}()
	}
	for range pages {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	heap4, rss4 := pipeTestHeap()
	t.Logf("after four 20 MB replies on four tabs at once: heap in use %d MiB, RSS %d MiB", heap4, rss4)
	if heap4 > heap0+16 {
		t.Errorf("%d MiB more heap in use after four 20 MB replies at once; want nothing large left", heap4-heap0)
	}
}
