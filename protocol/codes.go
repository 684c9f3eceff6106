package protocol

// Code is a stable, machine-readable error code. Clients branch on it; the
// human-readable message may change between releases, the code may not.
type Code string

// The error codes, one table so they are documented and enumerable in one place.
const (
	CodeBadRequest        Code = "bad_request"
	CodeStaleFrame        Code = "stale_frame"
	CodeElementNotFound   Code = "element_not_found"
	CodeElementCovered    Code = "element_covered"
	CodeNotVisible        Code = "not_visible"
	CodeDialogOpen        Code = "dialog_open"
	CodeStaleRef          Code = "stale_ref"
	CodeSnapshotGone      Code = "snapshot_gone"
	CodeNavigationFailed  Code = "navigation_failed"
	CodeNoHistory         Code = "no_history"
	CodeTimeout           Code = "timeout"
	CodeJSError           Code = "js_error"
	CodePermissionDenied  Code = "permission_denied"
	CodeBrowserNotRunning Code = "browser_not_running"
	CodeProfileInUse      Code = "profile_in_use"
	CodeProfileNotFound   Code = "profile_not_found"
	CodeNotLaunchable     Code = "not_launchable"
	CodeSessionNotFound   Code = "session_not_found"
	CodeTabNotFound       Code = "tab_not_found"
	CodeTabClosed         Code = "tab_closed"
	CodePageCrashed       Code = "page_crashed"
	CodeTooLarge          Code = "too_large"
	CodeResultTooLarge    Code = "result_too_large"
	CodeCancelled         Code = "cancelled"
	CodeExpired           Code = "expired"
	CodeOutcomeUnknown    Code = "outcome_unknown"
	CodeUnavailable       Code = "unavailable"
	CodeNodeUnavailable   Code = "node_unavailable"
	CodeNodeNameTaken     Code = "node_name_taken"
	CodeNodeFull          Code = "node_full"
	CodeFetchFailed       Code = "fetch_failed"
	CodeSearchFailed      Code = "search_failed"
	CodeUserControl       Code = "user_control"
	CodeNotInControl      Code = "not_in_control"
	CodeInternal          Code = "internal"
)

// Codes lists every code with what it means, for docs and `framebus help`.
var Codes = []struct {
	Code    Code
	Meaning string
}{
	{CodeBadRequest, "the request is malformed; the message names the field and what is expected"},
	{CodeStaleFrame, "the action's basedOnSequence is no longer the tab's current frame; nothing was run"},
	{CodeElementNotFound, "no element matches the selector"},
	{CodeElementCovered, "another element covers the element's centre, so a click (or hover, or drag) would land on it; the message names it and the action, and nothing is done"},
	{CodeNotVisible, "the element is there but not where a user sees it: hidden (display:none, visibility:hidden), of zero size, or off the page where no scrolling reaches (a closed off-canvas menu); the message says which, and for one off the page where it lies and beyond which edge. Nothing is done"},
	{CodeDialogOpen, "a JavaScript dialog is open and blocks the page; answer it with the dialog action"},
	{CodeStaleRef, "the element a snapshot ref pointed to is gone"},
	{CodeSnapshotGone, "the snapshot a cursor names is no longer kept by its tab (the page loaded another document, the node restarted, or many snapshots were taken since): take the snapshot again"},
	{CodeNavigationFailed, "the browser could not load the page (net::ERR_... text in the message)"},
	{CodeNoHistory, "back or forward at the end of the tab's history"},
	{CodeTimeout, "the operation did not finish within its deadline; the tab stays usable"},
	{CodeJSError, "the page's JavaScript threw; the message is the exception text"},
	{CodePermissionDenied, "the whitelist forbids the domain, a path lies outside the file roots, or a profile directory holds a link the browser's account could have put there; the message names it"},
	{CodeBrowserNotRunning, "the profile's browser is not running; the message says how to launch it"},
	{CodeProfileInUse, "the browser profile is in use by another node or browser; the message names the directory and who holds it"},
	{CodeProfileNotFound, "no profile of that name on the node; the message lists the profiles it has"},
	{CodeNotLaunchable, "the profile attaches to a browser framebus does not start (driver \"attach\"); connect to it instead"},
	{CodeSessionNotFound, "no session with that id on the bus"},
	{CodeTabNotFound, "no tab with that id on the bus"},
	{CodeTabClosed, "the tab closed or its browser connection was lost while the request waited"},
	{CodePageCrashed, "the page's renderer crashed; navigate, reload, back or forward load a page again"},
	{CodeTooLarge, "the answer is more than one bus message carries; the action ran, its value is left out: ask for less"},
	{CodeResultTooLarge, "an action's value (eval, html, text, snapshot, screenshot) is larger than a reply carries; the page checks it before sending it, so this comes at once, stating the size and the limit. The action ran (its frame is there), the tab stays usable: ask for less (a selector, a part of the value)"},
	{CodeCancelled, "the plan was cancelled (a cancel request, the CLI's Ctrl-C) while it ran or waited; an action cut short may have acted, and then made its frame"},
	{CodeExpired, "the plan's deadline passed before this action started: it and the actions after it did not run (those before it did, as its results say). Nothing will run later; send the plan again, under a new id and with a new deadline, if it is still wanted"},
	{CodeOutcomeUnknown, "the answer was lost; the plan may have run: its answer did not come back by the client's deadline although the plan was sent, or (duplicate: true) it ran before its tab's node restarted and its result was lost with the node. Its frames name its plan id: look before sending it again (framebus frames --tab TAB, or the tab's history). Sent again under the same id it does not run twice"},
	{CodeUnavailable, "nothing answered on the bus (no node running, or it is shutting down or restarting), or a restarted node's tab is on its way back; the request was not taken: try again in a moment (a plan under the same id: one the tab began before is never run twice)"},
	{CodeNodeUnavailable, "the node that has the tab (or session) is gone: it stopped or died, and nothing answers for it, or it lost its liveness (frozen or cut off: the node registry forgot it, or nothing answered for it for the registry's TTL); the message names the node and says which"},
	{CodeNodeNameTaken, "another live node on the bus has this node name; the message names its host and process (or, in a cluster, that the routes between the two servers of that name are refused). Pick another name (--node), or stop that node"},
	{CodeNodeFull, "the node has as many tabs as it takes (serve --max-tabs, node.maxTabs; by default derived from its memory and cores), or every node that has the profile has: nothing was opened; the message names the nodes and their bound. Close a tab, or pin another node with --node. For a staged file: the node's tabs hold as many staged bytes as it takes (serve --max-staged-bytes, files.maxStagedBytes): nothing was staged; abort staged files not needed or close tabs that hold some, then stage again"},
	{CodeFetchFailed, "an http fetch got no HTTP answer: the server could not be reached, closed the connection early, answered something that is not HTTP, or redirected more often than allowed (a loop); the message says which and where"},
	{CodeSearchFailed, "the search engine answered, but not with results: a captcha or block page, a quota or key error, a page it does not know how to read; the message says which"},
	{CodeUserControl, "a person has the tab (an agent's handoff, or a takeover): an action that would change it is refused at once, and nothing ran; the message names the person's task and since when. Read-only actions still run. Plan again from the handback frame (action handback)"},
	{CodeNotInControl, "a person's input or handback for a tab no person has: take it over first (framebus takeover TAB, the viewer's Take over)"},
	{CodeInternal, "a framebus bug or an unexpected browser reply"},
}

// Known reports whether c is one of the codes in Codes.
func (c Code) Known() bool {
	for _, k := range Codes {
		if k.Code == c {
			return true
		}
	}
	return false
}
