package mcpserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/framebus/framebus/protocol"
)

// actionOutcome is an action tool's result: where the tab is after the
// call, what the action answered, and the new frame's page when the URL
// changed. It is the structured content; its text form leads with the
// tab and frame.
type actionOutcome struct {
	OK       bool   `json:"ok"`
	Tab      string `json:"tab"`
	Sequence int64  `json:"sequence"` // the tab's current frame after the call
	// Frame is the frame the action made (0 for a read-only action).
	Frame  int64           `json:"frame,omitempty"`
	URL    string          `json:"url,omitempty"`
	Title  string          `json:"title,omitempty"`
	Status int             `json:"status,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	// View is what the result shows of the page after the action (see
	// pages.go); its text is in the result's text only: sent twice it
	// would double the largest results.
	View *pageView `json:"page,omitempty"`
	Note string    `json:"note,omitempty"`
}

// head is the first line of a result's text: the tab and its frame.
func (o actionOutcome) head() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tab %s · frame %d", o.Tab, o.Sequence)
	if o.URL != "" {
		fmt.Fprintf(&b, " · %s", o.URL)
	}
	if o.Title != "" {
		fmt.Fprintf(&b, " · %q", o.Title)
	}
	if o.Status >= 400 {
		fmt.Fprintf(&b, " · HTTP %d", o.Status)
	}
	return b.String()
}

func (o actionOutcome) result() *mcp.CallToolResult {
	var b strings.Builder
	b.WriteString(o.head())
	if len(o.Value) > 0 && string(o.Value) != "null" {
		b.WriteString("\n")
		b.WriteString(valueText(o.Value))
	}
	if o.View != nil && o.View.text != "" {
		b.WriteString("\n")
		b.WriteString(o.View.text)
	}
	if o.Note != "" {
		b.WriteString("\nnote: " + o.Note)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, StructuredContent: o}
}

// valueText is how an action's value reads to a model: a string bare;
// an object with a text (a snapshot, text, html) its text after its other
// fields; anything else as JSON.
func valueText(v json.RawMessage) string {
	var text string
	if json.Unmarshal(v, &text) == nil {
		return text
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(v, &fields) == nil && json.Unmarshal(fields["text"], &text) == nil {
		delete(fields, "text")
		rest, _ := json.Marshal(fields)
		return string(rest) + "\n" + text
	}
	return string(v)
}

// screenshotResult shows the PNG as an image, with the tab and frame.
func screenshotResult(o actionOutcome) *mcp.CallToolResult {
	var b64 string
	png, err := []byte(nil), json.Unmarshal(o.Value, &b64)
	if err == nil {
		png, err = base64.StdEncoding.DecodeString(b64)
	}
	if err != nil {
		return o.result()
	}
	o.Value = nil
	text := o.head() + fmt.Sprintf("\nscreenshot: PNG, %d bytes", len(png))
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}, &mcp.ImageContent{Data: png, MIMEType: "image/png"}},
		StructuredContent: o,
	}
}

// failureOutcome is a failed call's structured content.
type failureOutcome struct {
	OK    bool          `json:"ok"`
	Code  protocol.Code `json:"code"`
	Error string        `json:"error"`
	Tab   string        `json:"tab,omitempty"`
	// Sequence is the tab's current frame, when known (stale_frame
	// says which frame the tab is at now).
	Sequence int64 `json:"sequence,omitempty"`
}

// failure is a framebus error as a tool result: isError, with the code
// and message, so the model sees it and can correct itself.
func failure(err error, tab string, seq int64) *mcp.CallToolResult {
	o := failureOutcome{Code: protocol.CodeOf(err), Error: capMessage(err.Error()), Tab: tab, Sequence: seq}
	text := string(o.Code) + ": " + o.Error
	if tab != "" && seq > 0 {
		text += fmt.Sprintf(" (tab %s is at frame %d)", tab, seq)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: o}
}

// jsonResult is a reply shown as indented JSON and given as structured
// content.
func jsonResult(v any) *mcp.CallToolResult {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return failure(protocol.Errorf(protocol.CodeInternal, "result: %v", err), "", 0)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}, StructuredContent: json.RawMessage(data)}
}

// maxMessage bounds an error's message: one may quote what the model
// sent, which may be megabytes.
const maxMessage = 1000

func capMessage(m string) string {
	if len(m) <= maxMessage {
		return m
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes more)", m[:cut], len(m)-cut)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
