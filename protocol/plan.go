package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Plan is what an agent sends to a tab: one action or a sequence. Both of the
// frame seed's shapes are accepted on the wire ({"action": {...}} and
// {"actions": [...]}); after DecodePlan, Actions always holds the steps.
type Plan struct {
	Version int      `json:"version,omitempty"`
	ID      string   `json:"id,omitempty"`
	Agent   string   `json:"agent,omitempty"`
	Action  *Action  `json:"action,omitempty"`
	Actions []Action `json:"actions,omitempty"`
	// FullPage and FullPagePolicy override, for the frames this plan's
	// actions produce, what content they carry (one of FullPageFormats)
	// and when (one of FullPagePolicies); the node's settings when "".
	FullPage       string `json:"fullPage,omitempty"`
	FullPagePolicy string `json:"fullPagePolicy,omitempty"`
	// Deadline is when the client stops waiting for the plan's answer,
	// absolute (RFC 3339), as its clock saw it: the tab starts no action
	// of the plan at or after it (expired), and an action running then
	// is cut short there. Zero: no deadline but each action's own.
	Deadline time.Time `json:"deadline,omitzero"`
	// Sender is who sent the plan, as the bus server said (never read
	// from its JSON): the tab lets an agent hand back its own handoff
	// and answer its own question, not another's.
	Sender Sender `json:"-"`
}

// Expired reports whether the plan's deadline (if it has one) has passed
// at now.
func (p Plan) Expired(now time.Time) bool {
	return !p.Deadline.IsZero() && !now.Before(p.Deadline)
}

// FullPageFormats are the contents a frame's fullPage can hold.
var FullPageFormats = []string{"snapshot", "html", "text", "none"}

// FullPagePolicies say when a frame carries its content: when the URL
// changed (the frame seed's rule), also on a new document at the same URL,
// always, or when the URL changed and, on every other frame, what changed
// since the frame before (a snapshot's delta).
var FullPagePolicies = []string{"url-change", "document-change", "always", "delta"}

// DefaultSettleTimeout bounds how long a frame waits for its new
// document's load event before its content is captured anyway.
const DefaultSettleTimeout = 10 * time.Second

// Wait bounds a client's wait for the plan's reply: each action's own
// deadline plus the time the tab may take to settle its frame (a load,
// then the content capture), plus a margin for the bus.
func (p Plan) Wait() time.Duration {
	wait := 10 * time.Second
	for _, a := range p.Steps() {
		wait += a.EffectiveTimeout() + 2*DefaultSettleTimeout
	}
	return wait
}

// MaxPlanActions bounds a plan's length so one request cannot occupy a tab
// without end.
const MaxPlanActions = 1000

// Steps returns the plan's actions whichever shape it was written in.
func (p Plan) Steps() []Action {
	if p.Action != nil {
		return []Action{*p.Action}
	}
	return p.Actions
}

// DecodePlan parses and validates a plan. Every failure is a bad_request
// *Error whose message names the offending field and says what is expected.
func DecodePlan(data []byte) (Plan, error) {
	if err := checkText(data, "", "plan"); err != nil {
		return Plan{}, err
	}
	fields, err := decodeObject(data, "plan")
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	for name, raw := range fields {
		switch name {
		case "version":
			v, err := decodeInt(raw, "version")
			if err != nil {
				return Plan{}, err
			}
			if v < 0 || v > Version {
				return Plan{}, badRequest("version: %d is not supported (this node speaks protocol version %d)", v, Version)
			}
			p.Version = int(v)
		case "id":
			if err := decodeName(raw, "id", &p.ID); err != nil {
				return Plan{}, err
			}
		case "agent":
			if err := decodeName(raw, "agent", &p.Agent); err != nil {
				return Plan{}, err
			}
		case "fullPage", "fullPagePolicy":
			dst, allowed := &p.FullPage, FullPageFormats
			if name == "fullPagePolicy" {
				dst, allowed = &p.FullPagePolicy, FullPagePolicies
			}
			if err := decodeString(raw, name, dst); err != nil {
				return Plan{}, err
			}
			if !contains(allowed, *dst) {
				return Plan{}, badRequest("%s: %q is not one of %s", name, *dst, strings.Join(allowed, ", "))
			}
		case "deadline":
			if err := decodeDeadline(raw, &p.Deadline); err != nil {
				return Plan{}, err
			}
		case "action", "actions":
		default:
			return Plan{}, badRequest("%s: unknown plan field (expected action or actions, and optionally id, agent, version, fullPage, fullPagePolicy, deadline)", name)
		}
	}
	single, hasSingle := fields["action"]
	many, hasMany := fields["actions"]
	switch {
	case hasSingle && hasMany:
		return Plan{}, badRequest("plan: has both action and actions; send one action as action, or several as actions")
	case hasSingle:
		a, err := decodeAction(single, "action")
		if err != nil {
			return Plan{}, err
		}
		if err := checkUseOrder(a, 0); err != nil {
			return Plan{}, err
		}
		p.Actions = []Action{a}
	case hasMany:
		var raws []json.RawMessage
		if err := json.Unmarshal(many, &raws); err != nil || isNull(many) {
			return Plan{}, badRequest("actions: must be an array of actions")
		}
		if len(raws) == 0 {
			return Plan{}, badRequest("actions: is empty; a plan needs at least one action")
		}
		if len(raws) > MaxPlanActions {
			return Plan{}, badRequest("actions: has %d actions; at most %d are allowed in one plan", len(raws), MaxPlanActions)
		}
		for i, raw := range raws {
			a, err := decodeAction(raw, fmt.Sprintf("actions[%d]", i))
			if err != nil {
				return Plan{}, err
			}
			if err := checkUseOrder(a, i); err != nil {
				return Plan{}, err
			}
			p.Actions = append(p.Actions, a)
		}
	default:
		return Plan{}, badRequest("plan: has no action; send {\"action\": {...}} or {\"actions\": [...]}")
	}
	return p, nil
}

