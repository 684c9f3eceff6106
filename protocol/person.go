package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// People in the loop: an agent hands a tab to a person (handoff) or asks
// one a question (ask); a person takes a tab over on their own, acts in
// it, and hands it back. See docs/people.md.

// Control states of a tab.
const (
	ControlPerson = "person" // a person has the tab: plans that change it get user_control
	ControlAgents = "agents" // the agents have it again (a handback frame)
)

// Kinds of a person's control.
const (
	ControlHandoff  = "handoff"  // an agent's handoff action asked for it
	ControlTakeover = "takeover" // a person took the tab on their own
)

// Ways a person's control ends, a handback frame's Ended.
const (
	EndedHandback  = "handback"  // a person handed it back
	EndedUntil     = "until"     // the handoff's until condition held
	EndedTimeout   = "timeout"   // the handoff's timeout (or its plan's deadline) passed
	EndedCancelled = "cancelled" // the agent cancelled the handoff's plan
)

// Frame actions of a person's control.
const (
	FrameHandoff  = "handoff"  // an agent handed the tab to a person
	FrameTakeover = "takeover" // a person took the tab
	FrameHandback = "handback" // the tab is the agents' again
	FrameInput    = "input"    // a person's input changed the page (no navigation)
)

// Control is who drives a tab, on a handoff, takeover or handback frame
// and in the tab's TabInfo while a person has it.
type Control struct {
	State string `json:"state"`          // ControlPerson or ControlAgents
	Kind  string `json:"kind,omitempty"` // ControlHandoff or ControlTakeover
	// Message is the agent's (handoff) or the person's (takeover) word
	// on what is to be done.
	Message string `json:"message,omitempty"`
	// Agent and PlanID: the handoff's plan.
	Agent  string `json:"agent,omitempty"`
	PlanID string `json:"planId,omitempty"`
	// By names the person who took the tab over, or handed it back: the
	// name their client gives (a label), else their bus user.
	By string `json:"by,omitempty"`
	// Holder is the bus user who has the tab, as the bus server said
	// (not a label): only they act in it. Empty while a handoff waits
	// for someone to take it, or when the node's own account took it.
	Holder string    `json:"holder,omitempty"`
	Since  time.Time `json:"since"`
	// Until is the handoff's condition (url, text, selector), and
	// Deadline when it times out.
	Until    map[string]string `json:"until,omitempty"`
	Deadline *time.Time        `json:"deadline,omitempty"`
	// Ended says how the person's control ended, on a handback frame.
	Ended string `json:"ended,omitempty"`
}

// Until conditions of a handoff: each given one must hold.
var untilKeys = []string{"url", "text", "selector", "timeout"}

// checkUntil validates a handoff's until: known keys, a URL pattern, a
// duration for timeout, and not both timeout and the action's timeout.
func checkUntil(a Action) error {
	if len(a.Message) > maxMessage {
		return fmt.Errorf("message: %d bytes; at most %d", len(a.Message), maxMessage)
	}
	for k, v := range a.Until {
		switch k {
		case "url", "text", "selector":
			if v == "" {
				return fmt.Errorf("until.%s: is empty", k)
			}
		case "timeout":
			d, err := untilDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("until.timeout: %q is not a positive duration (15m, 90s)", v)
			}
			if a.Timeout > 0 {
				return fmt.Errorf("until.timeout and timeout: give one")
			}
		default:
			return fmt.Errorf("until.%s: unknown condition (one of %s)", k, strings.Join(untilKeys, ", "))
		}
	}
	return nil
}

// UntilTimeout is a handoff's timeout as until gives it, 0 when it does not.
func (a Action) UntilTimeout() time.Duration {
	if v, ok := a.Until["timeout"]; ok {
		d, _ := untilDuration(v)
		return d
	}
	return 0
}

// untilDuration reads until.timeout as the wire reads a duration.
func untilDuration(v string) (time.Duration, error) {
	var d Duration
	q, _ := json.Marshal(v)
	err := d.UnmarshalJSON(q)
	return d.Std(), err
}

// DefaultHandoffTimeout is how long a handoff or ask waits for a person
// when it sets no timeout.
const DefaultHandoffTimeout = 15 * time.Minute

// checkAsk: a question's choices are distinct, short, and few.
func checkAsk(a Action) error {
	if len(a.Question) > maxMessage {
		return fmt.Errorf("question: %d bytes; at most %d", len(a.Question), maxMessage)
	}
	if len(a.Choices) > 64 {
		return fmt.Errorf("choices: %d; at most 64", len(a.Choices))
	}
	seen := map[string]bool{}
	for _, c := range a.Choices {
		if c == "" || len(c) > 256 || seen[c] {
			return fmt.Errorf("choices: %q is empty, longer than 256 bytes or given twice", c)
		}
		seen[c] = true
	}
	return nil
}

// MatchURL reports whether url matches a handoff's URL pattern: '*'
// stands for any run of characters, everything else for itself.
func MatchURL(pattern, url string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == url
	}
	if !strings.HasPrefix(url, parts[0]) {
		return false
	}
	rest := url[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return len(rest) >= len(last) && strings.HasSuffix(rest, last)
}

