package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// The browser lifecycle on the bus (ADR-006): status, launch, close,
// pages (list_pages), newtab and closetab for the node's profile, on
// <prefix>.browser.<profile>.<op>. Each request is answered on its
// subscription's own goroutine, never behind a tab's actor, so a stuck tab
// cannot block status or close. Launch and close are serialised by
// lifecycle.mu; while the browser is closed, a plan sent to any tab is
// answered browser_not_running with how to launch it.

// lifecycleTimeout bounds launching the browser or opening a tab on request.
const lifecycleTimeout = time.Minute

type lifecycle struct {
	mu         sync.Mutex // serialises launch and close
	subs       []*nats.Subscription
	notRunning *nats.Subscription // answers plans while the browser is closed
}

// serveLifecycle subscribes to the lifecycle requests.
func (n *Node) serveLifecycle() error {
	for op, h := range map[string]nats.MsgHandler{
		protocol.OpStatus:   n.answerStatus,
		protocol.OpLaunch:   n.answerLaunch,
		protocol.OpClose:    n.answerClose,
		protocol.OpPages:    n.answerTabs,
		protocol.OpNewTab:   n.answerNewTab,
		protocol.OpCloseTab: n.answerCloseTab,
	} {
		sub, err := n.nc.Subscribe(n.subj.Browser(protocol.DefaultProfile, op), h)
		if err != nil {
			return err
		}
		n.life.subs = append(n.life.subs, sub)
	}
	return n.nc.Flush()
}

func (n *Node) stopLifecycle() {
	n.life.mu.Lock()
	defer n.life.mu.Unlock()
	for _, s := range n.life.subs {
		_ = s.Unsubscribe()
	}
	n.life.subs = nil
	if n.life.notRunning != nil {
		_ = n.life.notRunning.Unsubscribe()
		n.life.notRunning = nil
	}
}

// Status is the node's profile status.
func (n *Node) Status() protocol.StatusReply {
	st := protocol.ProfileStatus{Name: protocol.DefaultProfile, Driver: "managed"}
	if b := n.Browser(); b != nil {
		st.Running = true
		st.Endpoint = b.Process().BrowserWebSocketURL()
		st.PageCount = len(n.Tabs())
	}
	return protocol.StatusReply{OK: true, Profiles: []protocol.ProfileStatus{st}}
}

// Launch starts the browser if it is not running.
func (n *Node) Launch(ctx context.Context) error {
	n.life.mu.Lock()
	defer n.life.mu.Unlock()
	if n.Browser() != nil {
		return nil
	}
	if err := n.launchBrowser(ctx); err != nil {
		return err
	}
	if n.life.notRunning != nil {
		_ = n.life.notRunning.Unsubscribe()
		n.life.notRunning = nil
		_ = n.nc.FlushTimeout(startFlushTimeout) // gone from the server before launch answers
	}
	return nil
}

// CloseBrowser stops the browser and retires its tabs; the node and its
// bus keep running, and plans are answered browser_not_running until
// Launch.
func (n *Node) CloseBrowser() error {
	n.life.mu.Lock()
	defer n.life.mu.Unlock()
	if n.life.notRunning == nil && n.life.subs != nil {
		n.mu.Lock()
		closed := maps.Clone(n.known)
		n.mu.Unlock()
		sub, err := n.nc.Subscribe(n.subj.AllTabPlans(), func(m *nats.Msg) {
			if closed[tabOfPlanSubject(m.Subject)] {
				respond(m, protocol.NewErrorReply(n.notRunning()), n.log)
			}
		})
		if err == nil {
			n.life.notRunning = sub
			_ = n.nc.FlushTimeout(startFlushTimeout)
		}
	}
	return n.closeBrowser()
}

// notRunning is the browser_not_running error, with how to launch.
func (n *Node) notRunning() error {
	return protocol.Errorf(protocol.CodeBrowserNotRunning,
		"browser not running for profile %q; launch it with: framebus launch (a request on %s)",
		protocol.DefaultProfile, n.subj.Browser(protocol.DefaultProfile, protocol.OpLaunch))
}

func (n *Node) answerStatus(m *nats.Msg) { respond(m, n.Status(), n.log) }

func (n *Node) answerLaunch(m *nats.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), lifecycleTimeout)
	defer cancel()
	if err := n.Launch(ctx); err != nil {
		code := protocol.CodeBrowserNotRunning
		if errors.Is(err, cdpdriver.ErrProfileInUse) {
			code = protocol.CodeProfileInUse
		}
		respond(m, protocol.NewErrorReply(protocol.Errorf(code, "launch: %v", err)), n.log)
		return
	}
	respond(m, n.Status(), n.log)
}

func (n *Node) answerClose(m *nats.Msg) {
	if err := n.CloseBrowser(); err != nil {
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeInternal, "%v", err)), n.log)
		return
	}
	respond(m, n.Status(), n.log)
}

func (n *Node) answerNewTab(m *nats.Msg) {
	var req protocol.NewTabRequest
	if len(m.Data) > 0 {
		if err := json.Unmarshal(m.Data, &req); err != nil {
			respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeBadRequest, "newtab: invalid JSON: %v", err)), n.log)
			return
		}
	}
	if req.URL != "" {
		if err := n.allow(req.URL); err != nil {
			respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodePermissionDenied, "%v", err)), n.log)
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), lifecycleTimeout)
	defer cancel()
	tab, err := n.OpenTab(ctx, req.URL)
	if err != nil {
		respond(m, protocol.NewErrorReply(err), n.log)
		return
	}
	respond(m, protocol.TabReply{OK: true, Tab: tab.Info()}, n.log)
}

func (n *Node) answerCloseTab(m *nats.Msg) {
	var req protocol.CloseTabRequest
	if err := json.Unmarshal(m.Data, &req); err != nil || req.Tab == "" {
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeBadRequest, `closetab: want {"tab": "ID"}`)), n.log)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lifecycleTimeout)
	defer cancel()
	info, err := n.CloseTab(ctx, req.Tab)
	if err != nil {
		respond(m, protocol.NewErrorReply(err), n.log)
		return
	}
	respond(m, protocol.TabReply{OK: true, Tab: info}, n.log)
}

// CloseTab closes a tab: its page first, so an action in flight ends at
// once, then its actor.
func (n *Node) CloseTab(ctx context.Context, id string) (protocol.TabInfo, error) {
	tab := n.Tab(id)
	b := n.Browser()
	if tab == nil || b == nil {
		return protocol.TabInfo{}, protocol.Errorf(protocol.CodeTabNotFound, "no tab %s on this node", id)
	}
	info := tab.Info()
	n.mu.Lock()
	page := n.pages[id]
	n.mu.Unlock()
	if page != nil {
		if err := b.ClosePage(ctx, page); err != nil {
			return info, fmt.Errorf("close tab %s: %w", id, err)
		}
	}
	tab.Stop()
	return info, nil
}

// tabOfPlanSubject is the tab token of <prefix>.tab.<tab>.plan.
func tabOfPlanSubject(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) < 3 {
		return ""
	}
	return parts[len(parts)-2]
}
