package cdpdriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testdir"
)

// runAsTestProc is what a test needs of one process of a browser.
type runAsTestProc struct {
	pid     int
	uid     int    // real uid
	seccomp string // Seccomp: 0 none, 2 filter
	cmdline string
}

// runAsTestProcs lists the live processes of the browser's group.
func runAsTestProcs(pgid int) []runAsTestProc {
	entries, _ := os.ReadDir("/proc")
	var out []runAsTestProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, _, _, pg, ok := launchTestStat(pid); !ok || pg != pgid || launchTestGone(pid) == nil {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		p := runAsTestProc{pid: pid, uid: -1}
		for _, line := range strings.Split(string(status), "\n") {
			k, v, _ := strings.Cut(line, ":")
			f := strings.Fields(v)
			switch {
			case k == "Uid" && len(f) > 0:
				p.uid, _ = strconv.Atoi(f[0])
			case k == "Seccomp" && len(f) > 0:
				p.seccomp = f[0]
			}
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		p.cmdline = strings.ReplaceAll(string(cmd), "\x00", " ")
		out = append(out, p)
	}
	return out
}

// TestLaunchAsRootRunsChromiumUnprivileged: when the tests run as root
// (as CI does), no process of a launched browser is root, none runs
// without its sandbox, and its renderers are inside seccomp's filter;
// the profile is the browser account's, and it can still be reused.
func TestLaunchAsRootRunsChromiumUnprivileged(t *testing.T) {
	launchTestNeedChromium(t)
	if os.Geteuid() != 0 {
		t.Fatal("this test checks what Launch does for root: run the tests as root (CI does)")
	}
	dir := filepath.Join(testdir.Enterable(t), "profile")
	p, err := Launch(context.Background(), LaunchOptions{Headless: true, UserDataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	u := p.User()
	if u == nil || u.Name != DefaultBrowserUser || u.UID == 0 {
		t.Fatalf("User() = %+v; want %s, not root", u, DefaultBrowserUser)
	}
	var procs []runAsTestProc
	// A renderer enters its seccomp filter a moment after it starts.
	launchTestWaitFor(t, 15*time.Second, "a renderer runs inside its seccomp filter", func() error {
		procs = runAsTestProcs(p.Pid())
		renderers := 0
		for _, pr := range procs {
			if strings.Contains(pr.cmdline, "--type=renderer") {
				renderers++
				if pr.seccomp != "2" {
					return fmt.Errorf("renderer %d: Seccomp %s", pr.pid, pr.seccomp)
				}
			}
		}
		if renderers == 0 {
			return fmt.Errorf("%d processes, none a renderer", len(procs))
		}
		return nil
	})
	root, unsandboxed := 0, 0
	for _, pr := range procs {
		if pr.uid != u.UID {
			root++
			t.Errorf("pid %d runs as uid %d, not %s (%d): %.120s", pr.pid, pr.uid, u.Name, u.UID, pr.cmdline)
		}
		if strings.Contains(pr.cmdline, "--no-sandbox") {
			unsandboxed++
			t.Errorf("pid %d runs with --no-sandbox: %.120s", pr.pid, pr.cmdline)
		}
	}
	t.Logf("%d processes: %d not the browser's account, %d without sandbox", len(procs), root, unsandboxed)
	for _, path := range []string{dir, filepath.Join(dir, "Local State")} {
		if uid := launchTestOwner(t, path); uid != u.UID {
			t.Errorf("%s is uid %d's; want the browser account's (%d)", path, uid, u.UID)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Launch(context.Background(), LaunchOptions{Headless: true, UserDataDir: dir})
	if err != nil {
		t.Fatalf("the profile again: %v", err)
	}
	again.Close()
}

// TestLaunchAsRootByChoice: User RootUser keeps the old way (root, no
// sandbox), for machines where the sandbox cannot run.
func TestLaunchAsRootByChoice(t *testing.T) {
	launchTestNeedChromium(t)
	if os.Geteuid() != 0 {
		t.Fatal("this test checks what Launch does for root: run the tests as root (CI does)")
	}
	p, err := Launch(context.Background(), LaunchOptions{Headless: true, User: RootUser})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.User() != nil {
		t.Errorf("User() = %+v; want nil (this process's)", p.User())
	}
	procs := runAsTestProcs(p.Pid())
	if len(procs) == 0 || procs[0].uid != 0 || !strings.Contains(procs[0].cmdline, "--no-sandbox") {
		t.Errorf("browser process %+v; want root with --no-sandbox", procs)
	}
}

// TestLaunchProfileOutOfReach: a profile the browser's account cannot
// reach is refused before Chromium starts, with an error that names the
// directory in the way and what to do; an unknown account is refused too.
func TestLaunchProfileOutOfReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test checks what Launch does for root: run the tests as root (CI does)")
	}
	private := t.TempDir() // 0700, root's
	_, err := Launch(context.Background(), LaunchOptions{Headless: true, UserDataDir: filepath.Join(private, "p")})
	if err == nil || !strings.Contains(err.Error(), "out of reach of "+DefaultBrowserUser) || !strings.Contains(err.Error(), "may not enter "+filepath.Dir(private)) && !strings.Contains(err.Error(), "may not enter "+private) {
		t.Errorf("err = %v; want the profile refused as out of reach, naming the directory", err)
	}
	_, err = Launch(context.Background(), LaunchOptions{Headless: true, User: "no-such-account-here"})
	if !errors.Is(err, ErrNoBrowserUser) || !strings.Contains(err.Error(), "no-such-account-here") {
		t.Errorf("err = %v; want ErrNoBrowserUser naming the account", err)
	}
}

func launchTestOwner(t *testing.T, path string) int {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(info.Sys().(*syscall.Stat_t).Uid)
}

// BenchmarkLaunchAccount measures what running Chromium as its own
// account, sandbox on, costs at start beside root without a sandbox,
// interleaved: Launch until the browser is ready for DevTools. Run as
// root.
func BenchmarkLaunchAccount(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Fatal("compares the two ways framebus runs chromium as root: run as root")
	}
	ways := []struct{ name, user string }{{"sandboxed-account", ""}, {"root-no-sandbox", RootUser}}
	took := make([][]time.Duration, len(ways))
	counts, kib := make([][]int, len(ways)), make([][]int, len(ways))
	for i := 0; i < b.N; i++ {
		for w, way := range ways {
			if i%2 == 1 {
				w = len(ways) - 1 - w
				way = ways[w]
			}
			start := time.Now()
			p, err := Launch(context.Background(), LaunchOptions{Headless: true, User: way.user})
			if err != nil {
				b.Fatal(err)
			}
			took[w] = append(took[w], time.Since(start))
			procs, pss := runAsTestFootprint(p.Pid())
			counts[w] = append(counts[w], procs)
			kib[w] = append(kib[w], pss)
			p.Close()
		}
	}
	for w, way := range ways {
		b.ReportMetric(float64(benchMedian(took[w]).Microseconds())/1000, way.name+"-launch-p50-ms")
		b.ReportMetric(float64(benchMedian(counts[w])), way.name+"-processes")
		b.ReportMetric(float64(benchMedian(kib[w]))/1024, way.name+"-pss-MB")
	}
	b.ReportMetric(float64(benchMedian(took[0]))/float64(benchMedian(took[1])), "account/root")
}

func benchMedian[T int | time.Duration](d []T) T {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// runAsTestFootprint is how many processes the browser's group has once it
// is ready, and their proportional set size (shared pages counted once
// across them) in KiB: what the sandbox's zygotes add.
func runAsTestFootprint(pgid int) (procs, pssKiB int) {
	for _, pr := range runAsTestProcs(pgid) {
		procs++
		rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pr.pid))
		if err != nil {
			continue // gone meanwhile
		}
		for _, line := range strings.Split(string(rollup), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				n, _ := strconv.Atoi(f[1])
				pssKiB += n
			}
		}
	}
	return procs, pssKiB
}
