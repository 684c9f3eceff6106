package actors

import (
	"encoding/json"

	"github.com/framebus/framebus/protocol"
)

// blockedEvent is the message on <prefix>.tab.<tab>.event.blocked for each
// request the whitelist refused.
type blockedEvent struct {
	Tab          string `json:"tab"`
	URL          string `json:"url"`
	ResourceType string `json:"resourceType"`
	Document     bool   `json:"document"` // a navigation of the tab
	Error        string `json:"error"`
}

// reportBlocked publishes the requests refused since the last call and
// returns the permission_denied error of the first refused navigation of
// the tab, if any.
func (t *Tab) reportBlocked() error {
	var denied error
	for _, b := range t.nav.blocked {
		data, _ := json.Marshal(blockedEvent{Tab: t.id, URL: b.URL, ResourceType: b.ResourceType, Document: b.Document, Error: b.Err.Error()})
		_ = t.nc.Publish(t.subj.TabEvents(t.id, "blocked"), data)
		if b.Document && denied == nil {
			denied = protocol.Errorf(protocol.CodePermissionDenied, "%v (the browser refused to load %s)", b.Err, b.URL)
		}
	}
	t.nav.blocked = t.nav.blocked[:0]
	return denied
}
