package actors

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/internal/testdir"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A node started again with its tabs file and its history on file brings
// back the tabs it had, under their ids (not one it closed): each goes on
// from its last frame with a restore frame (source node) at its last URL,
// its content included and its old page's memory gone, and takes plans
// against that frame. A URL the whitelist no longer allows still brings
// the tab back, at about:blank, with a frame that says why.
func TestNodeRestoresItsTabs(t *testing.T) {
	dir := t.TempDir()
	opts := NodeOptions{History: HistoryOptions{Storage: HistoryFile, Dir: filepath.Join(dir, "jetstream")}, TabsFile: filepath.Join(dir, "tabs.json"),
		Profiles: []ProfileOptions{{Name: "work"}}}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()

	node := startTestNode(t, opts)
	nc, err := node.Bus().Connect("restore-test")
	if err != nil {
		t.Fatal(err)
	}
	tab := node.Tabs()[0].Tab
	page := site("/index.html")
	res, err := request(nc, tab, protocol.Plan{Actions: []protocol.Action{{Type: "navigate", URL: page, Wait: true}, {Type: "eval", Expression: "window.kept = 42"}}})
	if err != nil || !res.OK {
		t.Fatalf("plan: %+v %v", res, err)
	}
	ran := protocol.Plan{ID: "ran-before-the-restart", Action: &protocol.Action{Type: "eval", Expression: "window.runs = (window.runs || 0) + 1"}}
	if res, err = request(nc, tab, ran); err != nil || !res.OK {
		t.Fatalf("plan %s: %+v %v", ran.ID, res, err)
	}
	// A tab of a named profile, launched on request, and one whose
	// server is gone by the restart.
	work := node.Profile("work")
	if err := work.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	workFirst := work.Tabs()[0].Tab // at about:blank
	workTab, err := work.OpenTab(ctx, site("/"))
	if err != nil {
		t.Fatal(err)
	}
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<title>soon gone</title><p>here now</p>")
	}))
	goneTab, err := node.OpenTab(ctx, gone.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	closed, err := node.OpenTab(ctx, site("/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.CloseTab(ctx, closed.ID()); err != nil {
		t.Fatal(err)
	}
	before := lastStored(t, node, tab, res.Sequence)
	if fi, err := os.Stat(opts.TabsFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tabs file: %v %v; want it, 0600", fi, err)
	}
	workLast := lastStored(t, node, workTab.ID(), workTab.Info().Sequence)
	goneLast := lastStored(t, node, goneTab.ID(), goneTab.Info().Sequence)
	gone.Close()
	nc.Close()
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}

	// Started again: the tabs are back, not the one closed.
	node = startTestNode(t, opts)
	want := map[string]string{tab: protocol.DefaultProfile, workFirst: "work", workTab.ID(): "work", goneTab.ID(): protocol.DefaultProfile}
	if tabs := node.Tabs(); len(tabs) != len(want) || !restoredAs(tabs, want) {
		t.Fatalf("tabs after the restart: %+v; want %v", tabs, want)
	}
	if f := lastStored(t, node, workTab.ID(), workLast.Sequence+1); f.Action != protocol.FrameRestore || f.URL != workLast.URL {
		t.Errorf("the named profile's tab: %+v", f)
	}
	if f := lastStored(t, node, goneTab.ID(), goneLast.Sequence+1); f.Action != protocol.FrameRestore || f.Source != protocol.SourceNode ||
		!strings.Contains(f.Note, gone.URL) || !strings.Contains(f.Note, "could not be loaded") {
		t.Errorf("the tab whose page is gone: %+v", f)
	}
	nc, err = node.Bus().Connect("restore-test")
	if err != nil {
		t.Fatal(err)
	}
	f := lastStored(t, node, tab, res.Sequence+1)
	if f.Action != protocol.FrameRestore || f.Source != protocol.SourceNode || f.URL != before.URL || f.FullPage == nil ||
		!strings.Contains(*f.FullPage, "heading") || !strings.Contains(f.Note, "restored") || !strings.Contains(f.Note, "gone") {
		t.Fatalf("restore frame: %+v", f)
	}
	// A plan it ran before, sent again under its id, does not run again.
	again, err := request(nc, tab, ran)
	if err != nil || again.OK || !again.Duplicate || again.Code != protocol.CodeOutcomeUnknown || again.Executed != 1 || again.Sequence != res.Sequence ||
		!strings.Contains(again.Error, fmt.Sprintf("frames %d to %d", res.Sequence, res.Sequence)) {
		t.Fatalf("plan %s sent again after the restart: %+v %v; want it not run again, outcome_unknown naming frame %d", ran.ID, again, err, res.Sequence)
	}
	restored := res.Sequence + 1
	res, err = request(nc, tab, protocol.Plan{Actions: []protocol.Action{{Type: "eval", Expression: "String(window.kept)", BasedOnSequence: &restored}}})
	if err != nil || !res.OK || res.Sequence != restored+1 || string(res.Results[0].Value) != `"undefined"` {
		t.Fatalf("plan on the restore frame: %+v %v; want the old page's memory gone, sequence %d", res, err, restored+1)
	}
	waitStored(t, node, tab, res.Sequence)
	nc.Close()
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}

	// Its URL no longer allowed: back all the same, saying so.
	opts.Whitelist, err = whitelist.New([]string{"example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	node = startTestNode(t, opts)
	if tabs := node.Tabs(); len(tabs) != len(want) || !restoredAs(tabs, want) {
		t.Fatalf("tabs after the restart with a whitelist: %+v; want %v", tabs, want)
	}
	f = lastStored(t, node, tab, res.Sequence+1)
	if f.Action != protocol.FrameRestore || f.Source != protocol.SourceNode || f.URL != "about:blank" ||
		!strings.Contains(f.Note, "not loaded again") || !strings.Contains(f.Note, string(protocol.CodePermissionDenied)) {
		t.Fatalf("restore frame of a URL no longer allowed: %+v", f)
	}
}

// restoredAs reports whether tabs are those of want (id: profile).
func restoredAs(tabs []protocol.TabInfo, want map[string]string) bool {
	for _, ti := range tabs {
		if want[ti.Tab] != ti.Profile {
			return false
		}
	}
	return true
}

// waitStored waits until the history's last frame of tab is seq.
func waitStored(t *testing.T, node *Node, tab string, seq int64) {
	t.Helper()
	waitUntil(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Second))
		defer cancel()
		f, err := node.lastFrame(ctx, tab)
		return err == nil && f.Sequence == seq
	})
}