// decodeDeadline reads a plan's deadline: an RFC 3339 time with its zone
// (the encoding of Go's time.Time), from year 2000 on. A deadline before
// then is no deadline a client meant: a clock that far wrong would make
// the tab refuse every plan of it, so it is refused as malformed instead.
func decodeDeadline(raw json.RawMessage, out *time.Time) error {
	var s string
	if err := decodeString(raw, "deadline", &s); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return badRequest("deadline: %q is not an RFC 3339 time with its zone (e.g. 2026-11-28T09:30:00.5Z)", truncateText(s, 64))
	}
	if t.Year() < minDeadlineYear {
		return badRequest("deadline: %s is before %d: the sender's clock is wrong (nodes and clients need synchronised clocks)", s, minDeadlineYear)
	}
	*out = t
	return nil
}

// minDeadlineYear: a deadline before it comes from a clock that was never
// set (a board that starts at 1970), not from a client.
const minDeadlineYear = 2000

// truncateText cuts s to at most n bytes for a message.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// checkUseOrder: action i of a plan takes values only from actions
// before it.
func checkUseOrder(a Action, i int) error {
	for name, ref := range a.Use {
		step, _, _ := strings.Cut(ref, ".")
		if n, _ := strconv.Atoi(step); n >= i {
			before := fmt.Sprintf("an action takes values from actions 0 to %d", i-1)
			if i == 0 {
				before = "the first action of a plan has none before it"
			}
			return badRequest("actions[%d].use.%s: %q names action %d, which does not run before this one (%s)", i, name, ref, n, before)
		}
	}
	return nil
}

// Validate checks an Action built in Go (not decoded from JSON) by encoding
// and decoding it, so both paths apply exactly the same rules.
func (a Action) Validate() error {
	data, err := json.Marshal(a)
	if err != nil {
		return badRequest("action: %v", err)
	}
	_, err = decodeAction(data, "action")
	return err
}

