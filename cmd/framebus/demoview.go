package main

import (
	"context"
	"net"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/bus"
	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
	"github.com/framebus/framebus/viewer"
)

// demoHandoffTimeout is how long the demo's agent waits for you.
const demoHandoffTimeout = 10 * time.Minute

// demoViewer serves the viewer on the demo's bus, as an operator of its own,
// and prints its URL.
func (c *cli) demoViewer(ctx context.Context, b *bus.Bus, p *framePrinter) (func(), error) {
	password := serving.NewPassword()
	hash, err := bus.HashPassword(password)
	if err == nil {
		err = b.AddUser(bus.User{Name: "demo-viewer", PasswordHash: hash, Role: protocol.RoleOperator})
	}
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "demo: the viewer's user: %v", err)
	}
	creds := protocol.Credentials{URL: b.ClientURL(), User: "demo-viewer", Password: password, Role: protocol.RoleOperator,
		InboxPrefix: protocol.InboxPrefix("demo-viewer"), JSAPIPrefix: b.Subjects().JSAPIPrefixFor(protocol.RoleOperator)}
	bc, err := busclient.Connect(ctx, busclient.Options{URL: b.ClientURL(), Credentials: &creds})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		bc.Close()
		return nil, protocol.Errorf(protocol.CodeUnavailable, "demo: the viewer: %v", err)
	}
	srv, err := viewer.New(viewer.Options{Client: bc, Token: viewer.NewToken(), By: "you"})
	if err != nil {
		ln.Close()
		bc.Close()
		return nil, protocol.Errorf(protocol.CodeInternal, "demo: %v", err)
	}
	go srv.Serve(ln)
	p.say("# the viewer: %s", srv.URL(ln))
	return func() {
		ln.Close()
		srv.Close()
		bc.Close()
	}, nil
}

// demoHandoff hands the demo's tab to the person at the viewer, on the
// example's sign-in page, until they reach their account; then the
// viewer stays up until Ctrl-C.
func (c *cli) demoHandoff(nc *nats.Conn, subj protocol.Subjects, tab, site string, p *framePrinter) error {
	plan := protocol.Plan{ID: "demo-handoff", Agent: "demo", Actions: []protocol.Action{
		{Type: "navigate", URL: site + "/login.html", Wait: true},
		{Type: "handoff", Message: "Please sign in (any name will do)", Until: map[string]string{"url": site + "/account.html*"}, Timeout: protocol.Duration(demoHandoffTimeout)},
		{Type: "text", Selector: "h1"},
	}}
	data, err := protocol.Marshal(plan)
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "demo: %v", err)
	}
	p.say("# the agent now hands the tab to you: in the viewer, take it and sign in (%s at most)", demoHandoffTimeout)
	ctx, cancel := context.WithTimeout(c.ctx, plan.Wait())
	res, err := demoSend(ctx, nc, subj, tab, data, plan)
	cancel()
	switch {
	case err != nil && c.ctx.Err() != nil:
		return nil // Ctrl-C: the person is done
	case err != nil:
		return err
	}
	p.sayValue(res)
	p.say("# the viewer stays up until Ctrl-C")
	<-c.ctx.Done()
	return nil
}
