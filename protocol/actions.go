package protocol

import (
	"sort"
	"time"
)

// ParamKind is the type of an action parameter, used by validation and by
// the CLI to parse flags.
type ParamKind int

const (
	KindString ParamKind = iota
	KindBool
	KindDuration
)

// Param declares one parameter of an action.
type Param struct {
	Name       string // JSON field name, also the CLI flag name
	Kind       ParamKind
	Positional bool // given as a positional argument on the CLI, in declaration order
	Required   bool
	Aliases    []string // other JSON names accepted for it (the frame seed's "element")
	Help       string
}

// ActionSpec declares an action once: its name, what it does, whether it
// changes page state (and so produces a frame), and its parameters. The
// protocol validator, the CLI, the REPL and the docs all read this table;
// the tab actor keys its handlers by Type.
type ActionSpec struct {
	Type    string
	Summary string
	// Mutates: a state-changing action produces exactly one frame when it
	// runs; a read-only one produces none.
	Mutates bool
	// DefaultTimeout bounds the action when the plan gives none.
	DefaultTimeout time.Duration
	Params         []Param
}

// DefaultActionTimeout is the deadline of an action that declares none.
const DefaultActionTimeout = 30 * time.Second

var timeoutParam = Param{Name: "timeout", Kind: KindDuration, Help: "deadline for the action (e.g. 500ms, 2s; a number is milliseconds)"}

var actionSpecs = []ActionSpec{
	{
		Type:    "navigate",
		Summary: "load a URL in the tab (example.com -> https, localhost and IPs -> http)",
		Mutates: true,
		Params: []Param{
			{Name: "url", Positional: true, Required: true, Help: "the URL to load"},
			{Name: "wait", Kind: KindBool, Help: "also wait for the load event before answering"},
			timeoutParam,
		},
	},
	{
		Type:    "click",
		Summary: "click the element matching a CSS selector with real mouse events",
		Mutates: true,
		Params: []Param{
			{Name: "selector", Positional: true, Required: true, Aliases: []string{"element"}, Help: "CSS selector of the element"},
			timeoutParam,
		},
	},
	{
		Type:    "eval",
		Summary: "evaluate a JavaScript expression in the page; promises are awaited",
		Mutates: true,
		Params: []Param{
			{Name: "expression", Positional: true, Required: true, Help: "the JavaScript expression"},
			timeoutParam,
		},
	},
}

// ActionSpecs returns every declared action, sorted by type.
func ActionSpecs() []ActionSpec {
	out := append([]ActionSpec(nil), actionSpecs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// LookupAction returns the declaration of an action type.
func LookupAction(typ string) (ActionSpec, bool) {
	for _, s := range actionSpecs {
		if s.Type == typ {
			return s, true
		}
	}
	return ActionSpec{}, false
}

// EffectiveTimeout is the action's own timeout or its declared default.
func (a Action) EffectiveTimeout() time.Duration {
	if a.Timeout > 0 {
		return a.Timeout.Std()
	}
	if s, ok := LookupAction(a.Type); ok && s.DefaultTimeout > 0 {
		return s.DefaultTimeout
	}
	return DefaultActionTimeout
}

func actionTypes() []string {
	var names []string
	for _, s := range ActionSpecs() {
		names = append(names, s.Type)
	}
	return names
}
