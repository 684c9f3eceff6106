package actors

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/actors/whitelist"
	"github.com/framebus/framebus/protocol"
)

// Sessions (the spec's browser sessions): starting a session for a domain
// runs that domain's own persistent profile, <ProfileDir>/<domain>/,
// created on first use and reused after, so its cookies and localStorage
// come back and no other domain's profile sees them. A session has an id;
// stopping it closes its browser cleanly, which saves its state.
//
// A domain has one session on the bus, registered in the session registry
// (sessionregistry.go). One node of those sharing a bus takes each start
// (a queue group): it hands it to the node that runs the domain's session,
// or, when none does, to the node placement chooses (placeNew), on that
// node's own start subject (Subjects.NodeSessionStart), where a start
// pinned to a node (--node) arrives too. The stop subject names the
// session, so only the node running it answers.

type sessions struct {
	mu       sync.Mutex // guards byID, stopping and the making of domain profiles
	byID     map[string]*session
	stopping map[string]bool    // ids being stopped (out of byID, entry not yet deleted)
	kv       jetstream.KeyValue // the session registry; nil on a bus without JetStream

	stopRestore context.CancelFunc // ends restoreSessions
	restored    chan struct{}      // closed when restoreSessions returned
}

type session struct {
	id      string
	domain  string
	profile *Profile
	stopSvc micro.Service // its stop endpoint
}

// StartSession starts (or returns, when it runs) the session of a domain
// on this node. When the domain's session runs on another live node the
// error is a *sessionElsewhere naming it, for the caller to hand the
// start there.
func (n *Node) StartSession(ctx context.Context, req protocol.SessionStartRequest) (protocol.SessionReply, error) {
	domain, err := sessionDomain(req.Domain)
	if err != nil {
		return protocol.SessionReply{}, err
	}
	if err := n.allow("https://" + domain + "/"); err != nil {
		return protocol.SessionReply{}, protocol.Errorf(protocol.CodePermissionDenied, "session for %s: %v", domain, err)
	}
	if req.URL != "" {
		if err := n.allow(req.URL); err != nil {
			return protocol.SessionReply{}, protocol.Errorf(protocol.CodePermissionDenied, "%v", err)
		}
	}
	if n.opts.ProfileDir == "" {
		return protocol.SessionReply{}, protocol.Errorf(protocol.CodeBadRequest,
			"sessions keep a profile per domain and need a profile directory; set browser.profileDir (or $FRAMEBUS_PROFILE_DIR)")
	}
	claim, err := n.claimSession(ctx, domain, req.URL)
	if err != nil {
		return protocol.SessionReply{}, err
	}
	reply, err := n.runSession(ctx, domain, req.URL, claim.entry.Session)
	if err != nil {
		if claim.made { // a start that failed leaves no entry
			n.releaseSession(domain, claim.entry.Session)
		}
		return protocol.SessionReply{}, err
	}
	reply.TakenFrom = claim.takenFrom
	return reply, nil
}

// runSession launches the profile of domain and runs the session id on
// it, or returns the session running there.
func (n *Node) runSession(ctx context.Context, domain, url, id string) (protocol.SessionReply, error) {
	p, created, err := n.domainProfile(domain)
	if err != nil {
		return protocol.SessionReply{}, err
	}
	// Launching takes seconds; other sessions' requests go on meanwhile
	// (the profile serialises its own launch and close).
	p.setStartURL(url)
	if err := p.Launch(ctx); err != nil {
		return protocol.SessionReply{}, startError(err)
	}
	n.sessions.mu.Lock()
	defer n.sessions.mu.Unlock()
	s := n.sessionOf(p)
	if s == nil {
		if s, err = n.newSession(id, domain, p); err != nil {
			_ = p.Close()
			return protocol.SessionReply{}, err
		}
	}
	return protocol.SessionReply{OK: true, SessionInfo: s.info(), Created: created}, nil
}

// domainProfile is the profile of a domain's sessions, made on first use;
// created says its directory did not exist before.
func (n *Node) domainProfile(domain string) (p *Profile, created bool, err error) {
	n.sessions.mu.Lock()
	defer n.sessions.mu.Unlock()
	if p = n.Profile(domain); p != nil {
		if !p.perDomain {
			return nil, false, protocol.Errorf(protocol.CodeBadRequest,
				"%q names a configured profile, not a domain's; sessions are for domains", domain)
		}
		return p, false, nil
	}
	launch := n.profileLaunch(domain)
	_, statErr := os.Stat(launch.UserDataDir)
	if p, err = n.addProfile(ProfileOptions{Name: domain}, launch); err != nil {
		return nil, false, err
	}
	p.perDomain = true
	return p, errors.Is(statErr, fs.ErrNotExist), nil
}

