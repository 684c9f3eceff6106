package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/frames"
	"github.com/framebus/framebus/internal/atomicfile"
	"github.com/framebus/framebus/protocol"
)

// Restoring tabs: a node restarted with its state brings back the tabs it
// had, under their ids, each going on from its last frame in the history
// with a restore frame (action "restore", source "node") at that frame's
// URL, loaded again in a new page.
//
// Which tabs: a small file beside the node's state (NodeOptions.TabsFile)
// lists the tabs open in the node's managed profiles, rewritten whenever a
// tab opens or closes, and left as it is while the node stops, so a node
// stopped cleanly or killed comes back with the same tabs. The history
// alone cannot say it: it keeps the frames of closed tabs as of open ones,
// and the tabs of a node that stopped or was killed make no close frame.
//
// Where each one was: the history's last frame of the tab, not the file.
// Every frame goes to the history and the file is written only as tabs
// come and go, so the history has the tab's last sequence and URL, and a
// restored tab's next frame is exactly one past the last one kept. A tab
// the history no longer has (history off or in memory, its frames expired)
// cannot go on from its sequence and is not restored: the log says so.

// tabsFile is the content of NodeOptions.TabsFile.
type tabsFile struct {
	// Node is the name of the node that wrote it, which a node started
	// again with its state takes when it is given none (ReadTabsFile).
	Node string    `json:"node"`
	Tabs []keptTab `json:"tabs"`
}

// keptTab is a tab open when the file was written.
type keptTab struct {
	Tab     string `json:"tab"`
	Profile string `json:"profile"`
}

// ReadTabsFile reads the tabs file a node wrote (NodeOptions.TabsFile): the
// node's name and its tabs. A missing file is no error: a node that never
// ran there.
func ReadTabsFile(path string) (node string, tabs []protocol.TabInfo, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	var f tabsFile
	if err := json.Unmarshal(data, &f); err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, t := range f.Tabs {
		if protocol.ValidTabID(t.Tab) && protocol.ValidProfileName(t.Profile) {
			tabs = append(tabs, protocol.TabInfo{Tab: t.Tab, Profile: t.Profile, Node: f.Node})
		}
	}
	return f.Node, tabs, nil
}

// restorer keeps the node's tabs file and the tabs still to be restored.
type restorer struct {
	file string // "": the node keeps no tabs file

	mu      sync.Mutex
	pending map[string][]string // profile: tab ids not restored yet
	// coming are the tabs taken from pending and on their way back
	// (their pages loading): id: profile. They stay in the file until
	// they are back or failed, so a node killed meanwhile still has them.
	coming  map[string]string
	written []byte // the file as last written
	closing bool   // the node stops: its tabs stay in the file
	// held are the plan subjects of tabs on their way back, answered
	// unavailable until each tab takes its own plans (see holdPlans).
	held map[string]*nats.Subscription
}

// loadRestore reads the tabs the node had when it last stopped.
func (n *Node) loadRestore() {
	r := &n.restore
	r.file, r.pending, r.coming = n.opts.TabsFile, map[string][]string{}, map[string]string{}
	if r.file == "" {
		return
	}
	_, tabs, err := ReadTabsFile(r.file)
	if err != nil {
		n.log.Error().Err(err).Msg("the tabs of the node's last run are not restored: their file cannot be read")
		return
	}
	kept := map[string]bool{}
	for _, t := range tabs {
		r.pending[t.Profile] = append(r.pending[t.Profile], t.Tab)
		kept[t.Tab] = true
	}
	pruneSeqMarks(seqMarksDir(r.file), kept) // of tabs that closed, or were not restored
	if len(tabs) > 0 {
		n.log.Info().Int("tabs", len(tabs)).Msg("restoring the tabs of the node's last run")
	}
	// The tabs of the profiles that start with the node: a plan sent to
	// one meanwhile is told it is on its way back. (A session's come
	// back with their session, later, or not at all.)
	starting := []string{protocol.DefaultProfile}
	for _, po := range n.opts.Profiles {
		if po.Attach == "" {
			starting = append(starting, po.Name)
		}
	}
	for _, profile := range starting {
		n.holdPlans(r.pending[profile])
	}
}

