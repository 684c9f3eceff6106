package frames

import "fmt"

// Policy says when a frame carries the page's content.
type Policy string

const (
	// PolicyURLChange: when the URL differs from the previous frame's,
	// same-document route changes included (the frame seed's rule).
	PolicyURLChange Policy = "url-change"
	// PolicyDocumentChange: also when a new document loaded at the same URL (reload).
	PolicyDocumentChange Policy = "document-change"
	// PolicyAlways: every frame.
	PolicyAlways Policy = "always"
	// PolicyDelta: the whole content when the URL changes, and on every
	// other frame what changed since the frame before it (a snapshot's
	// delta, FormatSnapshotDelta), so observers see what each action
	// did. The snapshot format only; the others carry their whole
	// content as PolicyAlways does.
	PolicyDelta Policy = "delta"
)

// Format is what a frame's fullPage holds.
type Format string

const (
	FormatSnapshot Format = "snapshot" // the accessibility snapshot, text form, with refs
	FormatHTML     Format = "html"     // the serialized DOM (document.documentElement.outerHTML)
	FormatText     Format = "text"     // the visible text (document.body.innerText)
	FormatNone     Format = "none"     // never include content
	// FormatSnapshotDelta is a frame's content under PolicyDelta: the
	// change from the snapshot of frame FullPageSince (snaptext).
	FormatSnapshotDelta Format = "snapshot-delta"
)

// DefaultFormat is the content a frame carries unless configured otherwise.
const DefaultFormat = FormatSnapshot

// ParsePolicy checks a policy name; "" means PolicyURLChange.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "":
		return PolicyURLChange, nil
	case PolicyURLChange, PolicyDocumentChange, PolicyAlways, PolicyDelta:
		return p, nil
	}
	return "", fmt.Errorf("full-page policy %q: want url-change, document-change, always or delta", s)
}

// ParseFormat checks a format name; "" means DefaultFormat.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case "":
		return DefaultFormat, nil
	case FormatSnapshot, FormatHTML, FormatText, FormatNone:
		return f, nil
	}
	return "", fmt.Errorf("full-page format %q: want snapshot, html, text or none", s)
}
