package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The http and search resources (ADR-006): stateless request/reply
// services beside the browser, which any node answers (a queue group),
// under the same whitelist as the browser. They touch no tab and make no
// frame; in a plan they are the actions fetch and search.

// FetchMethods are the methods an http fetch may use.
var FetchMethods = []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}

// Fetch defaults; a node's configuration may set others (http.*).
const (
	DefaultFetchMaxBytes     = 4 << 20 // the body cap: past it the body is cut (Truncated)
	DefaultFetchMaxRedirects = 10
)

// FetchRequest asks the http resource (Subjects.HTTPFetch) for one HTTP
// request; it is also the fetch action's parameters.
type FetchRequest struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"` // one of FetchMethods; GET when ""
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the request body: text, or base64 of bytes when BodyBase64.
	Body       string `json:"body,omitempty"`
	BodyBase64 bool   `json:"bodyBase64,omitempty"`
	// Timeout bounds the whole request, redirects and body included
	// (default: the action timeout).
	Timeout Duration `json:"timeout,omitempty"`
	// MaxRedirects bounds the redirects followed (default
	// DefaultFetchMaxRedirects); NoRedirects follows none and answers
	// the redirect itself.
	MaxRedirects int  `json:"maxRedirects,omitempty"`
	NoRedirects  bool `json:"noRedirects,omitempty"`
	// MaxBytes caps the body kept (default and ceiling: the node's cap).
	MaxBytes int `json:"maxBytes,omitempty"`
	// CookiesFrom names a profile whose cookies for each URL are sent:
	// opt-in, so a fetch carries a logged-in profile's session only when
	// asked to. Cookies the answers set are not stored back.
	CookiesFrom string `json:"cookiesFrom,omitempty"`
	// Readable adds the main text of an HTML body (Readable).
	Readable bool `json:"readable,omitempty"`
}

// FetchHop is one answer of a redirect chain: the URL asked and the
// status it answered.
type FetchHop struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
}

// FetchReply is the http resource's answer (and the fetch action's
// value). Body is text when it decodes as text in its declared charset
// (Encoding "text"), else base64 of the bytes (Encoding "base64").
type FetchReply struct {
	OK         bool                `json:"ok"`
	Status     int                 `json:"status"`
	StatusText string              `json:"statusText,omitempty"`
	Headers    map[string][]string `json:"headers,omitempty"`
	// URL is the final URL, after every redirect; Redirects are the hops
	// that led there, in order (the final answer is not among them).
	URL       string     `json:"url"`
	Redirects []FetchHop `json:"redirects,omitempty"`
	// Address is the IP address and port the final answer came from.
	Address  string `json:"address,omitempty"`
	Body     string `json:"body"`
	Encoding string `json:"encoding"`          // "text" or "base64"
	Charset  string `json:"charset,omitempty"` // the charset a text body was decoded from
	// Bytes is the body's length as received; Truncated says the body
	// passed the cap and Body holds its first MaxBytes.
	Bytes     int64     `json:"bytes"`
	Truncated bool      `json:"truncated,omitempty"`
	Readable  *Readable `json:"readable,omitempty"`
	Took      Duration  `json:"took"`
}

// Readable is the main content of an HTML page, as a reader view shows
// it.
type Readable struct {
	Title   string `json:"title,omitempty"`
	Byline  string `json:"byline,omitempty"`
	Excerpt string `json:"excerpt,omitempty"`
	Text    string `json:"text"`
}

// Search engines.
const (
	EngineDuckDuckGo = "duckduckgo" // its HTML results page; the default
	EngineGoogle     = "google"     // the Custom Search JSON API, with a key and an engine id
)

// SearchEngines are the engines a search may name.
var SearchEngines = []string{EngineDuckDuckGo, EngineGoogle}

// MaxResourceTimeout is the longest a fetch or search may ask to take:
// a node carries out a bounded number at once, and without a ceiling
// one caller could hold them all at a server that never answers.
const MaxResourceTimeout = 5 * time.Minute

