package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"

	"github.com/framebus/framebus/protocol"
	"golang.org/x/net/publicsuffix"
)

// Resources carry out the requests of the resources beside the browser
// (ADR-006): http fetches and web searches, under the node's whitelist.
// The node's answer them on the bus (any node: a queue group); a tab
// runs a plan's fetch and search actions with its node's, in the plan's
// order, and they touch neither the page nor the tab's frames.
type Resources interface {
	Fetch(ctx context.Context, req protocol.FetchRequest) (protocol.FetchReply, error)
	Search(ctx context.Context, req protocol.SearchRequest) (protocol.SearchReply, error)
}

// runResourceAction carries out a plan's fetch or search: its value is
// the resource's reply.
func (t *Tab) runResourceAction(ctx context.Context, index int, a protocol.Action) protocol.ActionResult {
	r := protocol.ActionResult{Index: index, Type: a.Type}
	if t.resources == nil {
		r.Code, r.Error = protocol.CodeBadRequest, fmt.Sprintf("%s: this node has no %s resource", a.Type, resourceOf(a))
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, a.EffectiveTimeout())
	defer cancel()
	var reply any
	var err error
	switch a.Type {
	case "fetch":
		reply, err = t.resources.Fetch(ctx, a.FetchRequest())
	case "search":
		reply, err = t.resources.Search(ctx, a.SearchRequest())
	default:
		err = protocol.Errorf(protocol.CodeInternal, "%s: no resource carries it out", a.Type)
	}
	if err != nil {
		r.Code, r.Error = protocol.CodeOf(err), err.Error()
		return r
	}
	value, err := json.Marshal(reply)
	if err != nil {
		r.Code, r.Error = protocol.CodeInternal, err.Error()
		return r
	}
	r.OK, r.Value = true, value
	return r
}

func resourceOf(a protocol.Action) string {
	spec, _ := protocol.LookupAction(a.Type)
	return spec.Resource
}

// profileCookies are the cookies a profile's browser would send to u
// (the http resource's cookiesFrom): its cookie store, matched to u by
// net/http's cookie jar (domain, path, secure, expiry; the public suffix
// list keeps a cookie set for a public suffix from matching).
func (n *Node) profileCookies(ctx context.Context, profile string, u *url.URL) ([]*http.Cookie, error) {
	p := n.Profile(profile)
	if p == nil {
		var names []string
		for _, p := range n.Profiles() {
			names = append(names, p.Name())
		}
		return nil, protocol.ProfileNotFound(profile, names)
	}
	b := p.Browser()
	if b == nil {
		return nil, p.notRunning()
	}
	held, err := b.Cookies(ctx)
	if err != nil {
		return nil, protocol.Errorf(codeOf(err), "cookies of profile %s: %v", profile, err)
	}
	jar, err := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	if err != nil {
		return nil, err
	}
	for _, c := range held {
		host, domainCookie := strings.CutPrefix(c.Domain, ".")
		set := &http.Cookie{Name: c.Name, Value: c.Value, Path: c.Path, Secure: c.Secure, HttpOnly: c.HTTPOnly, Expires: c.Expires}
		if domainCookie {
			set.Domain = host
		}
		scheme := "http"
		if c.Secure {
			scheme = "https"
		}
		jar.SetCookies(&url.URL{Scheme: scheme, Host: host, Path: c.Path}, []*http.Cookie{set})
	}
	return jar.Cookies(u), nil
}