func decodeAction(data []byte, path string) (Action, error) {
	fields, err := decodeObject(data, path)
	if err != nil {
		return Action{}, err
	}
	rawType, ok := fields["type"]
	if !ok {
		return Action{}, badRequest("%s.type: missing (one of %s)", path, strings.Join(actionTypes(), ", "))
	}
	var a Action
	if err := decodeString(rawType, path+".type", &a.Type); err != nil {
		return Action{}, err
	}
	spec, ok := LookupAction(a.Type)
	if !ok {
		return Action{}, badRequest("%s.type: unknown action type %q (one of %s)", path, a.Type, strings.Join(actionTypes(), ", "))
	}
	seen := map[string]string{} // canonical param name -> the JSON name used
	for name, raw := range fields {
		field := path + "." + name
		switch name {
		case "type":
			continue
		case "basedOnSequence":
			if isNull(raw) {
				continue
			}
			v, err := decodeInt(raw, field)
			if err != nil {
				return Action{}, err
			}
			if v < 1 {
				return Action{}, badRequest("%s: %d is not a sequence; sequences start at 1", field, v)
			}
			a.BasedOnSequence = &v
			continue
		case "use":
			if err := a.decodeUse(spec, raw, field); err != nil {
				return Action{}, err
			}
			continue
		}
		param, ok := spec.param(name)
		if !ok {
			return Action{}, badRequest("%s: %s does not take %q (it takes %s)", field, a.Type, name, spec.paramNames())
		}
		if other, dup := seen[param.Name]; dup {
			return Action{}, badRequest("%s: given twice, as %q and %q", path+"."+param.Name, other, name)
		}
		seen[param.Name] = name
		if err := a.set(param, raw, field); err != nil {
			return Action{}, err
		}
	}
	for name := range a.Use {
		if _, given := seen[name]; given {
			return Action{}, badRequest("%s.use.%s: %s is given, and taken from an earlier action too; give one", path, name, name)
		}
	}
	if err := checkRequired(a, path); err != nil {
		return Action{}, err
	}
	if spec.Check != nil {
		if err := spec.Check(a); err != nil {
			return Action{}, Errorf(CodeBadRequest, "%s: %v", path, err)
		}
	}
	return a, nil
}

// checkRequired refuses an action without a required parameter, unless
// the plan fills it from an earlier action (Use) when it runs.
func checkRequired(a Action, path string) error {
	spec, _ := LookupAction(a.Type)
	for _, p := range spec.Params {
		if _, used := a.Use[p.Name]; !p.Required || used {
			continue
		}
		missing := false
		switch v := a.field(p.Name).(type) {
		case *string:
			missing = *v == "" && !p.MayBeEmpty
		case *[]string:
			missing = len(*v) == 0
		}
		if missing {
			return badRequest("%s.%s: missing; %s needs %s", path, p.Name, a.Type, LowerFirst(p.Help))
		}
	}
	return nil
}

// decodeUse reads an action's use: parameter -> "<index>.<path>" (see
// Action.Use). Only string and integer parameters can be filled so.
func (a *Action) decodeUse(spec ActionSpec, raw json.RawMessage, field string) error {
	var use map[string]string
	if err := json.Unmarshal(raw, &use); err != nil || isNull(raw) {
		return badRequest("%s: must be an object of parameter names to \"<index>.<path>\" (e.g. {\"url\": \"0.results.0.url\"}), got %s", field, describeJSON(raw))
	}
	for name, ref := range use {
		p, ok := spec.param(name)
		if !ok {
			return badRequest("%s.%s: %s does not take %q (it takes %s)", field, name, a.Type, name, spec.paramNames())
		}
		if p.Kind != KindString && p.Kind != KindInt {
			return badRequest("%s.%s: only text and integer parameters can be taken from an earlier action", field, name)
		}
		step, _, _ := strings.Cut(ref, ".")
		if n, err := strconv.Atoi(step); err != nil || n < 0 {
			return badRequest("%s.%s: %q is not \"<index>.<path>\" (the index of an earlier action of the plan, from 0, then a dotted path into its value, e.g. 0.results.0.url)", field, name, ref)
		}
		if p.Name != name {
			delete(use, name)
			use[p.Name] = ref
		}
	}
	if len(use) > 0 {
		a.Use = use
	}
	return nil
}

func (s ActionSpec) param(name string) (Param, bool) {
	for _, p := range s.Params {
		if p.ClientOnly {
			continue
		}
		if p.Name == name {
			return p, true
		}
		for _, alias := range p.Aliases {
			if alias == name {
				return p, true
			}
		}
	}
	return Param{}, false
}

func (s ActionSpec) paramNames() string {
	names := []string{"basedOnSequence"}
	for _, p := range s.Params {
		if !p.ClientOnly {
			names = append(names, p.Name)
		}
	}
	return strings.Join(names, ", ")
}