// Search defaults.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
)

// SearchRequest asks the search resource (Subjects.SearchQuery) for
// results; it is also the search action's parameters.
type SearchRequest struct {
	Query  string `json:"query"`
	Engine string `json:"engine,omitempty"` // one of SearchEngines; the node's default when ""
	Limit  int    `json:"limit,omitempty"`  // at most this many results (DefaultSearchLimit)
	// Site keeps the results to one site (the engine's site: operator).
	Site string `json:"site,omitempty"`
	// Region is the engine's region or language code (DuckDuckGo kl,
	// e.g. "de-de"; Google gl, e.g. "de").
	Region  string   `json:"region,omitempty"`
	Timeout Duration `json:"timeout,omitempty"`
}

// SearchResult is one result: ads, the engine's own links and redirect
// wrappers are gone, URL is where the result leads.
type SearchResult struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet,omitempty"`
}

// SearchReply is the search resource's answer (and the search action's
// value).
type SearchReply struct {
	OK      bool           `json:"ok"`
	Engine  string         `json:"engine"`
	Query   string         `json:"query"`
	Results []SearchResult `json:"results"`
	Took    Duration       `json:"took"`
}

// checkFetch: a fetch follows no redirect or at most some, not both.
// Header names and values must be what HTTP carries.
func checkFetch(a Action) error {
	if err := checkResourceTimeout(a); err != nil {
		return err
	}
	if a.NoRedirects && a.MaxRedirects > 0 {
		return badRequest("fetch: noRedirects and maxRedirects cannot be combined; give one")
	}
	for name, value := range a.Headers {
		if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			return badRequest("fetch.headers: %q is not a header name (letters, digits and !#$%%&'*+-.^_`|~, no spaces or colons)", name)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return badRequest("fetch.headers.%s: the value has a line break or NUL, which HTTP does not carry", name)
		}
	}
	return nil
}

