package protocol

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
