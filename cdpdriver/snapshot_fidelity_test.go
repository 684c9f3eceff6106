package cdpdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/mafredri/cdp/protocol/accessibility"
	"github.com/mafredri/cdp/protocol/dom"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
)

// The fidelity test compares our snapshot with Chromium's own
// accessibility tree (Accessibility.getFullAXTree, every frame), element by
// element: our nodes are matched to Chromium's by the backend DOM node id
// of the element a ref names (resolved in the page, then DOM.describeNode).
// FRAMEBUS_SNAPSHOT_AX_DUMP=1 logs Chromium's whole tree next to ours.
//
// Chromium's tree names some roles after its internal roles rather than
// ARIA's; snapshotTestAXRole maps them to the ARIA roles our snapshot uses:
//
//	Chromium                          ARIA (ours)
//	StaticText, LineBreak             text
//	InlineTextBox, ListMarker         (not elements: never matched)
//	RootWebArea                       document
//	LabelText                         label (our snapshot leaves labels out)
//	image                             img
//	DisclosureTriangle (summary),
//	ToggleButton                      button
//	ComboBoxSelect, PopUpButton,
//	ComboBoxMenuButton                combobox (a select)
//	MenuListPopup                     (a select's popup; its options are
//	                                  not compared: the combobox's value
//	                                  stands for them)
//	MenuListOption, ListBoxOption     option
//	Iframe, IframePresentational      iframe
//	generic, SectionWithoutName,
//	HeaderAsNonLandmark, sectionheader,
//	FooterAsNonLandmark, sectionfooter,
//	LayoutTable, LayoutTableRow,
//	LayoutTableCell                   generic
//	Section                           region
//	DescriptionList                   list
//	DescriptionListTerm               term
//	DescriptionListDetail             definition
//	none                              presentation
//	ColorWell                         button (<input type=color>)
//	Date, DateTime, InputTime         textbox (<input type=date>, ...)
//
// ARIA has no role for the colour, date and time fields; our snapshot
// calls a colour field a button (it opens a picker) and a date or time
// field a textbox (it is typed into). Chromium exposes the parts of a date
// field (Day, Month, Year spin buttons, the picker button) from the
// field's user-agent shadow tree, which page script cannot see: the test
// logs them and does not require refs for them, nor for elements in closed
// shadow roots. Textbox and searchbox, combobox and listbox are compared
// as they are, no mapping.
//
// Known disagreement: a custom element that sets its role through
// ElementInternals (attachInternals().role) has that role in Chromium's
// tree, but the page cannot read it back; our snapshot calls it generic.

// snapshotTestAXRole maps a Chromium role to the ARIA role our snapshot
// uses for the same element.
func snapshotTestAXRole(chrome string) string {
	switch chrome {
	case "StaticText", "LineBreak":
		return "text"
	case "RootWebArea":
		return "document"
	case "LabelText":
		return "label"
	case "image":
		return "img"
	case "DisclosureTriangle", "ToggleButton":
		return "button"
	case "ComboBoxSelect", "PopUpButton", "ComboBoxMenuButton":
		return "combobox"
	case "MenuListOption", "ListBoxOption":
		return "option"
	case "Iframe", "IframePresentational":
		return "iframe"
	case "SectionWithoutName", "HeaderAsNonLandmark", "FooterAsNonLandmark", "sectionheader", "sectionfooter",
		"LayoutTable", "LayoutTableRow", "LayoutTableCell":
		return "generic"
	case "Section":
		return "region"
	case "DescriptionList":
		return "list"
	case "DescriptionListTerm":
		return "term"
	case "DescriptionListDetail":
		return "definition"
	case "none":
		return "presentation"
	case "ColorWell":
		return "button"
	case "Date", "DateTime", "InputTime":
		return "textbox"
	}
	return chrome
}