// seqMarks is where p's tabs mark their sequences ("": nowhere): a
// managed profile's tabs are restored, with a history on file.
func (n *Node) seqMarks(p *Profile) string {
	if n.restore.file == "" || n.history == nil || !p.Managed() {
		return ""
	}
	return seqMarksDir(n.restore.file)
}

// needHistoryToRestore gives up the tabs to restore when the node has no
// history: they could not go on from their sequences.
func (n *Node) needHistoryToRestore() {
	if n.history != nil {
		return
	}
	r := &n.restore
	r.mu.Lock()
	count := 0
	for _, ids := range r.pending {
		count += len(ids)
	}
	r.pending = map[string][]string{}
	held := r.held
	r.held = nil
	r.mu.Unlock()
	for _, sub := range held {
		_ = sub.Unsubscribe()
	}
	if count > 0 {
		n.log.Error().Int("tabs", count).Msg("the tabs of the node's last run are not restored: there is no history to go on from")
	}
}

// holdPlans answers the plans sent to tabs on their way back: unavailable,
// nothing ran, send it again in a moment; not the no responders of a tab
// nobody has, which a client takes for a tab gone with its node.
func (n *Node) holdPlans(ids []string) {
	r := &n.restore
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = map[string]*nats.Subscription{}
	}
	for _, id := range ids {
		sub, err := n.nc.Subscribe(n.subj.TabPlan(id), func(m *nats.Msg) {
			if !protocol.Answerable(m.Reply) {
				return // a server's answer aimed here, not a plan
			}
			respondMsg(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeUnavailable,
				"tab %s is on its way back: its node %s restarted and is restoring it; this request was not taken: send the plan again in a moment, under the same id (a plan the tab began before the restart is answered as such, never run again)", id, n.name)), n.log)
		})
		if err != nil {
			n.log.Warn().Err(err).Str("tab", id).Msg("plans to a tab on its way back get no answer until it is back")
			continue
		}
		r.held[id] = sub
	}
}

// releasePlans stops answering for tab (holdPlans): it takes its own plans
// now, or is not coming back. The tab subscribes after this, on the same
// connection, so a plan never reaches both.
func (n *Node) releasePlans(tab string) {
	r := &n.restore
	r.mu.Lock()
	sub := r.held[tab]
	delete(r.held, tab)
	r.mu.Unlock()
	if sub != nil {
		_ = sub.Unsubscribe()
	}
}

// releaseProfilePlans stops answering for the tabs of profile still to
// come back: its browser did not start.
func (n *Node) releaseProfilePlans(profile string) {
	n.restore.mu.Lock()
	ids := slices.Clone(n.restore.pending[profile])
	n.restore.mu.Unlock()
	for _, id := range ids {
		n.releasePlans(id)
	}
}

// takeRestore hands over the tabs of profile still to be restored.
func (n *Node) takeRestore(profile string) []string {
	r := &n.restore
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := r.pending[profile]
	delete(r.pending, profile)
	for _, id := range ids {
		r.coming[id] = profile
	}
	return ids
}

// arrived ends tab id's way back, whether it came back or not.
func (n *Node) arrived(id string) {
	r := &n.restore
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.coming, id)
}

// hasRestore reports whether profile has tabs to restore.
func (n *Node) hasRestore(profile string) bool {
	r := &n.restore
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending[profile]) > 0
}

