package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDecodePlanShapes(t *testing.T) {
	single, err := DecodePlan([]byte(`{"action": {"type": "navigate", "url": "/product/123", "basedOnSequence": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(single.Actions) != 1 || single.Actions[0].URL != "/product/123" || *single.Actions[0].BasedOnSequence != 3 {
		t.Fatalf("single action decoded as %+v", single.Actions)
	}
	seq, err := DecodePlan([]byte(`{"actions": [
		{"type": "navigate", "url": "/search?q=products", "basedOnSequence": 1},
		{"type": "click", "element": "#result3", "basedOnSequence": 2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(seq.Actions) != 2 || seq.Actions[1].Selector != "#result3" || *seq.Actions[1].BasedOnSequence != 2 {
		t.Fatalf("action sequence decoded as %+v", seq.Actions)
	}
	unguarded, err := DecodePlan([]byte(`{"action": {"type": "eval", "expression": "1+1", "timeout": "250ms"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a := unguarded.Actions[0]; a.BasedOnSequence != nil || a.Timeout.Std() != 250*time.Millisecond {
		t.Fatalf("unguarded eval decoded as %+v", a)
	}
	ms, err := DecodePlan([]byte(`{"action": {"type": "eval", "expression": "1", "timeout": 1500}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := ms.Actions[0].EffectiveTimeout(); got != 1500*time.Millisecond {
		t.Fatalf("numeric timeout = %v, want 1.5s", got)
	}
}

func TestDecodePlanRejects(t *testing.T) {
	cases := []struct {
		name, plan, mention string
	}{
		{"bad JSON", `{"actions": [`, "invalid JSON"},
		{"not an object", `[1,2]`, "expected a JSON object"},
		{"empty body", ``, "empty"},
		{"no action", `{}`, "has no action"},
		{"both shapes", `{"action": {"type":"eval","expression":"1"}, "actions": []}`, "both action and actions"},
		{"empty actions", `{"actions": []}`, "actions: is empty"},
		{"actions not array", `{"actions": {"type":"eval"}}`, "must be an array"},
		{"unknown type", `{"action": {"type": "teleport"}}`, `unknown action type "teleport"`},
		{"missing type", `{"action": {"url": "/x"}}`, "action.type: missing"},
		{"missing url", `{"action": {"type": "navigate"}}`, "action.url: missing"},
		{"empty url", `{"action": {"type": "navigate", "url": ""}}`, "action.url: missing"},
		{"negative sequence", `{"action": {"type": "navigate", "url": "/", "basedOnSequence": -1}}`, "basedOnSequence: -1 is not a sequence"},
		{"zero sequence", `{"action": {"type": "navigate", "url": "/", "basedOnSequence": 0}}`, "sequences start at 1"},
		{"fractional sequence", `{"action": {"type": "navigate", "url": "/", "basedOnSequence": 1.5}}`, "must be an integer"},
		{"string sequence", `{"action": {"type": "navigate", "url": "/", "basedOnSequence": "2"}}`, "must be an integer"},
		{"wrong param", `{"action": {"type": "navigate", "url": "/", "selector": "#a"}}`, `navigate does not take "selector"`},
		{"url not string", `{"actions": [{"type": "navigate", "url": 5}]}`, "actions[0].url: must be a string"},
		{"bad timeout", `{"action": {"type": "eval", "expression": "1", "timeout": "soon"}}`, `duration "soon"`},
		{"negative timeout", `{"action": {"type": "eval", "expression": "1", "timeout": -5}}`, "must not be negative"},
		{"huge timeout", `{"action": {"type": "eval", "expression": "1", "timeout": 1e13}}`, "timeout: duration 1e13 (milliseconds) is longer than the longest allowed, 24h0m0s"},
		{"overflowing timeout", `{"action": {"type": "eval", "expression": "1", "timeout": 1e300}}`, "longer than the longest allowed"},
		{"huge duration", `{"action": {"type": "eval", "expression": "1", "timeout": "9999999h"}}`, `duration 9999999h is longer than the longest allowed`},
		{"long duration", `{"action": {"type": "eval", "expression": "1", "timeout": "25h"}}`, `duration 25h is longer than the longest allowed`},
		{"key twice", `{"action": {"type": "click", "selector": "#a", "type": "navigate"}}`, `invalid JSON: "type" is given twice`},
		{"action twice", `{"action": {"type": "eval", "expression": "1"}, "action": {"type": "eval", "expression": "2"}}`, `"action" is given twice`},
		{"alias twice", `{"action": {"type": "click", "selector": "#a", "element": "#b"}}`, "given twice"},
		{"unknown plan field", `{"action": {"type": "eval", "expression": "1"}, "foo": 1}`, "foo: unknown plan field"},
		{"future version", `{"version": 99, "action": {"type": "eval", "expression": "1"}}`, "version: 99 is not supported"},
		{"second action bad", `{"actions": [{"type": "eval", "expression": "1"}, {"type": "click"}]}`, "actions[1].selector: missing"},
		{"deadline not a time", `{"deadline": "soon", "action": {"type": "eval", "expression": "1"}}`, `deadline: "soon" is not an RFC 3339 time`},
		{"deadline without zone", `{"deadline": "2026-11-28T09:30:00", "action": {"type": "eval", "expression": "1"}}`, "with its zone"},
		{"deadline a number", `{"deadline": 1764322200, "action": {"type": "eval", "expression": "1"}}`, "deadline: must be a string"},
		{"deadline of an unset clock", `{"deadline": "1970-01-01T00:00:05Z", "action": {"type": "eval", "expression": "1"}}`, "is before 2000: the sender's clock is wrong"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePlan([]byte(tc.plan))
			if err == nil {
				t.Fatalf("plan %s was accepted", tc.plan)
			}
			if !errors.Is(err, &Error{Code: CodeBadRequest}) {
				t.Fatalf("code = %q, want bad_request (%v)", CodeOf(err), err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

// A plan's deadline travels as RFC 3339 and comes back the same instant,
// in whatever zone it was written; Expired holds from the deadline on.
func TestPlanDeadline(t *testing.T) {
	p, err := DecodePlan([]byte(`{"deadline": "2026-11-28T10:30:00.123456789+01:00", "action": {"type": "eval", "expression": "1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 28, 9, 30, 0, 123456789, time.UTC)
	if !p.Deadline.Equal(want) {
		t.Fatalf("deadline decoded as %v, want %v", p.Deadline, want)
	}
	if p.Expired(want.Add(-time.Nanosecond)) || !p.Expired(want) || !p.Expired(want.Add(time.Hour)) {
		t.Fatal("Expired does not hold exactly from the deadline on")
	}
	data, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodePlan(data)
	if err != nil || !back.Deadline.Equal(want) {
		t.Fatalf("%s decoded again: %v, %v", data, back.Deadline, err)
	}
	none, err := DecodePlan([]byte(`{"action": {"type": "eval", "expression": "1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if none.Expired(time.Now().Add(1000*time.Hour)) || strings.Contains(string(must(Marshal(none))), "deadline") {
		t.Fatalf("a plan without a deadline expires, or encodes one: %+v", none)
	}
}

func must(data []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return data
}

func TestActionValidateMatchesDecode(t *testing.T) {
	if err := (Action{Type: "click", Selector: "#a", BasedOnSequence: Based(2)}).Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Action{Type: "click"}).Validate(); CodeOf(err) != CodeBadRequest {
		t.Fatalf("click without selector: %v", err)
	}
}

func TestDurationRoundTrip(t *testing.T) {
	a := Action{Type: "eval", Expression: "1", Timeout: Duration(500 * time.Millisecond)}
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"timeout":"500ms"`) {
		t.Fatalf("encoded %s", data)
	}
	p, err := DecodePlan([]byte(`{"action":` + string(data) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Actions[0].Timeout.Std() != 500*time.Millisecond {
		t.Fatalf("round trip gave %v", p.Actions[0].Timeout.Std())
	}
}

func TestEveryActionDeclared(t *testing.T) {
	for _, s := range ActionSpecs() {
		if s.Summary == "" {
			t.Errorf("%s has no summary", s.Type)
		}
		rest := false
		for i, p := range s.Params {
			if p.Help == "" {
				t.Errorf("%s.%s has no help", s.Type, p.Name)
			}
			var a Action
			f := a.field(p.Name)
			switch {
			case p.ClientOnly:
				if f != nil {
					t.Errorf("%s.%s is client-only but has an Action field", s.Type, p.Name)
				}
				continue
			case f == nil:
				t.Errorf("%s.%s has no Action field", s.Type, p.Name)
				continue
			}
			ok := false
			switch f.(type) {
			case *string:
				ok = p.Kind == KindString
			case *[]string:
				ok = p.Kind == KindStrings
			case *map[string]string:
				ok = p.Kind == KindMap
			case *bool:
				ok = p.Kind == KindBool
			case *Duration:
				ok = p.Kind == KindDuration
			case *int:
				ok = p.Kind == KindInt
			case *float64:
				ok = p.Kind == KindNumber
			}
			if !ok {
				t.Errorf("%s.%s: kind %d does not match its field %T", s.Type, p.Name, p.Kind, f)
			}
			if p.Rest {
				if rest || !p.Positional || i != lastPositional(s) {
					t.Errorf("%s.%s: only the last positional parameter can take the rest", s.Type, p.Name)
				}
				rest = true
			}
		}
	}
	for _, c := range Codes {
		if !c.Code.Known() || c.Meaning == "" {
			t.Errorf("code %q undocumented", c.Code)
		}
	}
}

func lastPositional(s ActionSpec) int {
	last := -1
	for i, p := range s.Params {
		if p.Positional {
			last = i
		}
	}
	return last
}

func TestActionChecks(t *testing.T) {
	bad := []struct{ plan, mention string }{
		{`{"action": {"type": "scroll"}}`, "give a selector (scroll it into view), to (x,y) or by (x,y)"},
		{`{"action": {"type": "scroll", "to": "0,0", "by": "0,10"}}`, "give to (x,y) or by (x,y), not both"},
		{`{"action": {"type": "scroll", "to": "ten,20"}}`, `"ten,20" is not x,y`},
		{`{"action": {"type": "wait-for", "selector": "#a", "visible": true, "gone": true}}`, "visible and gone cannot be combined"},
		{`{"action": {"type": "click", "selector": "#a", "double": true, "right": true}}`, "double and right cannot be combined"},
		{`{"action": {"type": "dialog", "answer": "maybe"}}`, `"maybe" is not one of accept, dismiss`},
		{`{"action": {"type": "upload", "selector": "#f", "files": []}}`, "files: missing"},
		{`{"action": {"type": "upload", "selector": "#f", "files": "a.txt"}}`, "must be an array of strings"},
		{`{"action": {"type": "screenshot", "out": "x.png"}}`, `screenshot does not take "out"`},
		{`{"action": {"type": "type"}}`, "text: missing"},
	}
	for _, tc := range bad {
		_, err := DecodePlan([]byte(tc.plan))
		if CodeOf(err) != CodeBadRequest || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: %v, want bad_request mentioning %q", tc.plan, err, tc.mention)
		}
	}
	good := []string{
		`{"action": {"type": "scroll", "by": "0, 400"}}`,
		`{"action": {"type": "type", "text": "hello"}}`,
		`{"action": {"type": "key", "key": "a", "ctrl": true, "shift": true}}`,
		`{"action": {"type": "upload", "selector": "#f", "files": ["/tmp/a.txt", "/tmp/b.txt"]}}`,
		`{"action": {"type": "wait-for", "element": "#a", "gone": true, "timeout": "1.5s"}}`,
		`{"action": {"type": "ready", "networkIdle": true}}`,
		`{"action": {"type": "title"}}`,
	}
	for _, p := range good {
		if _, err := DecodePlan([]byte(p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if m := (Action{Ctrl: true, Shift: true}).Modifiers(); m != 10 {
		t.Errorf("ctrl+shift = %d, want 10", m)
	}
}

func TestSubjects(t *testing.T) {
	s, err := NewSubjects("acme.fb")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.TabPlan("T1"); got != "acme.fb.tab.T1.plan" {
		t.Fatalf("TabPlan = %q", got)
	}
	if got := s.TabStage("T1"); got != "acme.fb.tab.T1.stage" {
		t.Fatalf("TabStage = %q", got)
	}
	if got := DefaultSubjects.AllFrames(); got != "framebus.tab.*.frame" {
		t.Fatalf("AllFrames = %q", got)
	}
	for _, bad := range []string{"a..b", "a b", "a.*", ">", "x."} {
		if _, err := NewSubjects(bad); err == nil {
			t.Errorf("prefix %q accepted", bad)
		}
	}
	if ValidTabID("a.b") || ValidTabID("") || !ValidTabID("ABC-12_x") {
		t.Fatal("ValidTabID wrong")
	}
}

// A plan's id and agent are short printable text: an id near the bus's
// message size ran and then lost its reply to the size limit.
func TestPlanNames(t *testing.T) {
	long := strings.Repeat("a", 256)
	for _, c := range []struct {
		plan string
		want string // "" for ok
	}{
		{`{"id":"` + long + `","action":{"type":"reload"}}`, ""},
		{`{"agent":"` + long + `","action":{"type":"reload"}}`, ""},
		{`{"id":"p-1 é ✓","action":{"type":"reload"}}`, ""},
		{`{"id":"` + long + `a","action":{"type":"reload"}}`, "id: 257 bytes long; at most 256 are allowed"},
		{`{"agent":"` + strings.Repeat("a", 10240) + `","action":{"type":"reload"}}`, "agent: 10240 bytes long; at most 256 are allowed"},
		{`{"id":"a\nb","action":{"type":"reload"}}`, "id: has the control character U+000A at byte 1; use printable text"},
		{`{"id":"a\u0000b","action":{"type":"reload"}}`, "id: has the control character U+0000 at byte 1; use printable text"},
		{`{"agent":"x\u0085","action":{"type":"reload"}}`, "agent: has the control character U+0085 at byte 1; use printable text"},
	} {
		_, err := DecodePlan([]byte(c.plan))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%.60s: %v", c.plan, err)
		case c.want != "" && (err == nil || err.Error() != c.want || CodeOf(err) != CodeBadRequest):
			t.Errorf("%.60s: %v (%s), want bad_request %q", c.plan, err, CodeOf(err), c.want)
		}
	}
}
