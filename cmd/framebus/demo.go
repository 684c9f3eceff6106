package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

const (
	// demoTimeout bounds the whole demo.
	demoTimeout = 3 * time.Minute
	// demoSiteDir and demoPlanFile are relative to the source tree.
	demoSiteDir  = "testdata/site"
	demoPlanFile = "testdata/plans/seed-example.json"
	// demoPlaceholder is the origin the plan file uses for the example
	// site; the demo replaces it with the site it serves.
	demoPlaceholder = "http://site.invalid"
	// demoFullPageChars is how much of a frame's fullPage the demo shows.
	demoFullPageChars = 120
	// demoFrameWait bounds the wait for a plan's frames to be printed.
	demoFrameWait = 10 * time.Second
)

type demoOptions struct {
	root     string
	headed   bool
	view     bool
	logLevel string
}

func demoCommand() command {
	return command{
		name:    "demo",
		summary: "run the frame seed's example end to end on the bundled pages, then exit",
		group:   groupNode,
		details: `Starts a node (its own bus, headless Chromium, one tab), serves
` + demoSiteDir + ` on a loopback port, prints every frame as a JSON line (fullPage cut
to ` + fmt.Sprint(demoFullPageChars) + ` characters), runs ` + demoPlanFile + ` (navigate
to the search page based on frame 1, click #result3 based on 2, click #buy
based on 3), prints its result, then sends the same plan again under a new
id (the same id would get the first run's result, marked duplicate) and
prints the stale_frame result. Exits 0 when the first plan succeeded and the second
was refused as stale. Run it from the source tree, or pass --root.

With --view it serves the viewer too (framebus view) and prints its URL
first; after the plans the agent hands the tab to you on the example's
sign-in page (a handoff until you reach your account), and the viewer
stays up until Ctrl-C.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			var o demoOptions
			fs.StringVar(&o.root, "root", "", "the framebus source tree, holding "+demoSiteDir+" and "+demoPlanFile+" (default: found from the working directory)")
			boolVarP(fs, &o.headed, "headed", "", "show the browser window (default: headless)")
			boolVarP(fs, &o.view, "view", "", "serve the viewer, print its URL, hand you the tab after the plans, and stay up until Ctrl-C")
			fs.StringVar(&o.logLevel, "log-level", "warn", "log `level` on stderr: trace, debug, info, warn, error")
			return func(c *cli, args []string) error {
				if len(args) > 0 {
					return usagef("demo: takes no arguments, got %q", args)
				}
				return c.demo(o)
			}
		},
	}
}

func (c *cli) demo(o demoOptions) error {
	log, err := newLogger(c.stderr, o.logLevel)
	if err != nil {
		return err
	}
	root := o.root
	if root == "" {
		if root, err = findSourceTree(); err != nil {
			return err
		}
	}
	planText, err := os.ReadFile(filepath.Join(root, demoPlanFile))
	if err != nil {
		return protocol.Errorf(protocol.CodeBadRequest, "demo: %v; run the demo from the framebus source tree, or pass --root", err)
	}
	site := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(root, demoSiteDir))))
	defer site.Close()
	planText = bytes.ReplaceAll(planText, []byte(demoPlaceholder), []byte(site.URL))
	plan, err := protocol.DecodePlan(planText)
	if err != nil {
		return protocol.Errorf(protocol.CodeBadRequest, "demo: %s: %v", demoPlanFile, err)
	}

	chromium, err := cdpdriver.FindChromium()
	if err != nil {
		return serving.StartError(c.ctx, err)
	}

	ctx, cancel := context.WithTimeout(c.ctx, demoTimeout)
	defer cancel()
	// The demo's own bus, so it can subscribe before the node opens its tab
	// and show frame 1 too; the node joins it as it would any external bus.
	b, err := bus.Start(bus.Options{Logger: log, JetStream: &bus.JetStreamOptions{}}) // the node keeps its frame history there
	if err != nil {
		return serving.StartError(ctx, err)
	}
	defer b.Close()
	nc, err := b.Connect("demo")
	if err != nil {
		return serving.StartError(ctx, err)
	}
	subj := protocol.DefaultSubjects
	p := &framePrinter{w: c.stdout, last: map[string]int64{}, notify: make(chan struct{}, 1)}
	sub, err := nc.Subscribe(subj.AllFrames(), p.frame)
	if err != nil {
		return protocol.Errorf(protocol.CodeUnavailable, "demo: subscribe: %v", err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		return protocol.Errorf(protocol.CodeUnavailable, "demo: %v", err)
	}
	p.say("# framebus demo: a node on bus %s, the example site on %s", b.ClientURL(), site.URL)
	p.say("# every frame published on %s, as it arrives (fullPage cut to %d characters):", subj.AllFrames(), demoFullPageChars)

	// The node logs in to the demo's bus as a user of its own, with every
	// right (it serves the subjects and keeps the history).
	password := serving.NewPassword()
	hash, err := bus.HashPassword(password)
	if err == nil {
		err = b.AddUser(bus.User{Name: "demo-node", PasswordHash: hash, Role: protocol.RoleAdmin})
	}
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "demo: the node's user: %v", err)
	}
	nodeURL, err := url.Parse(b.ClientURL())
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "demo: bus URL: %v", err)
	}
	nodeURL.User = url.UserPassword("demo-node", password)
	node, err := actors.StartNode(ctx, actors.NodeOptions{
		Bus:    bus.Options{URL: nodeURL.String()},
		Launch: cdpdriver.LaunchOptions{Headless: !o.headed, Binary: chromium},
		Logger: log,
	})
	if err != nil {
		return serving.StartError(ctx, err)
	}
	defer node.Close()
	list, err := serving.AwaitTabs(ctx, nc, subj, "")
	if err != nil {
		return err
	}
	tab := list.Tabs[0]
	if err := p.waitFrame(ctx, tab.Tab, tab.Sequence); err != nil {
		return err
	}
	if o.view {
		stop, err := c.demoViewer(ctx, b, p)
		if err != nil {
			return err
		}
		defer stop()
	}

	p.say("# plan %s, each action based on the frame the one before it produces:", demoPlanFile)
	p.sayJSON(planText)
	first, err := demoSend(ctx, nc, subj, tab.Tab, planText, plan)
	if err != nil {
		return err
	}
	if err := p.waitFrame(ctx, tab.Tab, first.Sequence); err != nil {
		return err
	}
	p.say("# its result:")
	p.sayValue(first)

	// Under a new id: the tab would answer its own id with the first
	// run's result (duplicate), without running it again.
	again := plan
	again.ID += "-again"
	againText, err := json.Marshal(again)
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "demo: %v", err)
	}
	p.say("# the same plan again, as %s: its first action is based on frame 1, but the tab is at frame %d now:", again.ID, first.Sequence)
	second, err := demoSend(ctx, nc, subj, tab.Tab, againText, again)
	if err != nil {
		return err
	}
	p.sayValue(second)

	switch {
	case !first.OK:
		p.say("# the first plan failed (%s): %s", first.Code, first.Error)
		return errReported
	case second.Code != protocol.CodeStaleFrame:
		p.say("# the second plan was not refused as stale (ok=%t, code=%q)", second.OK, second.Code)
		return errReported
	}
	if o.view {
		return c.demoHandoff(nc, subj, tab.Tab, site.URL, p)
	}
	p.say("# done: the first plan ran all %d actions; the stale one ran none. Shutting down.", first.Executed)
	return nil
}

// demoSend sends the plan and waits for the result.
func demoSend(ctx context.Context, nc *nats.Conn, subj protocol.Subjects, tab string, data []byte, plan protocol.Plan) (protocol.PlanResult, error) {
	rctx, cancel := context.WithTimeout(ctx, plan.Wait())
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, subj.TabPlan(tab), data)
	if err != nil {
		return protocol.PlanResult{}, protocol.Errorf(protocol.CodeTimeout, "demo: plan: %v", err)
	}
	return protocol.DecodePlanResult(msg.Data)
}

// findSourceTree walks up from the working directory to the directory
// that holds go.mod and the demo's site.
func findSourceTree() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", protocol.Errorf(protocol.CodeBadRequest, "demo: %v", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isFile(filepath.Join(dir, "go.mod")) && isDir(filepath.Join(dir, demoSiteDir)) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", protocol.Errorf(protocol.CodeBadRequest,
		"demo: no %s found in %s or above it; run the demo from the framebus source tree (go run ./cmd/framebus demo), or pass --root DIR", demoSiteDir, wd)
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// framePrinter prints frames as they arrive and the demo's narration, one
// whole line at a time, and remembers each tab's last printed sequence.
type framePrinter struct {
	w      io.Writer
	mu     sync.Mutex
	last   map[string]int64
	notify chan struct{}
}

func (p *framePrinter) frame(m *nats.Msg) {
	f, err := protocol.DecodeFrame(m.Data)
	if err != nil {
		p.say("# not a frame on %s: %v", m.Subject, err)
		return
	}
	if f.FullPage != nil {
		cut := truncate(*f.FullPage, demoFullPageChars)
		f.FullPage = &cut
	}
	data, err := protocol.Marshal(f)
	if err != nil {
		p.say("# encode frame: %v", err)
		return
	}
	// Printed and recorded under one lock: whoever waits for this frame
	// prints after it.
	p.mu.Lock()
	fmt.Fprintf(p.w, "%s\n", data)
	p.last[f.Tab] = max(p.last[f.Tab], f.Sequence)
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// waitFrame waits until the frame seq of tab has been printed.
func (p *framePrinter) waitFrame(ctx context.Context, tab string, seq int64) error {
	deadline := time.NewTimer(demoFrameWait)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		done := p.last[tab] >= seq
		p.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-p.notify:
		case <-deadline.C:
			return protocol.Errorf(protocol.CodeTimeout, "demo: frame %d of tab %s did not arrive within %s", seq, tab, demoFrameWait)
		case <-ctx.Done():
			return protocol.Errorf(protocol.CodeTimeout, "demo: %v", ctx.Err())
		}
	}
}

func (p *framePrinter) say(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *framePrinter) sayJSON(data []byte) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		buf.Reset()
		buf.Write(data)
	}
	p.say("%s", buf.Bytes())
}

func (p *framePrinter) sayValue(v any) {
	data, err := protocol.Marshal(v)
	if err != nil {
		p.say("# encode: %v", err)
		return
	}
	p.say("%s", data)
}

// truncate cuts s to at most n bytes at a character boundary and says how
// much it left out.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…[+%d bytes]", s[:cut], len(s)-cut)
}