// lastStored is the history's last frame of tab, once it is seq.
func lastStored(t *testing.T, node *Node, tab string, seq int64) protocol.Frame {
	t.Helper()
	waitStored(t, node, tab, seq)
	f, err := node.lastFrame(context.Background(), tab)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A session's tabs come back with their session: the node starts the
// session again (its registry on file) and its profile's tabs are those
// of the last run, under their ids, instead of a new one at its URL.
func TestSessionTabsComeBackWithTheirSession(t *testing.T) {
	site := httptest.NewServer(siteHandler())
	defer site.Close()
	_, port, _ := net.SplitHostPort(site.Listener.Addr().String())
	mail := "http://mail.example.test:" + port + "/"
	wl, err := whitelist.New([]string{"*.example.test", "127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := NodeOptions{Name: "restorer", Prefix: "fbrestore", ProfileDir: testdir.Enterable(t), Launch: testDomains, Whitelist: wl, EgressResolver: loopbackResolver,
		History: HistoryOptions{Storage: HistoryFile, Dir: filepath.Join(dir, "jetstream")}, TabsFile: filepath.Join(dir, "tabs.json")}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	node := startTestNode(t, opts)
	s, err := node.StartSession(ctx, protocol.SessionStartRequest{Domain: "mail.example.test", URL: mail})
	if err != nil {
		t.Fatal(err)
	}
	tab := s.Tabs[0].Tab
	last := lastStored(t, node, tab, s.Tabs[0].Sequence)
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}

	node = startTestNode(t, opts)
	waitUntil(t, func() bool { return node.Tab(tab) != nil && len(node.Sessions()) == 1 })
	if f := lastStored(t, node, tab, last.Sequence+1); f.Action != protocol.FrameRestore || f.URL != last.URL {
		t.Fatalf("the session's tab: %+v", f)
	}
	if got := node.Sessions(); len(got) != 1 || got[0].Session != s.Session || len(got[0].Tabs) != 1 || got[0].Tabs[0].Tab != tab {
		t.Fatalf("sessions after the restart: %+v; want %s with tab %s", got, s.Session, tab)
	}
}

// A tab on its way back stays in the tabs file until it is back: while
// one restored tab's page is still loading, another that came back
// first rewrites the file (its profile's tabs changed), and a node
// killed at that moment must still find the slow one at its next start.
// (Without: the file listed only the tabs already back, and the slow
// one was lost for good.)
func TestTabsFileKeepsTabsOnTheirWayBack(t *testing.T) {
	var hold atomic.Bool
	asked, release := make(chan struct{}, 1), make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && hold.Load() {
			select {
			case asked <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-r.Context().Done():
			case <-time.After(testscale.D(time.Minute)):
			}
		}
		fmt.Fprint(w, "<title>slow</title><p>slow page</p>")
	}))
	defer slow.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	dir := t.TempDir()
	logs := &logLines{}
	opts := NodeOptions{History: HistoryOptions{Storage: HistoryFile, Dir: filepath.Join(dir, "jetstream")}, TabsFile: filepath.Join(dir, "tabs.json"),
		Logger: zerolog.New(logs)}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()

	node := startTestNode(t, opts)
	fast, err := node.OpenTab(ctx, site("/"))
	if err != nil {
		t.Fatal(err)
	}
	slowTab, err := node.OpenTab(ctx, slow.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	lastStored(t, node, fast.ID(), fast.Info().Sequence)
	lastStored(t, node, slowTab.ID(), slowTab.Info().Sequence)
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}

	hold.Store(true)
	opts.Launch.Headless = true
	started := make(chan error, 1)
	go func() {
		n, err := StartNode(ctx, opts)
		if err == nil {
			t.Cleanup(func() { n.Close() })
		}
		started <- err
	}()
	select {
	case <-asked:
	case err := <-started:
		t.Fatalf("the node started (%v) before the slow tab's page was asked for", err)
	case <-ctx.Done():
		t.Fatal("the slow tab's page was not asked for again")
	}
	// The fast tab is back (and wrote the file) while the slow one loads.
	waitUntil(t, func() bool { return logs.has(`"tab":"`+fast.ID()+`"`, `"tab restored"`) })
	_, kept, err := ReadTabsFile(opts.TabsFile)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range kept {
		ids = append(ids, k.Tab)
	}
	if !slices.Contains(ids, slowTab.ID()) || !slices.Contains(ids, fast.ID()) {
		t.Errorf("the tabs file while %s is on its way back: %v; want it and %s", slowTab.ID(), ids, fast.ID())
	}
	close(release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
}

// logLines keeps a logger's lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

// has reports whether a line holds every one of parts.
func (l *logLines) has(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