// snapshotTestInteractiveRoles are the roles (ours, after mapping) of the
// elements every snapshot must give a ref.
var snapshotTestInteractiveRoles = map[string]bool{
	"button": true, "link": true, "checkbox": true, "radio": true, "textbox": true, "searchbox": true,
	"combobox": true, "listbox": true, "option": true, "menuitem": true, "menuitemcheckbox": true,
	"menuitemradio": true, "tab": true, "switch": true, "slider": true, "spinbutton": true, "treeitem": true,
	"gridcell": true,
}

// snapshotTestAXNode is what the fidelity test needs of one node of
// Chromium's tree.
type snapshotTestAXNode struct {
	Role, Name string // role mapped to ARIA (snapshotTestAXRole)
	ChromeRole string // the role as Chromium gives it
	Ignored    bool
	InPopup    bool // inside a select's MenuListPopup
}

// snapshotTestAXTree fetches Chromium's accessibility tree of every frame
// of the page, by backend DOM node id.
func (p *Page) snapshotTestAXTree(ctx context.Context) (map[dom.BackendNodeID]snapshotTestAXNode, error) {
	tree, err := p.client.Page.GetFrameTree(ctx)
	if err != nil {
		return nil, err
	}
	var frames []page.FrameID
	var collect func(ft page.FrameTree)
	collect = func(ft page.FrameTree) {
		frames = append(frames, ft.Frame.ID)
		for _, c := range ft.ChildFrames {
			collect(c)
		}
	}
	collect(tree.FrameTree)
	out := map[dom.BackendNodeID]snapshotTestAXNode{}
	for _, id := range frames {
		reply, err := p.client.Accessibility.GetFullAXTree(ctx, accessibility.NewGetFullAXTreeArgs().SetFrameID(id))
		if err != nil {
			return nil, fmt.Errorf("getFullAXTree of frame %s: %w", id, err)
		}
		byID := map[accessibility.AXNodeID]accessibility.AXNode{}
		for _, n := range reply.Nodes {
			byID[n.NodeID] = n
		}
		for _, n := range reply.Nodes {
			if n.BackendDOMNodeID == nil {
				continue
			}
			a := snapshotTestAXNode{Ignored: n.Ignored, ChromeRole: snapshotTestAXString(n.Role), Name: snapshotTestNorm(snapshotTestAXString(n.Name))}
			a.Role = snapshotTestAXRole(a.ChromeRole)
			for q := n.ParentID; q != nil; {
				parent, ok := byID[*q]
				if !ok {
					break
				}
				if snapshotTestAXString(parent.Role) == "MenuListPopup" {
					a.InPopup = true
					break
				}
				q = parent.ParentID
			}
			out[*n.BackendDOMNodeID] = a
		}
	}
	return out, nil
}

func snapshotTestAXString(v *accessibility.AXValue) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(v.Value, &s); err != nil {
		return string(v.Value)
	}
	return s
}

func snapshotTestNorm(s string) string { return strings.Join(strings.Fields(s), " ") }

// snapshotTestDOMNode is what the fidelity test knows of an element from
// the DOM: how the fixture marks it and where it lives.
type snapshotTestDOMNode struct {
	Desc         string // tag#id, for messages
	MarkedHidden bool   // it or an ancestor (through shadow roots and frames) has data-hidden
	MarkedShown  bool   // it has data-visible: it must appear (with a ref if interactive)
	ShownText    string // data-visible's value: text the snapshot must contain
	Unreachable  string // why page script cannot see it ("closed shadow root", "user-agent shadow root")
	Order        int    // its place in document order (shadow trees and frames where they render)
}

