package cdpdriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/rpcc"
)

// NavigateResult says what Page.navigate started. A cross-document load has
// a LoaderID: its commit is the FrameNavigated event with the same LoaderID.
// A same-document navigation (fragment only) has none.
type NavigateResult struct {
	URL          string
	LoaderID     string
	SameDocument bool
}

// Navigate starts loading url in the page and returns once Chromium has
// answered Page.navigate. A load Chromium reports as failed (DNS, refused
// connection, ...) is a *NavigationError with the net::ERR_... text; its
// LoaderID is still returned because Chromium commits an error page for it.
func (p *Page) Navigate(ctx context.Context, rawURL string) (NavigateResult, error) {
	reply, err := p.client.Page.Navigate(ctx, page.NewNavigateArgs(rawURL))
	var rerr *rpcc.ResponseError
	if errors.As(err, &rerr) && rerr.Message == "Cannot navigate to invalid URL" {
		return NavigateResult{}, &InvalidURLError{URL: rawURL}
	}
	if err != nil {
		return NavigateResult{}, p.wrap(ctx, "navigate", err)
	}
	res := NavigateResult{URL: rawURL}
	if reply.LoaderID != nil {
		res.LoaderID = string(*reply.LoaderID)
	}
	res.SameDocument = res.LoaderID == ""
	if reply.ErrorText != nil && *reply.ErrorText != "" {
		return res, &NavigationError{URL: rawURL, Text: *reply.ErrorText}
	}
	return res, nil
}

var schemePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// opaqueSchemes are schemes written without "//" that a user may type.
var opaqueSchemes = map[string]bool{"about": true, "data": true, "blob": true, "javascript": true, "mailto": true, "view-source": true}

// IsRelativeURL says whether ResolveURL reads raw relative to the current
// page: a path, a query or a fragment.
func IsRelativeURL(raw string) bool {
	raw = strings.TrimSpace(raw)
	return strings.HasPrefix(raw, "/") && !strings.HasPrefix(raw, "//") || strings.HasPrefix(raw, ".") ||
		strings.HasPrefix(raw, "?") || strings.HasPrefix(raw, "#")
}

// checkPort refuses a port no URL can have (Chromium calls it an invalid
// URL, and would not say which part).
func checkPort(u *url.URL) error {
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("URL %q: port %s is not 1-65535", u.String(), p)
		}
	}
	return nil
}

// ResolveURL turns what a user or agent typed into the URL to load (DR-013):
// a full URL is kept; a path ("/search", "./x", "?q=1", "#top") is resolved
// against base, the current page; a bare host gets a scheme: http for
// localhost, *.localhost and IP addresses, https for everything else.
func ResolveURL(raw, base string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fmt.Errorf("empty URL")
	}
	if IsRelativeURL(raw) {
		b, err := url.Parse(base)
		if err != nil || b.Host == "" {
			return "", fmt.Errorf("relative URL %q needs a current page with a host, and the tab is at %q", raw, base)
		}
		r, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("URL %q: %v", raw, err)
		}
		return b.ResolveReference(r).String(), nil
	}
	if strings.HasPrefix(raw, "//") {
		raw = "https:" + raw
	}
	if m := schemePattern.FindString(raw); m != "" {
		scheme := strings.ToLower(strings.TrimSuffix(m, ":"))
		// file:/etc/passwd and file:etc/passwd are file URLs, as the
		// browser reads them, never a host named "file".
		if strings.HasPrefix(raw[len(m):], "//") || opaqueSchemes[scheme] || scheme == "file" {
			u, err := url.Parse(raw)
			if err != nil {
				return "", fmt.Errorf("URL %q: %v", raw, err)
			}
			return raw, checkPort(u)
		}
		// "localhost:3000" parses as scheme "localhost": it is a host.
	}
	u, err := url.Parse("//" + raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("URL %q: not a URL, a path or a host name", raw)
	}
	if err := checkPort(u); err != nil {
		return "", err
	}
	scheme := "https"
	if isLocalHost(u.Hostname()) {
		scheme = "http"
	}
	return scheme + "://" + raw, nil
}

func isLocalHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	return net.ParseIP(host) != nil
}