// newSession runs session id on a started profile and serves its stop.
func (n *Node) newSession(id, domain string, p *Profile) (*session, error) {
	s := &session{id: id, domain: domain, profile: p}
	svc, err := addService(n.nc, "framebus session", map[string]string{"session": s.id, "domain": domain, "node": n.name},
		[]endpoint{{name: "stop", subject: n.subj.SessionStop(s.id), handle: n.answerSessionStop}})
	if err != nil {
		return nil, err
	}
	if err := n.nc.FlushTimeout(startFlushTimeout); err != nil {
		_ = svc.Stop()
		return nil, err
	}
	s.stopSvc = svc
	if n.sessions.byID == nil {
		n.sessions.byID = map[string]*session{}
	}
	n.sessions.byID[s.id] = s
	p.mu.Lock()
	p.session = s.id
	p.mu.Unlock()
	return s, nil
}

// sessionOf is the session running on p, or nil; sessions.mu is held.
func (n *Node) sessionOf(p *Profile) *session {
	for _, s := range n.sessions.byID {
		if s.profile == p {
			return s
		}
	}
	return nil
}

// StopSession closes a session's browser, which saves its cookies and
// localStorage in its profile, and ends the session.
func (n *Node) StopSession(id string) (protocol.SessionReply, error) {
	n.sessions.mu.Lock()
	s := n.sessions.byID[id]
	delete(n.sessions.byID, id)
	if s != nil {
		if n.sessions.stopping == nil {
			n.sessions.stopping = map[string]bool{}
		}
		n.sessions.stopping[id] = true
		defer func() {
			n.sessions.mu.Lock()
			delete(n.sessions.stopping, id)
			n.sessions.mu.Unlock()
		}()
	}
	n.sessions.mu.Unlock()
	if s == nil {
		return protocol.SessionReply{}, protocol.Errorf(protocol.CodeSessionNotFound, "no session %s on this node", id)
	}
	_ = s.stopSvc.Stop()
	s.profile.mu.Lock()
	s.profile.session = ""
	s.profile.mu.Unlock()
	err := s.profile.Close() // it saves the state as it exits
	n.releaseSession(s.domain, id)
	if err != nil {
		return protocol.SessionReply{}, protocol.Errorf(protocol.CodeInternal, "stop session %s: %v", id, err)
	}
	info := s.info()
	info.Session = id
	return protocol.SessionReply{OK: true, SessionInfo: info}, nil
}

// Sessions lists the node's sessions, running.
func (n *Node) Sessions() []protocol.SessionInfo {
	n.sessions.mu.Lock()
	defer n.sessions.mu.Unlock()
	out := []protocol.SessionInfo{}
	for _, s := range n.sessions.byID {
		out = append(out, s.info())
	}
	return out
}

func (s *session) info() protocol.SessionInfo {
	return protocol.SessionInfo{Session: s.id, Node: s.profile.node.name, Domain: s.domain, Profile: s.profile.Status(), Tabs: s.profile.Tabs()}
}

// sessionDomain is the canonical host a session is for: what a browser
// makes of it (lowercase, IDNA, no trailing dot), a name, not an address
// or a host with a port.
func sessionDomain(raw string) (string, error) {
	if raw == "" {
		return "", protocol.Errorf(protocol.CodeBadRequest, "session: domain is missing")
	}
	// Only a host: no user, port, path or escapes for the URL parser to
	// take apart.
	u, err := whitelist.Parse("https://" + raw + "/")
	if strings.ContainsAny(raw, "/\\@?#:%[] \t\r\n") || err != nil || !protocol.ValidProfileName(u.Host) {
		return "", protocol.Errorf(protocol.CodeBadRequest, "session: %q is not a domain (want a host name such as mail.example.com)", raw)
	}
	return u.Host, nil
}

// answerSessionStart takes a start on the shared subject (one node of a
// queue group): the node that runs the domain's session answers it, else
// the node placement chooses.
func (n *Node) answerSessionStart(m micro.Request) {
	var req protocol.SessionStartRequest
	if err := protocol.DecodeRequest(m.Data(), "session start", &req); err != nil {
		respond(m, protocol.NewErrorReply(err), n.log)
		return
	}
	domain, err := sessionDomain(req.Domain)
	if err != nil {
		respond(m, protocol.NewErrorReply(err), n.log)
		return
	}
	node := n.sessionOwner(context.Background(), domain)
	var here func()
	if node == "" {
		// Placed: a node the registry's bucket still lists (its entry
		// not yet expired) may be gone; then this node takes it.
		node, here = n.placeNew(domain), func() { n.answerNodeSessionStart(m) }
	}
	if node != n.name {
		n.forwardOr(m, n.subj.NodeSessionStart(node), node, "session start "+domain, here)
		return
	}
	n.answerNodeSessionStart(m)
}