// saveTabs writes the tabs file: the tabs of the managed profiles, and
// those still to be restored. Not once the node stops.
func (n *Node) saveTabs() {
	r := &n.restore
	if r.file == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return
	}
	f := tabsFile{Node: n.name, Tabs: []keptTab{}}
	// Those still to come back first, also of profiles not made yet (a
	// session's, made when the session starts again).
	for _, profile := range slices.Sorted(maps.Keys(r.pending)) {
		for _, id := range r.pending[profile] {
			f.Tabs = append(f.Tabs, keptTab{Tab: id, Profile: profile})
		}
	}
	listed := map[string]bool{}
	for _, p := range n.Profiles() {
		if !p.Managed() {
			continue // an attached browser keeps its own tabs
		}
		for _, t := range p.Tabs() {
			f.Tabs = append(f.Tabs, keptTab{Tab: t.Tab, Profile: p.name})
			listed[t.Tab] = true
		}
	}
	// Those on their way back are not the profiles' tabs yet.
	for _, id := range slices.Sorted(maps.Keys(r.coming)) {
		if !listed[id] {
			f.Tabs = append(f.Tabs, keptTab{Tab: id, Profile: r.coming[id]})
		}
	}
	data, _ := json.Marshal(f)
	if bytes.Equal(data, r.written) {
		return
	}
	if err := atomicfile.Write(r.file, append(data, '\n')); err != nil {
		n.log.Error().Err(err).Str("file", r.file).Msg("keep the node's tabs for its next start")
		return
	}
	r.written = data
}

// stopSavingTabs leaves the tabs file as it is from now on: the node is
// stopping, and its tabs come back at its next start.
func (n *Node) stopSavingTabs() {
	n.restore.mu.Lock()
	n.restore.closing = true
	n.restore.mu.Unlock()
}

// boundedByHistory is ctx, bounded by historyTimeout when it has no
// deadline of its own (a session started again in the background).
func boundedByHistory(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, historyTimeout)
}

// lastFrame is tab's latest frame in the history.
func (n *Node) lastFrame(ctx context.Context, tab string) (protocol.Frame, error) {
	if n.history == nil {
		return protocol.Frame{}, errors.New("the node has no history")
	}
	ctx, cancel := boundedByHistory(ctx)
	defer cancel()
	var f protocol.Frame
	err := retryJetStream(ctx, func(try context.Context) error {
		m, err := n.history.stream.GetLastMsgForSubject(try, n.subj.TabFrames(tab))
		if err != nil {
			return err
		}
		f, err = protocol.DecodeFrame(m.Data)
		return err
	})
	if err == nil && (f.Tab != tab || f.Sequence < 1) {
		err = fmt.Errorf("the history's last frame of tab %s is not one of its frames (tab %q, sequence %d)", tab, f.Tab, f.Sequence)
	}
	return f, err
}

// restoreTabs brings back the profile's tabs of the node's last run, side
// by side; it reports how many came back.
func (p *Profile) restoreTabs(ctx context.Context) int {
	ids := p.node.takeRestore(p.name)
	var wg sync.WaitGroup
	var mu sync.Mutex
	back := 0
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log := p.log.With().Str("tab", id).Logger()
			defer p.node.releasePlans(id) // back or not: the tab's own answers, or none
			defer p.node.arrived(id)
			last, err := p.node.lastFrame(ctx, id)
			if err != nil {
				log.Error().Err(err).Msg("tab not restored: its last frame is not in the history, so it cannot go on from its sequence")
				return
			}
			if p.node.Tab(id) != nil {
				return // back already
			}
			past, err := p.node.pastPlans(ctx, last)
			if err != nil {
				log.Warn().Err(err).Msg("restored tab: the plans it ran before are not known from the history, and one sent again under its id runs again unless its journal names it")
			}
			past = withJournaled(past, seqMarksDir(p.node.restore.file), id)
			marked, err := readSeqMark(seqMarksDir(p.node.restore.file), id)
			if err != nil {
				log.Warn().Err(err).Msg("restored tab: going on from the history's last frame")
			}
			if _, err := p.restoreTab(ctx, restoreFrom{last: last, marked: marked, past: past}); err != nil {
				log.Error().Err(err).Str("url", last.URL).Int64("sequence", last.Sequence).Msg("tab not restored")
				return
			}
			log.Info().Str("url", last.URL).Int64("sequence", max(last.Sequence, marked)+1).Msg("tab restored")
			mu.Lock()
			back++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(ids) > 0 {
		p.node.saveTabs() // those that did not come back are gone
	}
	return back
}

