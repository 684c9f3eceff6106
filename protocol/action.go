package protocol

// Action is one step of a plan. Type selects the action; the other fields are
// its parameters (which ones apply to which type is declared in actions.go).
//
// BasedOnSequence is the frame the action was planned against: the action
// runs only while that frame is still the tab's current one. Nil means "run
// unconditionally" (for humans at the CLI).
type Action struct {
	Type string `json:"type"`

	URL        string   `json:"url,omitempty"`
	Selector   string   `json:"selector,omitempty"`
	Text       string   `json:"text,omitempty"`
	Value      string   `json:"value,omitempty"`
	Key        string   `json:"key,omitempty"`
	Expression string   `json:"expression,omitempty"`
	From       string   `json:"from,omitempty"`
	To         string   `json:"to,omitempty"`
	By         string   `json:"by,omitempty"`
	Answer     string   `json:"answer,omitempty"`
	Message    string   `json:"message,omitempty"`
	Question   string   `json:"question,omitempty"`
	Choices    []string `json:"choices,omitempty"`
	Files      []string `json:"files,omitempty"`
	Staged     []string `json:"staged,omitempty"`
	Format     string   `json:"format,omitempty"`
	Since      string   `json:"since,omitempty"`
	Search     string   `json:"search,omitempty"`
	Cursor     string   `json:"cursor,omitempty"`
	Device     string   `json:"device,omitempty"`
	UserAgent  string   `json:"userAgent,omitempty"`

	Wait        bool `json:"wait,omitempty"`
	Clear       bool `json:"clear,omitempty"`
	Keys        bool `json:"keys,omitempty"`
	Double      bool `json:"double,omitempty"`
	Right       bool `json:"right,omitempty"`
	Ctrl        bool `json:"ctrl,omitempty"`
	Alt         bool `json:"alt,omitempty"`
	Shift       bool `json:"shift,omitempty"`
	Meta        bool `json:"meta,omitempty"`
	Visible     bool `json:"visible,omitempty"`
	Hidden      bool `json:"hidden,omitempty"`
	Gone        bool `json:"gone,omitempty"`
	NetworkIdle bool `json:"networkIdle,omitempty"`
	FullPage    bool `json:"fullPage,omitempty"`
	Interactive bool `json:"interactive,omitempty"`
	NoIdle      bool `json:"noIdle,omitempty"`
	Settle      bool `json:"settle,omitempty"`
	Mobile      bool `json:"mobile,omitempty"`
	Touch       bool `json:"touch,omitempty"`

	Depth    int `json:"depth,omitempty"`
	MaxNodes int `json:"maxNodes,omitempty"`
	Width    int `json:"width,omitempty"`
	Height   int `json:"height,omitempty"`

	DeviceScaleFactor float64 `json:"deviceScaleFactor,omitempty"`

	IdleTimeout     Duration `json:"idleTimeout,omitempty"`
	Timeout         Duration `json:"timeout,omitempty"`
	BasedOnSequence *int64   `json:"basedOnSequence,omitempty"`

	// The http and search resources' parameters (fetch, search).
	Method       string            `json:"method,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Body         string            `json:"body,omitempty"`
	BodyBase64   bool              `json:"bodyBase64,omitempty"`
	MaxRedirects int               `json:"maxRedirects,omitempty"`
	NoRedirects  bool              `json:"noRedirects,omitempty"`
	MaxBytes     int               `json:"maxBytes,omitempty"`
	CookiesFrom  string            `json:"cookiesFrom,omitempty"`
	Readable     bool              `json:"readable,omitempty"`
	Query        string            `json:"query,omitempty"`
	Engine       string            `json:"engine,omitempty"`
	Limit        int               `json:"limit,omitempty"`
	Site         string            `json:"site,omitempty"`
	Region       string            `json:"region,omitempty"`

	// The page's logs (console, network) and fill-form.
	Level  string            `json:"level,omitempty"`
	Filter string            `json:"filter,omitempty"`
	Static bool              `json:"static,omitempty"`
	Fields map[string]string `json:"fields,omitempty"`

	// Until ends a handoff by itself (url, text, selector, timeout).
	Until map[string]string `json:"until,omitempty"`

	// Use fills parameters from what earlier actions of the plan returned:
	// parameter name -> "<index>.<path>", the index of an earlier action
	// and a path into its value ({"url": "0.results.0.url"}: the first
	// result of the search that is action 0). See ResolveUse.
	Use map[string]string `json:"use,omitempty"`
}

// Based returns a pointer to seq, for filling BasedOnSequence in literals.
func Based(seq int64) *int64 { return &seq }

// field returns a pointer to the Action field of a declared parameter:
// *string, *[]string, *map[string]string, *bool, *int, *float64 or *Duration. It is the one place that ties
// parameter names to fields; TestEveryActionDeclared checks it covers
// every declared parameter with the declared kind.
func (a *Action) field(name string) any {
	switch name {
	case "url":
		return &a.URL
	case "selector":
		return &a.Selector
	case "text":
		return &a.Text
	case "value":
		return &a.Value
	case "key":
		return &a.Key
	case "expression":
		return &a.Expression
	case "from":
		return &a.From
	case "to":
		return &a.To
	case "by":
		return &a.By
	case "answer":
		return &a.Answer
	case "message":
		return &a.Message
	case "question":
		return &a.Question
	case "choices":
		return &a.Choices
	case "until":
		return &a.Until
	case "files":
		return &a.Files
	case "staged":
		return &a.Staged
	case "wait":
		return &a.Wait
	case "clear":
		return &a.Clear
	case "keys":
		return &a.Keys
	case "double":
		return &a.Double
	case "right":
		return &a.Right
	case "ctrl":
		return &a.Ctrl
	case "alt":
		return &a.Alt
	case "shift":
		return &a.Shift
	case "meta":
		return &a.Meta
	case "visible":
		return &a.Visible
	case "hidden":
		return &a.Hidden
	case "gone":
		return &a.Gone
	case "networkIdle":
		return &a.NetworkIdle
	case "fullPage":
		return &a.FullPage
	case "format":
		return &a.Format
	case "interactive":
		return &a.Interactive
	case "noIdle":
		return &a.NoIdle
	case "settle":
		return &a.Settle
	case "depth":
		return &a.Depth
	case "maxNodes":
		return &a.MaxNodes
	case "since":
		return &a.Since
	case "search":
		return &a.Search
	case "cursor":
		return &a.Cursor
	case "device":
		return &a.Device
	case "userAgent":
		return &a.UserAgent
	case "mobile":
		return &a.Mobile
	case "touch":
		return &a.Touch
	case "width":
		return &a.Width
	case "height":
		return &a.Height
	case "deviceScaleFactor":
		return &a.DeviceScaleFactor
	case "idleTimeout":
		return &a.IdleTimeout
	case "timeout":
		return &a.Timeout
	case "method":
		return &a.Method
	case "headers":
		return &a.Headers
	case "body":
		return &a.Body
	case "bodyBase64":
		return &a.BodyBase64
	case "maxRedirects":
		return &a.MaxRedirects
	case "noRedirects":
		return &a.NoRedirects
	case "maxBytes":
		return &a.MaxBytes
	case "cookiesFrom":
		return &a.CookiesFrom
	case "readable":
		return &a.Readable
	case "query":
		return &a.Query
	case "engine":
		return &a.Engine
	case "limit":
		return &a.Limit
	case "site":
		return &a.Site
	case "region":
		return &a.Region
	case "level":
		return &a.Level
	case "filter":
		return &a.Filter
	case "static":
		return &a.Static
	case "fields":
		return &a.Fields
	}
	return nil
}