// set stores one decoded parameter value into the action's field.
func (a *Action) set(p Param, raw json.RawMessage, field string) error {
	switch dst := a.field(p.Name).(type) {
	case *string:
		if err := decodeString(raw, field, dst); err != nil {
			return err
		}
		if p.Upper {
			*dst = strings.ToUpper(*dst)
		}
		if len(p.Choices) > 0 && !contains(p.Choices, *dst) {
			return badRequest("%s: %q is not one of %s", field, *dst, strings.Join(p.Choices, ", "))
		}
	case *[]string:
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil || isNull(raw) {
			return badRequest("%s: must be an array of strings, got %s", field, describeJSON(raw))
		}
		for i, v := range list {
			if v == "" {
				return badRequest("%s[%d]: is empty", field, i)
			}
		}
		*dst = list
	case *map[string]string:
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil || isNull(raw) {
			return badRequest("%s: must be an object of names to strings, got %s", field, describeJSON(raw))
		}
		*dst = m
	case *bool:
		if err := json.Unmarshal(raw, dst); err != nil || isNull(raw) {
			return badRequest("%s: must be true or false", field)
		}
	case *int:
		n, err := decodeInt(raw, field)
		if err != nil {
			return err
		}
		if n < int64(p.Min) || n > math.MaxInt32 {
			return badRequest("%s: %d is out of range (%d to %d)", field, n, p.Min, math.MaxInt32)
		}
		*dst = int(n)
	case *float64:
		if err := json.Unmarshal(raw, dst); err != nil || isNull(raw) {
			return badRequest("%s: must be a number, got %s", field, describeJSON(raw))
		}
		if *dst < 0 || math.IsInf(*dst, 0) {
			return badRequest("%s: %v is out of range (a number of 0 or more)", field, *dst)
		}
	case *Duration:
		if err := json.Unmarshal(raw, dst); err != nil {
			return badRequest("%s: %v", field, err)
		}
		if *dst < 0 {
			return badRequest("%s: must not be negative", field)
		}
	default:
		return Errorf(CodeInternal, "%s: declared parameter %q has no field", field, p.Name)
	}
	return nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// LowerFirst puts a sentence (a parameter's help) after other words: its
// first letter lowered, unless it starts an acronym (CSS, URL).
func LowerFirst(s string) string {
	if s == "" || len(s) > 1 && unicode.IsUpper(rune(s[1])) {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func decodeObject(data []byte, path string) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, badRequest("%s: empty; expected a JSON object", path)
	}
	valid := json.Valid(trimmed)
	switch {
	case trimmed[0] != '{' && !valid:
		return nil, badRequest("%s: expected a JSON object, got text that is not JSON", path)
	case trimmed[0] != '{':
		return nil, badRequest("%s: expected a JSON object, got %s", path, describeJSON(trimmed))
	case !valid:
		var v any // for the decoder's description of what is wrong
		err := json.Unmarshal(trimmed, &v)
		return nil, badRequest("%s: invalid JSON: %v", path, err)
	}
	fields, err := members(trimmed)
	if err != nil {
		return nil, badRequest("%s: invalid JSON: %v", path, err)
	}
	return fields, nil
}

func decodeString(raw json.RawMessage, field string, out *string) error {
	// Plain strings (no escapes) are the common case and need no decoder.
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0 && bytes.IndexByte(raw[1:n-1], '"') < 0 && utf8.Valid(raw) && !hasControl(raw) {
		*out = string(raw[1 : n-1])
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil || isNull(raw) {
		return badRequest("%s: must be a string, got %s", field, describeJSON(raw))
	}
	return nil
}

// MaxPlanName bounds a plan's id and agent, in bytes. Both go into every
// frame the plan makes and into its result, and a tab remembers recent
// ids: unbounded, an id near the bus's message size ran the plan and
// then lost its reply and frames to the size limit.
const MaxPlanName = 256

// decodeName is decodeString for a plan's id or agent: at most
// MaxPlanName bytes, no control characters (they travel into logs and
// terminals).
func decodeName(raw json.RawMessage, field string, out *string) error {
	if err := decodeString(raw, field, out); err != nil {
		return err
	}
	if len(*out) > MaxPlanName {
		return badRequest("%s: %d bytes long; at most %d are allowed", field, len(*out), MaxPlanName)
	}
	if i := strings.IndexFunc(*out, unicode.IsControl); i >= 0 {
		return badRequest("%s: has the control character %U at byte %d; use printable text", field, []rune((*out)[i:])[0], i)
	}
	return nil
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func decodeInt(raw json.RawMessage, field string) (int64, error) {
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || isNull(raw) {
		return 0, badRequest("%s: must be an integer, got %s", field, describeJSON(raw))
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, badRequest("%s: must be an integer, got %s", field, raw)
	}
	return int64(f), nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// describeJSON names the kind of a JSON value for error messages.
func describeJSON(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if len(raw) > 40 {
		raw = append(raw[:40:40], "..."...)
	}
	return string(raw)
}
