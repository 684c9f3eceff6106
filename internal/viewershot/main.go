// Command viewershot makes the README's picture of the viewer from a real
// run: a node with its headless Chromium and the example site, agents
// racing on one tab, another handing a sign-in to a person and asking a
// question, and framebus view open in a second browser at 1280×800.
//
//	go run ./internal/viewershot docs/viewer.png
//
// Run it from the source tree (it serves testdata/site).
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/bcrypt"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus"
	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/viewer"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/viewershot OUT.png")
		os.Exit(2)
	}
	if err := shoot(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "viewershot:", err)
		os.Exit(1)
	}
}

func shoot(out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	site := httptest.NewServer(http.FileServer(http.Dir("testdata/site")))
	defer site.Close()
	node, err := actors.StartNode(ctx, actors.NodeOptions{Launch: cdpdriver.LaunchOptions{Headless: true}, Viewport: &protocol.Viewport{Width: 1024, Height: 640, DeviceScaleFactor: 1}})
	if err != nil {
		return err
	}
	defer node.Close()
	agent, err := connect(ctx, node.Bus(), protocol.RoleAgent)
	if err != nil {
		return err
	}
	defer agent.Close()
	person, err := connect(ctx, node.Bus(), protocol.RoleOperator)
	if err != nil {
		return err
	}
	defer person.Close()
	shop := node.Tabs()[0].Tab
	plan := func(tab string, p protocol.Plan) protocol.PlanResult {
		res, _ := agent.Plan(ctx, tab, p)
		return res
	}
	// Two agents race on the shop: one plans on frame 1 too late.
	plan(shop, protocol.Plan{ID: "browse", Agent: "shopper", Actions: []protocol.Action{
		{Type: "navigate", URL: site.URL + "/search.html?q=lamps", BasedOnSequence: protocol.Based(1)},
		{Type: "click", Selector: "#result3", BasedOnSequence: protocol.Based(2)},
	}})
	plan(shop, protocol.Plan{ID: "compare", Agent: "comparer", Actions: []protocol.Action{{Type: "click", Selector: "#result1", BasedOnSequence: protocol.Based(2)}}})
	// Another tab: a sign-in handed to a person, and a question.
	login, err := agent.NewTab(ctx, "", site.URL+"/login.html")
	if err != nil {
		return err
	}
	go plan(login.Tab, protocol.Plan{ID: "checkout", Agent: "buyer", Actions: []protocol.Action{
		{Type: "handoff", Message: "Please sign in to the shop, then hand back", Until: map[string]string{"url": site.URL + "/account.html*"}},
	}})
	go plan(shop, protocol.Plan{ID: "size", Agent: "shopper", Actions: []protocol.Action{{Type: "ask", Question: "Which lamp colour should I order?", Choices: []string{"brass", "black", "white"}}}})

	srv, err := viewer.New(viewer.Options{Client: person, Token: viewer.NewToken(), By: "alice"})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go srv.Serve(ln)
	b, err := actors.StartBrowser(ctx, cdpdriver.LaunchOptions{Headless: true, WindowWidth: 1280, WindowHeight: 800}, zerolog.Nop())
	if err != nil {
		return err
	}
	defer b.Close()
	page, err := b.OpenPage(ctx, srv.URL(ln))
	if err != nil {
		return err
	}
	// The sign-in tab, with its picture, once everything has arrived.
	if _, err := page.Eval(ctx, fmt.Sprintf("location.hash = '#tab=%s'; location.reload()", login.Tab), 10*time.Second); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := page.Eval(ctx, `!!(window.framebusScreen && document.querySelector('#attention .question') && document.querySelector('#attention .handoff'))`, 5*time.Second)
		if err == nil && string(v) == "true" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the viewer never showed the handoff, the question and the picture")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	png, err := page.Screenshot(ctx, cdpdriver.ScreenshotOptions{})
	if err != nil {
		return err
	}
	return os.WriteFile(out, png, 0o644)
}

// connect logs in to the node's bus as a user of its own with role.
func connect(ctx context.Context, b *bus.Bus, role string) (*busclient.Client, error) {
	name, password := "viewershot-"+role, "viewershot-"+fmt.Sprint(time.Now().UnixNano())
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	if err := b.AddUser(bus.User{Name: name, PasswordHash: string(hash), Role: role}); err != nil {
		return nil, err
	}
	creds := protocol.Credentials{URL: b.ClientURL(), User: name, Password: password, Role: role,
		InboxPrefix: protocol.InboxPrefix(name), JSAPIPrefix: b.Subjects().JSAPIPrefixFor(role)}
	return busclient.Connect(ctx, busclient.Options{URL: b.ClientURL(), Credentials: &creds})
}