// snapshotTestDOM walks the whole DOM (frames and shadow roots pierced).
func (p *Page) snapshotTestDOM(ctx context.Context) (map[dom.BackendNodeID]snapshotTestDOMNode, error) {
	args := dom.NewGetDocumentArgs().SetDepth(-1).SetPierce(true)
	reply, err := p.client.DOM.GetDocument(ctx, args)
	if err != nil {
		return nil, err
	}
	out := map[dom.BackendNodeID]snapshotTestDOMNode{}
	var walk func(n dom.Node, hidden bool, unreachable string)
	walk = func(n dom.Node, hidden bool, unreachable string) {
		if n.NodeType == 1 {
			d := snapshotTestDOMNode{Desc: strings.ToLower(n.LocalName), Unreachable: unreachable, Order: len(out)}
			for i := 0; i+1 < len(n.Attributes); i += 2 {
				switch n.Attributes[i] {
				case "data-hidden":
					hidden = true
				case "data-visible":
					d.MarkedShown, d.ShownText = true, n.Attributes[i+1]
				case "id":
					d.Desc += "#" + n.Attributes[i+1]
				}
			}
			d.MarkedHidden = hidden
			out[n.BackendNodeID] = d
		}
		for _, s := range n.ShadowRoots {
			u := unreachable
			switch s.ShadowRootType {
			case dom.ShadowRootTypeClosed:
				u = "closed shadow root"
			case dom.ShadowRootTypeUserAgent:
				u = "user-agent shadow root"
			}
			walk(s, hidden, u)
		}
		if n.ContentDocument != nil {
			walk(*n.ContentDocument, hidden, unreachable)
		}
		for _, c := range n.Children {
			walk(c, hidden, unreachable)
		}
	}
	walk(reply.Root, false, "")
	return out, nil
}

// snapshotTestRefNodes resolves every ref of the snapshot to its element's
// backend DOM node id.
func (p *Page) snapshotTestRefNodes(ctx context.Context, refs []string) (map[string]dom.BackendNodeID, error) {
	const group = "snapshot-fidelity"
	defer func() { _ = p.client.Runtime.ReleaseObjectGroup(ctx, runtime.NewReleaseObjectGroupArgs(group)) }()
	out := map[string]dom.BackendNodeID{}
	for _, ref := range refs {
		arg, _ := json.Marshal(ref)
		doc, err := p.document(ctx)
		if err != nil {
			return nil, err
		}
		// In framebus's world, where the registry is.
		reply, err := p.client.Runtime.CallFunctionOn(ctx, runtime.NewCallFunctionOnArgs(
			"function (ref) {"+lookupJS+" return lookup(this, ref).el; }").
			SetObjectID(doc).SetArguments([]runtime.CallArgument{{Value: arg}}).SetObjectGroup(group))
		if err != nil {
			return nil, err
		}
		if reply.ExceptionDetails != nil || reply.Result.ObjectID == nil {
			return nil, fmt.Errorf("ref %s does not resolve to an element", ref)
		}
		desc, err := p.client.DOM.DescribeNode(ctx, dom.NewDescribeNodeArgs().SetObjectID(*reply.Result.ObjectID))
		if err != nil {
			return nil, err
		}
		out[ref] = desc.Node.BackendNodeID
	}
	return out, nil
}