// ControlRequest asks a tab to change hands, on Subjects.TabControl:
// Op ControlTakeover (a person takes it) or ControlHandback (hands it
// back). By names the person; Message says why (takeover).
type ControlRequest struct {
	Op      string `json:"op"`
	By      string `json:"by,omitempty"`
	Message string `json:"message,omitempty"`
}

// ControlHandback is ControlRequest's Op that hands a tab back.
const ControlHandback = "handback"

// ControlReply answers a ControlRequest: the tab's control after it and
// its frame then (the takeover or handback frame it made).
type ControlReply struct {
	OK       bool     `json:"ok"`
	Tab      string   `json:"tab"`
	Sequence int64    `json:"sequence"`
	Control  *Control `json:"control,omitempty"`
}

// Check validates a control request.
func (r ControlRequest) Check() error {
	switch r.Op {
	case ControlTakeover, ControlHandback:
	default:
		return badRequest("op: %q is not takeover or handback", r.Op)
	}
	if err := checkLabel("by", r.By); err != nil {
		return err
	}
	if len(r.Message) > maxMessage {
		return badRequest("message: %d bytes; at most %d", len(r.Message), maxMessage)
	}
	return nil
}

// maxMessage bounds a handoff's message, a question and an answer.
const maxMessage = 4096

// checkLabel: a person's name is at most 256 bytes without control
// characters, as a plan's agent.
func checkLabel(field, v string) error {
	if len(v) > 256 {
		return badRequest("%s: %d bytes; at most 256", field, len(v))
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return badRequest("%s: has a control character", field)
		}
	}
	return nil
}

// Input kinds of an InputRequest.
const (
	InputMouse    = "mouse"    // Event move, down, up, wheel at X, Y
	InputKey      = "key"      // Event down or up of Key (a DOM key value)
	InputText     = "text"     // Text inserted as an input method does
	InputNavigate = "navigate" // URL loaded, as from the address bar
	InputBack     = "back"
	InputForward  = "forward"
	InputReload   = "reload"
)

// InputRequest is a person's input to a tab they control, on
// Subjects.TabInput: real mouse and key events, text, or a navigation.
// X and Y are CSS pixels in the page's viewport.
type InputRequest struct {
	Type       string  `json:"type"`
	Event      string  `json:"event,omitempty"`
	X          float64 `json:"x,omitempty"`
	Y          float64 `json:"y,omitempty"`
	Button     string  `json:"button,omitempty"` // left (default), middle, right
	ClickCount int     `json:"clickCount,omitempty"`
	DeltaX     float64 `json:"deltaX,omitempty"`
	DeltaY     float64 `json:"deltaY,omitempty"`
	Key        string  `json:"key,omitempty"`
	Text       string  `json:"text,omitempty"`
	URL        string  `json:"url,omitempty"`
	// Modifiers: Alt 1, Ctrl 2, Meta 4, Shift 8, as CDP has them.
	Modifiers int    `json:"modifiers,omitempty"`
	By        string `json:"by,omitempty"`
}

// InputReply answers an InputRequest with the tab's frame after it.
type InputReply struct {
	OK       bool  `json:"ok"`
	Sequence int64 `json:"sequence"`
}

// Check validates an input request.
func (r InputRequest) Check() error {
	switch r.Type {
	case InputMouse:
		switch r.Event {
		case "move", "down", "up", "wheel":
		default:
			return badRequest("event: %q is not move, down, up or wheel", r.Event)
		}
		switch r.Button {
		case "", "left", "middle", "right":
		default:
			return badRequest("button: %q is not left, middle or right", r.Button)
		}
		if r.X < 0 || r.Y < 0 || r.X > 1e5 || r.Y > 1e5 {
			return badRequest("x, y: %g, %g are not in the page", r.X, r.Y)
		}
		if r.ClickCount < 0 || r.ClickCount > 3 {
			return badRequest("clickCount: %d is not 0 to 3", r.ClickCount)
		}
	case InputKey:
		if r.Event != "down" && r.Event != "up" {
			return badRequest("event: %q is not down or up", r.Event)
		}
		if r.Key == "" || len(r.Key) > 32 {
			return badRequest("key: missing or too long (a DOM key value: a, Enter, ArrowLeft)")
		}
	case InputText:
		if r.Text == "" || len(r.Text) > maxMessage {
			return badRequest("text: empty or more than %d bytes", maxMessage)
		}
	case InputNavigate:
		if r.URL == "" {
			return badRequest("url: missing")
		}
	case InputBack, InputForward, InputReload:
	default:
		return badRequest("type: %q is not mouse, key, text, navigate, back, forward or reload", r.Type)
	}
	if r.Modifiers < 0 || r.Modifiers > 15 {
		return badRequest("modifiers: %d is not a bitmap of Alt 1, Ctrl 2, Meta 4, Shift 8", r.Modifiers)
	}
	return checkLabel("by", r.By)
}

