package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/framebus/framebus/mcpserver"
	"github.com/framebus/framebus/snaptext"
)

// What a result shows of the page: the whole page when a new one loads;
// after an action that changes it in place, only what changed (applied
// to what the session was shown, the page as it is); a line when nothing
// changed; the whole again when asked, or when the session was shown
// another document.
func TestResultsShowWhatChanged(t *testing.T) {
	s := start(t, mcpserver.ToolsActions)
	s.call(t, "browser_tab_new", map[string]any{})
	text, out, isErr := s.call(t, "browser_navigate", map[string]any{"url": s.site + "/mutations.html"})
	page := pageOf(out)
	if isErr || page["snapshot"] == nil || !strings.Contains(text, `- button "Menu"`) || page["since"] != nil {
		t.Fatalf("navigate: %s %v", text, out)
	}
	if strings.Contains(text, `[id="menu"]`) {
		t.Errorf("the page shown has the locator attributes:\n%s", text)
	}
	// The page as the tab keeps it, which the delta is of.
	id0 := page["snapshot"].(string)
	shown := readText(t, s, mcpserver.SnapshotURI(s.tabOf(t, out), id0))

	text, out, isErr = s.call(t, "browser_click", map[string]any{"selector": "#menu"})
	page = pageOf(out)
	if isErr || page["since"] == nil || !strings.Contains(text, "delta base=") || strings.Contains(text, "Lamp") {
		t.Fatalf("click: %s %v", text, out)
	}
	delta := text[strings.Index(text, "delta base="):]
	now, err := snaptext.Apply(shown, delta)
	if err != nil {
		t.Fatalf("the click's delta does not apply to the page shown: %v\n%s", err, delta)
	}
	id := page["snapshot"].(string)
	if hash := strings.SplitN(id, "#", 2)[1]; snaptext.Hash(now) != hash {
		t.Fatalf("the delta applied is not snapshot %s", id)
	}

	// Nothing changed since: a line.
	text, _, _ = s.call(t, "browser_snapshot", map[string]any{})
	if !strings.Contains(text, "did not change since snapshot "+id) || len(text) > 300 {
		t.Fatalf("a snapshot of an unchanged page: %s", text)
	}
	// The whole, when asked.
	text, _, _ = s.call(t, "browser_snapshot", map[string]any{"page": "full"})
	if !strings.Contains(text, `button "Menu" [expanded] [focused] [ref=`) || !strings.Contains(text, `menuitem "Settings"`) {
		t.Fatalf("page full:\n%s\nwant:\n%s", text, now)
	}
	// None: the frame, no page.
	text, out, _ = s.call(t, "browser_click", map[string]any{"selector": "#menu", "page": "none"})
	if pageOf(out) != nil || strings.Contains(text, "- ") {
		t.Fatalf("page none: %s", text)
	}
	if _, _, isErr := s.call(t, "browser_click", map[string]any{"selector": "#menu", "page": "some"}); !isErr {
		t.Fatal("page some taken")
	}
	// A new document: whole again.
	text, out, _ = s.call(t, "browser_navigate", map[string]any{"url": s.site + "/refs.html"})
	if pageOf(out)["since"] != nil || !strings.Contains(text, `button "Alpha"`) {
		t.Fatalf("a new page: %s", text)
	}
}

// A page longer than the budget comes as a summary and a link; the link
// reads it whole, the cursor a part at a time, and a search finds a
// node in it.
func TestLongPageComesAsSummaryAndLink(t *testing.T) {
	s := start(t, mcpserver.ToolsActions)
	s.call(t, "browser_tab_new", map[string]any{})
	text, out, _ := s.call(t, "browser_navigate", map[string]any{"url": s.site + "/big.html"})
	page := pageOf(out)
	uri, _ := page["pageResource"].(string)
	if uri == "" || len(text) > mcpserver.DefaultPageBudget || !strings.Contains(text, "headings:") || !strings.Contains(text, "too long to show") {
		t.Fatalf("a long page (%d bytes): %.2000s %v", len(text), text, out)
	}
	res, err := s.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read %s: %v", uri, err)
	}
	whole := res.Contents[0].Text
	id := page["snapshot"].(string)
	if snaptext.Hash(whole) != strings.SplitN(id, "#", 2)[1] || int(page["pageBytes"].(float64)) != len(whole) {
		t.Fatalf("%s is %d bytes, not snapshot %s", uri, len(whole), id)
	}
	text, _, _ = s.call(t, "browser_snapshot", map[string]any{"cursor": id + "@0", "maxBytes": 20000})
	if !strings.Contains(text, whole[:1000]) || !strings.Contains(text, id+"@") {
		t.Fatalf("a part: %.500s", text)
	}
	text, _, _ = s.call(t, "browser_snapshot", map[string]any{"search": "link 2999"})
	if !strings.Contains(text, `link "link 2999" [ref=`) || len(text) > 2000 {
		t.Fatalf("search: %s", text)
	}
	if _, err := s.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: strings.TrimSuffix(uri, uri[len(uri)-8:]) + "00000000"}); err == nil {
		t.Fatal("a snapshot the tab does not keep was read")
	}
}

// pageOf is a result's page view (its structured content's page).
func pageOf(out map[string]any) map[string]any {
	p, _ := out["page"].(map[string]any)
	return p
}

// readText reads a text resource.
func readText(t *testing.T, s *session, uri string) string {
	t.Helper()
	res, err := s.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read %s: %v", uri, err)
	}
	return res.Contents[0].Text
}

// tabOf is the tab a result names.
func (s *session) tabOf(t *testing.T, out map[string]any) string {
	t.Helper()
	tab, _ := out["tab"].(string)
	if tab == "" {
		t.Fatalf("no tab in %v", out)
	}
	return tab
}