// snapshotTestChromeView is what Chromium says of the page: the backend
// node of each ref's element, its accessibility tree and the DOM.
func (p *Page) snapshotTestChromeView(ctx context.Context, t *testing.T, refs []string) (map[string]dom.BackendNodeID, map[dom.BackendNodeID]snapshotTestAXNode, map[dom.BackendNodeID]snapshotTestDOMNode) {
	t.Helper()
	backend, err := p.snapshotTestRefNodes(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	ax, err := p.snapshotTestAXTree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doms, err := p.snapshotTestDOM(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return backend, ax, doms
}

// snapshotTestWalk calls f for every node of the snapshot, depth first.
func snapshotTestWalk(nodes []SnapshotNode, f func(n SnapshotNode)) {
	for _, n := range nodes {
		f(n)
		snapshotTestWalk(n.Children, f)
	}
}

// snapshotTestRefs lists the refs of a snapshot in order, and their nodes.
func snapshotTestRefs(nodes []SnapshotNode) ([]string, map[string]SnapshotNode) {
	var refs []string
	byRef := map[string]SnapshotNode{}
	snapshotTestWalk(nodes, func(n SnapshotNode) {
		if n.Ref != "" {
			refs = append(refs, n.Ref)
			byRef[n.Ref] = n
		}
	})
	return refs, byRef
}

// TestSnapshotFidelity checks every fixture against Chromium's own tree:
// the role and name of our interactive elements agree for at least 99% of
// them (every disagreement is logged); no element the fixture marks
// data-hidden appears; every element Chromium exposes with an interactive
// role that the fixture does not hide has a ref.
func TestSnapshotFidelity(t *testing.T) {
	b := snapshotTestBrowser(t)
	srv := snapshotTestServer(t)
	dump := os.Getenv("FRAMEBUS_SNAPSHOT_AX_DUMP") != ""
	var agree, total int
	var disagreements []string
	for _, page := range snapshotTestPages(t) {
		t.Run(page, func(t *testing.T) {
			ctx, p, s := snapshotTestFixture(t, b, srv, page)
			text := s.Text()
			if strings.Contains(text, "HIDDEN") {
				t.Errorf("hidden content in the snapshot:\n%s", text)
			}
			refs, byRef := snapshotTestRefs(s.Nodes)
			if len(refs) != s.Interactive {
				t.Errorf("snapshot has %d refs but says %d interactive", len(refs), s.Interactive)
			}
			backend, ax, doms := p.snapshotTestChromeView(ctx, t, refs)
			shown := map[dom.BackendNodeID]string{}
			for _, ref := range refs {
				n, id := byRef[ref], backend[ref]
				shown[id] = ref
				d := doms[id]
				if d.MarkedHidden {
					t.Errorf("%s: hidden element %s appears as %s %q", page, d.Desc, n.Role, n.Name)
				}
				a, ok := ax[id]
				total++
				switch {
				case !ok || a.Ignored:
					disagreements = append(disagreements, fmt.Sprintf("%s: %s %s %q: Chromium ignores it (%s)", page, d.Desc, n.Role, n.Name, a.ChromeRole))
				case n.Role != a.Role || n.Name != a.Name:
					disagreements = append(disagreements, fmt.Sprintf("%s: %s: ours %s %q, Chromium's %s %q", page, d.Desc, n.Role, n.Name, a.ChromeRole, a.Name))
				default:
					agree++
				}
			}
			// Every interactive element Chromium exposes has a ref, unless
			// the fixture hides it.
			var ids []dom.BackendNodeID
			for id := range ax {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			for _, id := range ids {
				a, d := ax[id], doms[id]
				if dump {
					t.Logf("ax %s: %s %q ignored=%v ours=%s", d.Desc, a.ChromeRole, a.Name, a.Ignored, shown[id])
				}
				if a.Ignored || a.InPopup || !snapshotTestInteractiveRoles[a.Role] || d.MarkedHidden {
					continue
				}
				if _, ok := shown[id]; ok {
					continue
				}
				if d.Unreachable != "" {
					t.Logf("%s: %s %s %q is in a %s, out of the page's reach", page, d.Desc, a.ChromeRole, a.Name, d.Unreachable)
					continue
				}
				t.Errorf("%s: visible interactive element %s (%s %q) has no ref", page, d.Desc, a.ChromeRole, a.Name)
			}
			for id, d := range doms {
				if !d.MarkedShown {
					continue
				}
				_, hasRef := shown[id]
				if d.ShownText != "" && !strings.Contains(text, d.ShownText) || d.ShownText == "" && !hasRef {
					t.Errorf("%s: %s is marked data-visible but is not in the snapshot", page, d.Desc)
				}
			}
			if dump {
				t.Logf("snapshot:\n%s", text)
			}
		})
	}
	for _, d := range disagreements {
		t.Logf("disagreement: %s", d)
	}
	t.Logf("fidelity: %d of %d interactive elements agree with Chromium (%.1f%%)", agree, total, 100*float64(agree)/float64(max(total, 1)))
	if total == 0 || agree*100 < total*99 {
		t.Errorf("fidelity %d/%d is below 99%%", agree, total)
	}
}

// TestSnapshotNamesMatchChromium compares the name of every heading and
// every element with a ref (links, buttons, fields, ...) of every fixture,
// in the full snapshot and in the interactive one, with Chromium's (names
// from content, permalinks, code and links in headings, icon links, CSS
// generated content, long content: docs.html, docs-nav.html and
// long-names.html are shaped like real documentation sites). Elements
// with refs are matched to Chromium's nodes by their refs; headings have
// none, so ours are paired with Chromium's exposed headings in document
// order. Every difference fails. A heading with no name whose only child
// is a link of Chromium's name for the heading agrees: the snapshot says
// that name once, on the link.
func TestSnapshotNamesMatchChromium(t *testing.T) {
	b := snapshotTestBrowser(t)
	srv := snapshotTestServer(t)
	var compared, differ int
	for _, page := range snapshotTestPages(t) {
		for _, interactive := range []bool{false, true} {
			name := page
			if interactive {
				name += "/interactive"
			}
			t.Run(name, func(t *testing.T) {
				ctx, p, _ := snapshotTestFixture(t, b, srv, page)
				s, err := p.Snapshot(ctx, SnapshotOptions{InteractiveOnly: interactive})
				if err != nil {
					t.Fatal(err)
				}
				refs, byRef := snapshotTestRefs(s.Nodes)
				var headings []SnapshotNode
				snapshotTestWalk(s.Nodes, func(n SnapshotNode) {
					if n.Role == "heading" {
						headings = append(headings, n)
					}
				})
				backend, ax, doms := p.snapshotTestChromeView(ctx, t, refs)
				check := func(what string, ours SnapshotNode, chrome snapshotTestAXNode) {
					compared++
					if ours.Name != chrome.Name {
						differ++
						t.Errorf("%s: %s: ours %s %q, Chromium's %s %q", name, what, ours.Role, ours.Name, chrome.ChromeRole, chrome.Name)
					}
				}
				for _, ref := range refs {
					check(doms[backend[ref]].Desc, byRef[ref], ax[backend[ref]])
				}
				var chromeHeadings []dom.BackendNodeID
				for id, a := range ax {
					if a.Role == "heading" && !a.Ignored {
						chromeHeadings = append(chromeHeadings, id)
					}
				}
				sort.Slice(chromeHeadings, func(i, j int) bool { return doms[chromeHeadings[i]].Order < doms[chromeHeadings[j]].Order })
				if len(chromeHeadings) != len(headings) {
					var theirs []string
					for _, id := range chromeHeadings {
						theirs = append(theirs, fmt.Sprintf("%q", ax[id].Name))
					}
					var ours []string
					for _, h := range headings {
						ours = append(ours, fmt.Sprintf("%q", h.Name))
					}
					t.Fatalf("%d headings in our snapshot, %d in Chromium's tree:\nours:     %s\nChromium: %s", len(headings), len(chromeHeadings), strings.Join(ours, ", "), strings.Join(theirs, ", "))
				}
				for i, id := range chromeHeadings {
					h := headings[i]
					// The one shortcut: a heading that holds nothing but
					// a link (or another control) of the same name says
					// it once, on the link.
					if h.Name == "" && len(h.Children) == 1 && h.Children[0].Ref != "" && h.Children[0].Name == ax[id].Name {
						h.Name = h.Children[0].Name
					}
					check(doms[id].Desc, h, ax[id])
				}
			})
		}
	}
	t.Logf("names of headings and elements with refs: %d compared, %d differ from Chromium's", compared, differ)
	if compared == 0 {
		t.Error("no name compared")
	}
}
