package actors

import (
	"testing"

	"github.com/framebus/framebus/protocol"
)

// Every declared action has a handler, and every handler a declaration.
func TestEveryActionHasAHandler(t *testing.T) {
	declared := map[string]bool{}
	for _, s := range protocol.ActionSpecs() {
		declared[s.Type] = true
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
