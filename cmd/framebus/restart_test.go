package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// servesWithItsState starts serve with its state in dir and its history
// on file, as often as it is called (a restart), and is the clients'
// environment.
func servesWithItsState(t *testing.T, dir string) (env []string, serve func() *node) {
	stateFile := filepath.Join(dir, "node.json")
	env = testEnv(envState + "=" + stateFile)
	return env, func() *node {
		n := &node{process: startProcessOf(t, binary, env, "serve", "--history", "file"), stateFile: stateFile, env: env}
		n.ready(t)
		return n
	}
}

// A node killed (SIGKILL) and started again with its state (its state
// directory, history on file): the clients it had before, a Go agent and
// watcher (bus/client) and a framebus watch (both keeping waiting for the
// node: without, a watch ends when its tab's node goes), come back by themselves with
// the credentials they had; the watchers miss no frame kept in the
// history; the agent's tab answers under its id, its sequence going on
// with the node's restore frame; and while the node is down, a client
// command says it is not answering, maybe restarting (unavailable), not
// permission_denied. Before: new passwords at every start refused every
// client, the tab came back under a new id, and the old one answered
// tab_not_found.
func TestNodeRestartedWithItsState(t *testing.T) {
	dir := t.TempDir()
	env, serve := servesWithItsState(t, dir)
	stateFile := filepath.Join(dir, "node.json")
	n := serve()
	tab := n.tab()
	mustOK(t, env, "navigate", site("/"), "--tab", tab)
	creds, err := serving.ReadCredentials(n.credsFile(serving.AgentCredsFile))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(4*time.Minute))
	defer cancel()
	var events eventLog
	agent, err := busclient.Connect(ctx, busclient.Options{Credentials: &creds, OnEvent: events.add})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	w, err := agent.Watch(ctx, tab, 1, busclient.KeepWaiting())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	seen := newFrameLog()
	go func() {
		for f := range w.Frames() {
			seen.add(f.Frame)
		}
	}()
	cliWatch := startProcess(t, env, "watch", "--tab", tab, "--from", "1", "--keep-waiting")
	var res protocol.PlanResult
	for range 3 {
		if res, err = agent.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "window.before = 1"}}); err != nil || !res.OK {
			t.Fatalf("plan before the kill: %+v %v", res, err)
		}
	}
	last := res.Sequence
	waitFor(t, "the watchers have every frame before the kill", time.Minute, func() bool {
		return seen.complete(last) && cliFrames(cliWatch).complete(last)
	})
	profile := chromiumProfile(t, n.cmd.Process.Pid)
	t.Cleanup(func() { os.RemoveAll(profile) }) // a killed node leaves its temporary profile

	killed := time.Now()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-n.done
	waitFor(t, "the killed node's Chromium exits", time.Minute, func() bool { return len(processesMentioning(profile)) == 0 })
	// The restart window: not answering, maybe restarting; no refusal.
	r := framebus(t, env, "", "eval", "1", "--tab", tab)
	if m := r.reply(t); r.status != exitFailed || m["code"] != string(protocol.CodeUnavailable) || !strings.Contains(m["error"].(string), "restarting") {
		t.Errorf("a client while the node is down: exit %d, %s; want unavailable, not answering, maybe restarting", r.status, r.stdout)
	}

	again := &node{process: startProcessOf(t, binary, env, "serve", "--history", "file"), stateFile: stateFile, env: env}
	// A client command while it starts: unavailable (not answering, or
	// the tab on its way back), never a refusal.
	said := map[string]int{}
	waitFor(t, "a client command succeeds on the restarted node", 2*time.Minute, func() bool {
		r := framebus(t, env, "", "url", "--tab", tab) // read-only: no frame
		m := r.reply(t)
		if r.status == 0 {
			return true
		}
		said[fmt.Sprint(m["code"], ": ", m["error"])]++
		return false
	})
	t.Logf("a client command during the restart (%s from the kill to the first answer) said: %v", time.Since(killed).Round(time.Millisecond), said)
	for msg := range said {
		if strings.HasPrefix(msg, string(protocol.CodePermissionDenied)) {
			t.Errorf("a client command during the restart: %s", msg)
		}
	}
	again.ready(t)
	if again.state.Bus != n.state.Bus || !slices.ContainsFunc(again.state.Tabs, func(ti protocol.TabInfo) bool { return ti.Tab == tab }) {
		t.Fatalf("restarted: bus %s (was %s), tabs %+v; want the same bus and tab %s", again.state.Bus, n.state.Bus, again.state.Tabs, tab)
	}
	if kept, err := serving.ReadCredentials(again.credsFile(serving.AgentCredsFile)); err != nil || kept.Password != creds.Password {
		t.Errorf("the agent's credentials after the restart: %v; want them kept", err)
	}
	// The agent comes back by itself, to its tab, which goes on from the
	// restore frame.
	restored := last + 1
	waitFor(t, "the agent's plan on the restore frame", time.Minute, func() bool {
		res, err = agent.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "String(window.before)", BasedOnSequence: &restored}})
		return err == nil && res.Code != protocol.CodeUnavailable // the node's answer while the tab comes back
	})
	if !res.OK || res.Sequence != restored+1 || string(res.Results[0].Value) != `"undefined"` {
		t.Fatalf("plan on the restore frame: %+v; want sequence %d, the old page's memory gone", res, restored+1)
	}
	waitFor(t, "the watchers have every frame, the restore frame included", time.Minute, func() bool {
		return seen.complete(res.Sequence) && cliFrames(cliWatch).complete(res.Sequence)
	})
	for _, frames := range []frameLog{seen, cliFrames(cliWatch)} {
		f := frames.at(restored)
		if f.Action != protocol.FrameRestore || f.Source != protocol.SourceNode || f.URL != site("/") || !strings.Contains(f.Note, "restored") {
			t.Errorf("restore frame: %+v", f)
		}
	}
	if !events.has(busclient.EventReconnected) || events.has(busclient.EventClosed) {
		t.Errorf("the agent's connection: %v; want it reconnected, never closed", events.kinds())
	}
	if cliWatch.exited() {
		t.Errorf("framebus watch exited: %v\n%s", cliWatch.err, cliWatch.stderr)
	}
	mustOK(t, env, "eval", "1", "--tab", tab)
}