// restoreFrom is where a tab of the node's last run goes on from.
type restoreFrom struct {
	last   protocol.Frame // its last frame in the history
	marked int64          // the last sequence it numbered (seqmark.go)
	past   []PastPlan     // the plans it ran
}

// restoreTab opens a new page and starts the actor of the tab from, under
// the tab's id.
func (p *Profile) restoreTab(ctx context.Context, from restoreFrom) (*Tab, error) {
	b := p.Browser()
	if b == nil {
		return nil, p.notRunning()
	}
	id, err := b.NewTarget(ctx, "about:blank")
	if err != nil {
		return nil, err
	}
	p.claim(id) // a managed browser's watcher leaves it alone (no opener)
	page, err := b.AttachPage(ctx, id)
	if err != nil {
		p.unclaim(id)
		_ = b.CloseTarget(ctx, id)
		return nil, err
	}
	tab, err := p.startTabAs(ctx, page, &from)
	if err != nil {
		p.unclaim(id)
		return nil, err
	}
	return tab, nil
}

// PastPlan is a plan a tab ran before its node restarted, as the tab's
// frames in the history tell (they name its planId): a restored tab does
// not run a plan of that id again (see planids.go), and answers it
// outcome_unknown, its result lost with the node.
type PastPlan struct {
	ID          string
	At          time.Time // its last frame's time
	First, Last int64     // its first and last frames
	Frames      int
}

// result is what a plan sent again under p's id is answered.
func (p PastPlan) result(tab string) protocol.PlanResult {
	res := protocol.PlanResult{Version: protocol.Version, Tab: tab, PlanID: p.ID, Executed: p.Frames, Sequence: p.Last, Results: []protocol.ActionResult{},
		Code: protocol.CodeOutcomeUnknown, Error: fmt.Sprintf(
			"plan %s ran before the tab's node restarted (its frames %d to %d name it) and does not run again; its result was lost with the node: its frames are the record of what it did (framebus frames --tab %s --from %d)",
			p.ID, p.First, p.Last, tab, p.First)}
	if p.Frames == 0 {
		res.Error = fmt.Sprintf("plan %s began before the tab's node restarted and does not run again; it made no frame the history kept, so whether it acted (a click, a script) is not known: its result was lost with the node. Look at the page before sending its actions again under a new id", p.ID)
	}
	return res
}

// withJournaled adds to past the plans tab's journal in dir names that
// past does not: begun, and maybe cut short before they made a frame.
func withJournaled(past []PastPlan, dir, tab string) []PastPlan {
	entries, err := readPlanJournal(journalPath(dir, tab), time.Now())
	if err != nil {
		return past
	}
	known := map[string]bool{}
	for _, pp := range past {
		known[pp.ID] = true
	}
	for _, e := range entries {
		if !known[e.ID] {
			known[e.ID] = true
			past = append(past, PastPlan{ID: e.ID, At: e.At})
		}
	}
	// Oldest first, as a tab remembers them.
	slices.SortStableFunc(past, func(a, b PastPlan) int { return a.At.Compare(b.At) })
	return past
}