// Question is an agent's ask, published on the tab's event.ask subject
// while it waits, and listed in its TabInfo.
type Question struct {
	ID       string     `json:"id"`
	Tab      string     `json:"tab"`
	Question string     `json:"question"`
	Choices  []string   `json:"choices,omitempty"`
	Agent    string     `json:"agent,omitempty"`
	PlanID   string     `json:"planId,omitempty"`
	Time     time.Time  `json:"time"`
	Deadline *time.Time `json:"deadline,omitempty"`
}

// Answer ends a question, on the tab's event.answer subject: a person's
// answer, or how it ended without one (Ended timeout, cancelled).
type Answer struct {
	ID     string    `json:"id"`
	Tab    string    `json:"tab"`
	Answer string    `json:"answer,omitempty"`
	By     string    `json:"by,omitempty"`
	Ended  string    `json:"ended,omitempty"`
	Time   time.Time `json:"time"`
}

// AnswerRequest answers a question, on Subjects.TabAnswer. ID may be
// left out when the tab has one question open.
type AnswerRequest struct {
	ID     string `json:"id,omitempty"`
	Answer string `json:"answer"`
	By     string `json:"by,omitempty"`
}

// Check validates an answer.
func (r AnswerRequest) Check() error {
	if r.Answer == "" || len(r.Answer) > maxMessage {
		return badRequest("answer: empty or more than %d bytes", maxMessage)
	}
	if err := checkLabel("by", r.By); err != nil {
		return err
	}
	return checkLabel("id", r.ID)
}

// PlanEvent is a plan's result as observers see it, on the tab's
// event.result subject: what it did, without the values it returned.
type PlanEvent struct {
	PlanResult
	Agent string    `json:"agent,omitempty"`
	Time  time.Time `json:"time"`
}

// NewPlanEvent strips a result's values for observers.
func NewPlanEvent(res PlanResult, agent string, at time.Time) PlanEvent {
	res.Results = append([]ActionResult(nil), res.Results...)
	for i := range res.Results {
		res.Results[i].Value = nil
	}
	return PlanEvent{PlanResult: res, Agent: agent, Time: at}
}

// DecodeControlRequest, DecodeInputRequest and DecodeAnswerRequest read
// and check their requests.
func DecodeControlRequest(data []byte) (ControlRequest, error) {
	var r ControlRequest
	if err := DecodeRequest(data, "control", &r); err != nil {
		return r, err
	}
	return r, r.Check()
}

func DecodeInputRequest(data []byte) (InputRequest, error) {
	var r InputRequest
	if err := DecodeRequest(data, "input", &r); err != nil {
		return r, err
	}
	return r, r.Check()
}

func DecodeAnswerRequest(data []byte) (AnswerRequest, error) {
	var r AnswerRequest
	if err := DecodeRequest(data, "answer", &r); err != nil {
		return r, err
	}
	return r, r.Check()
}

// WatchRequest asks a tab for its screencast for Seconds (at most
// MaxWatch; DefaultWatch when 0): pictures of its page, on its
// event.screen subject, whenever the page changes, at most MaxFPS a
// second. A viewer asks again before the lease ends; with no lease left
// the tab stops, and sends nothing.
type WatchRequest struct {
	Seconds int `json:"seconds,omitempty"`
	// Picture: send the latest picture again now (a new watcher of a
	// still page, which Chromium draws no new picture of).
	Picture bool `json:"picture,omitempty"`
	// Rate is how many pictures a second this watcher wants, at most
	// MaxScreenRate (0: that many); a thumbnail needs few. The tab sends
	// at the highest rate of the leases that last.
	Rate int `json:"rate,omitempty"`
}

// MaxScreenRate is the most pictures a second a tab sends, however fast
// its page changes.
const MaxScreenRate = 12

// WatchReply says until when the tab sends its pictures.
type WatchReply struct {
	OK    bool      `json:"ok"`
	Until time.Time `json:"until"`
}

// Watch leases.
const (
	DefaultWatch = 10
	MaxWatch     = 60
)

// ScreenHeader is the header of a screencast picture (its data is the
// JPEG): ScreenMeta as JSON.
const ScreenHeader = "Framebus-Screen"

// ScreenMeta describes a screencast picture: the viewport it shows in
// CSS pixels (input at x, y of the picture, scaled to it, lands there),
// when the page drew it and when the tab sent it, and the tab's frame
// then.
type ScreenMeta struct {
	Tab          string    `json:"tab"`
	Sequence     int64     `json:"sequence"`
	DeviceWidth  float64   `json:"deviceWidth"`
	DeviceHeight float64   `json:"deviceHeight"`
	OffsetTop    float64   `json:"offsetTop,omitempty"`
	ScrollX      float64   `json:"scrollX,omitempty"`
	ScrollY      float64   `json:"scrollY,omitempty"`
	Drawn        time.Time `json:"drawn"`
	Sent         time.Time `json:"sent"`
}
