package webfetch

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/framebus/framebus/protocol"
)

// prepared is a FetchRequest checked and resolved against the options:
// everything a fetch needs, no field left to default.
type prepared struct {
	url          *url.URL
	method       string
	header       http.Header
	host         string // a Host header's value, sent to the first URL's host only
	body         []byte // nil: none
	timeout      time.Duration
	maxBytes     int
	maxRedirects int // -1: follow none (NoRedirects)
	cookiesFrom  string
	readable     bool
	buffer       *[]byte // the body is read into it when not nil (FetchBytes)
}

// plan checks req: each problem is a bad_request naming the field.
func (f *Fetcher) plan(req protocol.FetchRequest) (prepared, error) {
	p := prepared{header: http.Header{}, cookiesFrom: req.CookiesFrom, readable: req.Readable}
	if strings.TrimSpace(req.URL) == "" {
		return p, badRequest("url: missing (want an http or https URL)")
	}
	u, err := parseURL(req.URL)
	if err != nil {
		return p, badRequest("url: %v", err)
	}
	p.url = u

	p.method = strings.ToUpper(strings.TrimSpace(req.Method))
	if p.method == "" {
		p.method = http.MethodGet
	}
	if !slices.Contains(protocol.FetchMethods, p.method) {
		return p, badRequest("method: %q is not one of %s", req.Method, strings.Join(protocol.FetchMethods, ", "))
	}

	names := make([]string, 0, len(req.Headers))
	for name := range req.Headers {
		names = append(names, name)
	}
	sort.Strings(names) // the first bad one named is the same every time
	for _, name := range names {
		value := req.Headers[name]
		if !httpguts.ValidHeaderFieldName(name) {
			return p, badRequest("headers: %q is not a valid header name", name)
		}
		if !httpguts.ValidHeaderFieldValue(value) {
			return p, badRequest("headers: the value of %s is not a valid header value (control characters or a line break)", name)
		}
		if http.CanonicalHeaderKey(name) == "Host" {
			p.host = value
			continue
		}
		p.header.Set(name, value)
	}
	if p.header.Get("User-Agent") == "" {
		p.header.Set("User-Agent", f.o.UserAgent)
	}

	if req.BodyBase64 {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return p, badRequest("body: bodyBase64 is set but the body is not base64: %v", err)
		}
		p.body = b
	} else if req.Body != "" {
		p.body = []byte(req.Body)
	}

	p.timeout = f.o.Timeout
	switch {
	case req.Timeout < 0:
		return p, badRequest("timeout: %s is negative", req.Timeout.Std())
	case req.Timeout.Std() > MaxTimeout:
		// A node's fetches are bounded in number: without a ceiling one
		// caller could hold them all at a server that never answers.
		return p, badRequest("timeout: %s is more than %s, the longest a fetch may take", req.Timeout.Std(), MaxTimeout)
	case req.Timeout > 0:
		p.timeout = req.Timeout.Std()
	}

	p.maxBytes = f.o.MaxBytes
	if req.MaxBytes < 0 {
		return p, badRequest("maxBytes: %d is negative", req.MaxBytes)
	} else if req.MaxBytes > 0 && req.MaxBytes < p.maxBytes {
		p.maxBytes = req.MaxBytes
	}

	p.maxRedirects = f.o.MaxRedirects
	switch {
	case req.MaxRedirects < 0:
		return p, badRequest("maxRedirects: %d is negative", req.MaxRedirects)
	case req.NoRedirects:
		p.maxRedirects = -1
	case req.MaxRedirects > 0 && req.MaxRedirects < p.maxRedirects:
		p.maxRedirects = req.MaxRedirects
	}

	if req.CookiesFrom != "" && f.o.Cookies == nil {
		return p, badRequest("cookiesFrom: no profile cookies here (this node has no browser profiles to take them from)")
	}
	return p, nil
}

// parseURL takes an absolute http or https URL with a host.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, err
	}
	if err := checkScheme(u); err != nil {
		return nil, err
	}
	return u, nil
}

func checkScheme(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		if u.Scheme == "" {
			return fmt.Errorf("%q has no scheme (want http:// or https://)", u.Redacted())
		}
		return fmt.Errorf("%q: the %s: scheme is not fetched (want http or https)", u.Redacted(), u.Scheme)
	case u.Host == "":
		return fmt.Errorf("%q has no host", u.Redacted())
	}
	return nil
}

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}