// pastPlans are the plans whose frames of the tab the history kept, up
// to its last frame, from the last planIDsAge (as long as a tab remembers
// a plan id), oldest first.
func (n *Node) pastPlans(ctx context.Context, last protocol.Frame) ([]PastPlan, error) {
	tab, upTo := last.Tab, last.Sequence
	since := time.Now().Add(-planIDsAge)
	if last.Time.Before(since) {
		return nil, nil // none of its frames is that recent
	}
	ctx, cancel := boundedByHistory(ctx)
	defer cancel()
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{n.subj.TabFrames(tab)}, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &since}
	cons, err := n.history.js.OrderedConsumer(ctx, n.subj.FrameStream(), cfg)
	for err != nil && jetStreamUnsettled(err) && ctx.Err() == nil {
		pauseUnsettled(ctx)
		cons, err = n.history.js.OrderedConsumer(ctx, n.subj.FrameStream(), cfg)
	}
	if err != nil {
		return nil, err
	}
	var past []PastPlan
	byID := map[string]int{}
	for {
		// A fetch the cluster is not ready for (the consumer's server
		// not yet known across the routes: no responders; an election)
		// is made again until ctx ends: the ordered consumer goes on
		// from the last frame it gave.
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(time.Second))
		switch {
		case err != nil && jetStreamUnsettled(err) && ctx.Err() == nil:
			pauseUnsettled(ctx)
			continue
		case err != nil:
			return past, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			f, err := protocol.DecodeFrame(m.Data())
			if err != nil || f.Tab != tab {
				continue
			}
			if f.PlanID != "" {
				i, seen := byID[f.PlanID]
				if !seen {
					i = len(past)
					byID[f.PlanID] = i
					past = append(past, PastPlan{ID: f.PlanID, First: f.Sequence})
				}
				pp := &past[i]
				pp.At, pp.Last, pp.Frames = f.Time, f.Sequence, pp.Frames+1
			}
			if f.Sequence >= upTo {
				return past, nil
			}
		}
		if err := batch.Error(); got == 0 && err != nil && jetStreamUnsettled(err) {
			pauseUnsettled(ctx) // answered at once (no responders): not a tight loop
		}
		if got == 0 && ctx.Err() != nil {
			// Frame upTo is since then: only a stream that does not
			// answer keeps it back.
			return past, fmt.Errorf("the history's frames of tab %s up to %d: %w", tab, upTo, ctx.Err())
		}
	}
}

// pauseUnsettled waits a little before a JetStream call a cluster was not
// ready for is made again, or until ctx ends.
func pauseUnsettled(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(100 * time.Millisecond):
	}
}

// restore makes the tab's first frame the one after last, its last frame
// before the node restarted: the page loaded again at last's URL, or,
// when it cannot be (no longer allowed, it fails to load), a frame that
// says so. Either way the tab is back under its id, and the frame says
// its page is a new one. It runs in StartTab, before the tab takes plans.
//
// marked is the last sequence the tab numbered (seqmark.go): past
// last's, the frames after last never reached the history (the node was
// killed first), and the tab goes on after marked, so that no frame
// number comes twice; the page is loaded at last's URL, the last known.
func (t *Tab) restore(ctx context.Context, last protocol.Frame, marked int64) {
	gone := "what the old page held in memory (script state, form input, scroll position) is gone"
	if marked > last.Sequence {
		t.log.Warn().Int64("stored", last.Sequence).Int64("numbered", marked).Msg("restored tab: frames it numbered before the node stopped never reached the history")
		gone += fmt.Sprintf("; frames %d to %d were numbered before the node stopped and never reached the history, so the page is loaded again as of frame %d", last.Sequence+1, marked, last.Sequence)
		last.Sequence = marked
	}
	t.frames.Continue(last)
	restoreFrame := func(note string) {
		t.emit(ctx, frames.Change{URL: t.nav.url, Title: t.nav.title, Action: protocol.FrameRestore, Source: protocol.SourceNode, NewDocument: true}, note, true)
	}
	url := last.URL
	if url == "" || url == "about:blank" {
		restoreFrame("restored after its node restarted, in a new page at about:blank, as it was; " + gone)
		return
	}
	t.restoring = fmt.Sprintf("restored after its node restarted: %s loaded again in a new page; %s", url, gone)
	a := t.withNodeTimeout(protocol.Action{Type: "navigate", URL: url, Wait: true})
	r := t.execute(ctx, time.Now().Add(a.EffectiveTimeout()), protocol.Plan{}, 0, a)
	t.restoring = ""
	if t.frames.Sequence() > last.Sequence {
		// The restore frame: at the URL, or at Chromium's error page,
		// which its note names.
		if !r.OK {
			t.log.Warn().Str("url", url).Str("code", string(r.Code)).Str("error", r.Error).Msg("restored tab: its page did not load as before")
		}
		return
	}
	// Nothing loaded: the whitelist no longer allows the URL, or it
	// failed before any document came.
	restoreFrame(fmt.Sprintf("restored after its node restarted, but %s was not loaded again (%s: %s): the tab is at %s in a new page; %s",
		url, r.Code, r.Error, t.nav.url, gone))
}