// frameLog collects a watcher's frames.
type frameLog struct {
	mu     *sync.Mutex
	frames *[]protocol.Frame
}

func newFrameLog() frameLog { return frameLog{mu: &sync.Mutex{}, frames: &[]protocol.Frame{}} }

func (l frameLog) add(f protocol.Frame) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.frames = append(*l.frames, f)
}

// complete reports whether the log holds frames 1..upTo, each once, in
// order, and nothing else.
func (l frameLog) complete(upTo int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int64(len(*l.frames)) != upTo {
		return false
	}
	for i, f := range *l.frames {
		if f.Sequence != int64(i+1) {
			return false
		}
	}
	return true
}

// at is frame seq of a complete log.
func (l frameLog) at(seq int64) protocol.Frame {
	l.mu.Lock()
	defer l.mu.Unlock()
	return (*l.frames)[seq-1]
}

// cliFrames are the frames framebus watch printed so far.
func cliFrames(p *process) frameLog {
	l := newFrameLog()
	for _, line := range readLines(p.stdout.String()) {
		var f protocol.Frame
		if json.Unmarshal([]byte(line), &f) == nil && f.Sequence > 0 {
			l.add(f)
		}
	}
	return l
}

// eventLog collects a client's events.
type eventLog struct {
	mu     sync.Mutex
	events []busclient.Event
}

func (l *eventLog) add(e busclient.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) has(kind busclient.EventKind) bool {
	return slices.Contains(l.kinds(), kind)
}

func (l *eventLog) kinds() []busclient.EventKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []busclient.EventKind
	for _, e := range l.events {
		out = append(out, e.Kind)
	}
	return out
}
