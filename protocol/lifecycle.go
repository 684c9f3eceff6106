package protocol

// Browser lifecycle on the bus (ADR-006): requests on
// <prefix>.browser.<profile>.<op>, answered by the node that runs the
// profile even while its tabs are busy.

// DefaultProfile is the node's managed browser profile.
const DefaultProfile = "default"

// Lifecycle operations, the last token of their subject.
const (
	OpStatus   = "status"   // ProfileStatus of the profile; never an error
	OpLaunch   = "launch"   // start the browser; a no-op when it runs; answers the status
	OpClose    = "close"    // stop the browser and its tabs; answers the status
	OpPages    = "pages"    // the tabs (list_pages): a TabList
	OpNewTab   = "newtab"   // NewTabRequest in, TabReply out
	OpCloseTab = "closetab" // CloseTabRequest in, TabReply out
)

// ProfileStatus says whether a profile's browser runs (ADR-006's status).
type ProfileStatus struct {
	Name      string `json:"name"`
	Driver    string `json:"driver"` // "managed": launched and owned by the node
	Running   bool   `json:"running"`
	PageCount int    `json:"pageCount"`
	Endpoint  string `json:"endpoint,omitempty"` // the DevTools websocket while running
}

// StatusReply answers status, launch and close.
type StatusReply struct {
	OK       bool            `json:"ok"`
	Profiles []ProfileStatus `json:"profiles"`
}

// NewTabRequest opens a tab at URL (about:blank when empty).
type NewTabRequest struct {
	URL string `json:"url,omitempty"`
}

// CloseTabRequest closes a tab.
type CloseTabRequest struct {
	Tab string `json:"tab"`
}

// TabReply answers newtab and closetab with the tab concerned.
type TabReply struct {
	OK  bool    `json:"ok"`
	Tab TabInfo `json:"tab"`
}
