package protocol

// Action is one step of a plan. Type selects the action; the other fields are
// its parameters (which ones apply is declared in actions.go).
//
// BasedOnSequence is the frame the action was planned against: the action
// runs only while that frame is still the tab's current one. Nil means "run
// unconditionally" (for humans at the CLI).
type Action struct {
	Type            string   `json:"type"`
	URL             string   `json:"url,omitempty"`
	Selector        string   `json:"selector,omitempty"`
	Expression      string   `json:"expression,omitempty"`
	Timeout         Duration `json:"timeout,omitempty"`
	Wait            bool     `json:"wait,omitempty"`
	BasedOnSequence *int64   `json:"basedOnSequence,omitempty"`
}

// Based returns a pointer to seq, for filling BasedOnSequence in literals.
func Based(seq int64) *int64 { return &seq }