// answerNodeSessionStart starts a session on this node (its own start
// subject), unless the domain's session runs on another live node: then
// that node answers.
func (n *Node) answerNodeSessionStart(m micro.Request) {
	var req protocol.SessionStartRequest
	if err := protocol.DecodeRequest(m.Data(), "session start", &req); err != nil {
		respond(m, protocol.NewErrorReply(err), n.log)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lifecycleTimeout)
	defer cancel()
	reply, err := n.StartSession(ctx, req)
	var elsewhere *sessionElsewhere
	switch {
	case errors.As(err, &elsewhere):
		n.forward(m, n.subj.NodeSessionStart(elsewhere.entry.Node), elsewhere.entry.Node, "session start "+elsewhere.entry.Domain)
	case err != nil:
		respond(m, protocol.NewErrorReply(err), n.log)
	default:
		respond(m, reply, n.log)
	}
}

func (n *Node) answerSessionStop(m micro.Request) {
	reply, err := n.StopSession(sessionOfStopSubject(m.Subject()))
	if err != nil {
		respond(m, protocol.NewErrorReply(err), n.log)
		return
	}
	respond(m, reply, n.log)
}

// answerSessions lists this node's sessions and, from the registry, those
// of nodes that are not live (every node lists these: a client gathering
// the answers keeps one of each).
func (n *Node) answerSessions(m micro.Request) {
	peers := n.Peers()
	list := n.Sessions()
	// Well within the client's wait for every node's answer
	// (client.GatherWait), so a slow registry never makes this node
	// look unreachable.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	entries, err := n.sessionEntries(ctx)
	if err != nil {
		n.log.Warn().Err(err).Msg("session list: the registry does not answer; listing this node's sessions only")
	}
	for _, e := range entries {
		if !slices.Contains(peers, e.Node) {
			list = append(list, protocol.SessionInfo{Session: e.Session, Node: e.Node, Domain: e.Domain,
				Profile: protocol.ProfileStatus{Name: e.Domain, Node: e.Node, Driver: protocol.DriverManaged}, Tabs: []protocol.TabInfo{}, State: protocol.NodeUnreachable})
		}
	}
	respond(m, protocol.SessionList{OK: true, Node: n.name, Sessions: list, Peers: peers}, n.log)
}

// answerGoneSessionStop stops a session that no node runs: its node is
// gone, or it is this node and the session did not start again here.
// Every node with a session registry takes <prefix>.session.*.stop in a
// queue group, beside the running sessions' own subjects; it deletes the
// entry, so the session does not start again. A session its live node
// runs is left to that node's answer; an id the registry does not have is
// session_not_found.
func (n *Node) answerGoneSessionStop(m micro.Request) {
	id := sessionOfStopSubject(m.Subject())
	entries, err := n.sessionEntries(context.Background())
	if err != nil {
		respond(m, protocol.NewErrorReply(registryError(id, err)), n.log)
		return
	}
	i := slices.IndexFunc(entries, func(e protocol.SessionEntry) bool { return e.Session == id })
	if i < 0 {
		respond(m, protocol.NewErrorReply(protocol.Errorf(protocol.CodeSessionNotFound, "no session %s on the bus (session list shows them)", id)), n.log)
		return
	}
	e := entries[i]
	n.sessions.mu.Lock()
	_, runsHere := n.sessions.byID[id]
	runsHere = runsHere || n.sessions.stopping[id]
	n.sessions.mu.Unlock()
	if runsHere || e.Node != n.name && slices.Contains(n.Peers(), e.Node) {
		return // its node answers
	}
	if !n.forgetSession(e) {
		return // a node took it over meanwhile: its answer is the one
	}
	respond(m, protocol.SessionReply{OK: true, SessionInfo: protocol.SessionInfo{Session: e.Session, Node: e.Node, Domain: e.Domain,
		Profile: protocol.ProfileStatus{Name: e.Domain, Node: e.Node, Driver: protocol.DriverManaged}, Tabs: []protocol.TabInfo{}}}, n.log)
}

// sessionOfStopSubject is the id token of <prefix>.session.<id>.stop.
func sessionOfStopSubject(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) < 3 {
		return ""
	}
	return parts[len(parts)-2]
}