// isTokenChar: a character of an HTTP token (RFC 9110 tchar).
func isTokenChar(r rune) bool {
	return r < 0x7f && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// checkSearch: a search's limit is 1 to MaxSearchLimit when given.
func checkSearch(a Action) error {
	if err := checkResourceTimeout(a); err != nil {
		return err
	}
	if a.Limit > MaxSearchLimit {
		return badRequest("search.limit: %d is more than %d", a.Limit, MaxSearchLimit)
	}
	return nil
}

func checkResourceTimeout(a Action) error {
	if a.Timeout.Std() > MaxResourceTimeout {
		return badRequest("%s.timeout: %s is more than %s, the longest a %s may take", a.Type, a.Timeout.Std(), MaxResourceTimeout, a.Type)
	}
	return nil
}

// FetchRequest is a fetch action's request to the http resource.
func (a Action) FetchRequest() FetchRequest {
	return FetchRequest{URL: a.URL, Method: a.Method, Headers: a.Headers, Body: a.Body, BodyBase64: a.BodyBase64,
		Timeout: a.Timeout, MaxRedirects: a.MaxRedirects, NoRedirects: a.NoRedirects, MaxBytes: a.MaxBytes,
		CookiesFrom: a.CookiesFrom, Readable: a.Readable}
}

// SearchRequest is a search action's request to the search resource.
func (a Action) SearchRequest() SearchRequest {
	return SearchRequest{Query: a.Query, Engine: a.Engine, Limit: a.Limit, Site: a.Site, Region: a.Region, Timeout: a.Timeout}
}

// DecodeFetchRequest parses and validates a request to the http resource
// with the fetch action's rules (bad_request naming the field).
func DecodeFetchRequest(data []byte) (FetchRequest, error) {
	a, err := decodeResourceRequest(data, "fetch")
	return a.FetchRequest(), err
}

// DecodeSearchRequest parses and validates a request to the search
// resource with the search action's rules.
func DecodeSearchRequest(data []byte) (SearchRequest, error) {
	a, err := decodeResourceRequest(data, "search")
	return a.SearchRequest(), err
}

// decodeResourceRequest decodes a resource's request as the action typ
// (its fields are the action's parameters, and nothing else).
func decodeResourceRequest(data []byte, typ string) (Action, error) {
	if err := checkText(data, "", typ); err != nil {
		return Action{}, err
	}
	fields, err := decodeObject(data, typ)
	if err != nil {
		return Action{}, err
	}
	for _, name := range []string{"type", "use", "basedOnSequence"} {
		if _, ok := fields[name]; ok {
			return Action{}, badRequest("%s.%s: not a field of a request to the %s resource (it is a plan action's)", typ, name, resourceOf(typ))
		}
	}
	fields["type"] = json.RawMessage(strconv.Quote(typ))
	obj, err := json.Marshal(fields)
	if err != nil {
		return Action{}, badRequest("%s: %v", typ, err)
	}
	return decodeAction(obj, typ)
}

func resourceOf(typ string) string {
	spec, _ := LookupAction(typ)
	return spec.Resource
}

// ResolveUse fills a's parameters named in a.Use from the values of the
// plan's earlier actions (results, by index), and clears Use. A path that
// leads nowhere, or to something that is not a string (or a number, for
// an integer parameter), is bad_request naming it and saying what is
// there.
func ResolveUse(a *Action, results []ActionResult) error {
	if len(a.Use) == 0 {
		return nil
	}
	spec, _ := LookupAction(a.Type)
	for name, ref := range a.Use {
		field := a.Type + ".use." + name
		step, path, _ := strings.Cut(ref, ".")
		i, err := strconv.Atoi(step)
		if err != nil || i < 0 || i >= len(results) {
			return badRequest("%s: %q names action %s, which has not run (%d ran before this one)", field, ref, step, len(results))
		}
		v, err := valueAt(results[i].Value, path)
		if err != nil {
			return badRequest("%s: %q: %v", field, ref, err)
		}
		param, _ := spec.param(name)
		raw, err := json.Marshal(v)
		if err != nil {
			return badRequest("%s: %v", field, err)
		}
		if n, isNumber := v.(json.Number); isNumber && param.Kind == KindString {
			raw, _ = json.Marshal(n.String())
		}
		if err := a.set(param, raw, field); err != nil {
			return err
		}
	}
	a.Use = nil
	return checkRequired(*a, a.Type)
}

// valueAt walks a JSON value along a dotted path of object keys and
// array indexes ("" is the value itself).
func valueAt(raw json.RawMessage, path string) (any, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("that action returned no value")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("that action's value is not JSON: %v", err)
	}
	if path == "" {
		return v, nil
	}
	walked := ""
	for _, key := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[key]
			if !ok {
				return nil, fmt.Errorf("%s has no %q (it has %s)", orValue(walked), key, strings.Join(sortedKeys(node), ", "))
			}
			v = next
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(node) {
				return nil, fmt.Errorf("%s has %d items; %q is not one of them", orValue(walked), len(node), key)
			}
			v = node[i]
		default:
			return nil, fmt.Errorf("%s is %s, not an object or array", orValue(walked), describeJSON(mustJSON(node)))
		}
		walked = strings.TrimPrefix(walked+"."+key, ".")
	}
	return v, nil
}

func orValue(walked string) string {
	if walked == "" {
		return "the value"
	}
	return walked
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func mustJSON(v any) []byte {
	data, _ := json.Marshal(v)
	return data
}

// A fetch's body outside the JSON: a request with the header
// HeaderBody: BodyRaw is answered, when the fetch succeeds, with the
// FetchReply without its body in the header HeaderReply and the body's
// bytes as the message's payload (the text's UTF-8, or the bytes base64
// would have carried). A large body then costs no JSON escaping and
// parsing on either side; the JSON reply stays the default for any
// client. Errors are the JSON ErrorReply either way.
const (
	HeaderBody  = "Framebus-Body"
	BodyRaw     = "raw"
	HeaderReply = "Framebus-Reply"
)
