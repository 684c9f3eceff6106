package actors

import (
	"strings"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// Every declared action of the browser has a handler, and every handler
// a declaration; every resource's action (fetch, search) is carried out
// by runResourceAction.
func TestEveryActionHasAHandler(t *testing.T) {
	declared := map[string]bool{}
	for _, s := range protocol.ActionSpecs() {
		declared[s.Type] = true
		if s.Resource != "" {
			r := (&Tab{}).runResourceAction(t.Context(), 0, protocol.Action{Type: s.Type})
			if r.Code != protocol.CodeBadRequest || !strings.Contains(r.Error, "no "+s.Resource+" resource") {
				t.Errorf("resource action %q without resources: %+v", s.Type, r)
			}
			continue
		}
		if s.Person {
			if !personActions[s.Type] {
				t.Errorf("action %q waits for a person but the resolver does not run it", s.Type)
			}
			continue
		}
		if handlers[s.Type] == nil {
			t.Errorf("action %q is declared in protocol but has no handler", s.Type)
		}
	}
	for name := range handlers {
		if !declared[name] {
			t.Errorf("handler %q has no declaration in protocol", name)
		}
	}
}
