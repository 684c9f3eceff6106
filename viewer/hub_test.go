package viewer

import (
	"testing"

	"github.com/framebus/framebus/protocol"
)

// A tab of a session is listed with the session's id and domain; others
// with none.
func TestTabsWithTheirSessions(t *testing.T) {
	tabs := []protocol.TabInfo{{Tab: "A"}, {Tab: "B"}}
	got := withSessions(tabs, []protocol.SessionInfo{{Session: "s1", Domain: "mail.example.com", Tabs: []protocol.TabInfo{{Tab: "B"}}}})
	if got[0].Session != "" || got[1].Session != "s1" || got[1].Domain != "mail.example.com" || got[1].Tab != "B" {
		t.Fatalf("tabs with sessions: %+v", got)
	}
}
