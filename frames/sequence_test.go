package frames

import (
	"fmt"
	"strings"
	"testing"

	"github.com/framebus/framebus/protocol"
)

func content(s string) *string { return &s }

func TestSequenceRules(t *testing.T) {
	s := New("t", Options{History: 3})
	if s.Sequence() != 0 {
		t.Fatal("a new stream must be at 0")
	}
	open := Change{URL: "about:blank", Action: protocol.FrameOpen, Source: protocol.SourceBrowser}
	if !s.WantsContent(open) {
		t.Fatal("the first frame must carry content")
	}
	f1 := s.Append(open, content(""), "")
	if f1.Sequence != 1 || f1.FullPage == nil || f1.FullPageFormat != string(DefaultFormat) {
		t.Fatalf("first frame %+v", f1)
	}
	nav := Change{URL: "http://a/x", Action: "navigate", Source: protocol.SourceAgent, NewDocument: true}
	if !s.WantsContent(nav) {
		t.Fatal("a URL change must carry content")
	}
	s.Append(nav, content("<html>"), "")
	click := Change{URL: "http://a/x", Action: "click", Source: protocol.SourceAgent}
	if s.WantsContent(click) {
		t.Fatal("same URL must not carry content under url-change")
	}
	f3 := s.Append(click, nil, "")
	if f3.Sequence != 3 || f3.FullPage != nil || f3.FullPageFormat != "" {
		t.Fatalf("third frame %+v", f3)
	}
	if err := s.Check(protocol.Based(3)); err != nil {
		t.Fatalf("current frame rejected: %v", err)
	}
	if err := s.Check(nil); err != nil {
		t.Fatalf("unguarded rejected: %v", err)
	}
	err := s.Check(protocol.Based(2))
	if protocol.CodeOf(err) != protocol.CodeStaleFrame {
		t.Fatalf("stale frame accepted: %v", err)
	}
	s.Append(click, nil, "")
	h := s.History()
	if len(h) != 3 || h[0].Sequence != 2 || h[2].Sequence != 4 {
		t.Fatalf("history %+v", h)
	}
}

func TestPolicies(t *testing.T) {
	reload := Change{URL: "http://a/", Action: "reload", NewDocument: true}
	pushState := Change{URL: "http://a/", Action: "eval"}
	cases := []struct {
		policy           Policy
		format           Format
		reload, sameDocs bool
	}{
		{PolicyURLChange, FormatHTML, false, false},
		{PolicyDocumentChange, FormatText, true, false},
		{PolicyAlways, FormatHTML, true, true},
		{PolicyAlways, FormatNone, false, false},
	}
	for _, tc := range cases {
		s := New("t", Options{Policy: tc.policy, Format: tc.format})
		content := "a"
		s.Append(Change{URL: "http://a/"}, &content, "")
		if got := s.WantsContent(reload); got != tc.reload {
			t.Errorf("%s/%s reload: %v", tc.policy, tc.format, got)
		}
		if got := s.WantsContent(pushState); got != tc.sameDocs {
			t.Errorf("%s/%s same URL: %v", tc.policy, tc.format, got)
		}
		if tc.format != FormatNone && !s.WantsContent(Change{URL: "http://a/#b"}) {
			t.Errorf("%s: hash change not treated as URL change", tc.policy)
		}
	}
	if _, err := ParsePolicy("sometimes"); err == nil {
		t.Fatal("bad policy accepted")
	}
	if f, err := ParseFormat(""); err != nil || f != DefaultFormat {
		t.Fatal("empty format")
	}
}

// The wire names a plan may use are exactly the formats and policies
// frames knows.
func TestWireNamesAgree(t *testing.T) {
	for _, name := range protocol.FullPageFormats {
		if f, err := ParseFormat(name); err != nil || string(f) != name {
			t.Errorf("format %q: %v", name, err)
		}
	}
	for _, name := range protocol.FullPagePolicies {
		if p, err := ParsePolicy(name); err != nil || string(p) != name {
			t.Errorf("policy %q: %v", name, err)
		}
	}
}

// A change's own format and policy override the stream's.
func TestChangeOverrides(t *testing.T) {
	s := New("T", Options{})
	a := "a"
	s.Append(Change{URL: "a"}, &a, "")
	if s.WantsContent(Change{URL: "a"}) || !s.WantsContent(Change{URL: "a", Policy: PolicyAlways}) {
		t.Fatal("policy override ignored")
	}
	if s.WantsContent(Change{URL: "b", Format: FormatNone}) {
		t.Fatal("format none still wants content")
	}
	content := "x"
	if f := s.Append(Change{URL: "b", Format: FormatHTML}, &content, ""); f.FullPageFormat != "html" {
		t.Fatalf("format override: %+v", f)
	}
}

// Content a frame could not carry (a dialog held the page as it loaded) is
// still owed: the next frame at that URL carries it, and only then do
// frames at the same URL go without.
func TestOwedContent(t *testing.T) {
	s := New("T", Options{})
	page := "page"
	s.Append(Change{URL: "a"}, &page, "")
	seq := s.Append(Change{URL: "b", NewDocument: true}, nil, "").Sequence // pending
	s.Complete(seq, DefaultFormat, "", nil, "content unavailable: a JavaScript dialog is open")
	if !s.WantsContent(Change{URL: "b", Action: "dialog"}) {
		t.Fatal("the content left out is not owed")
	}
	s.Append(Change{URL: "b", Action: "dialog"}, &page, "")
	if s.WantsContent(Change{URL: "b", Action: "click"}) {
		t.Fatal("content wanted again once delivered")
	}
	seq = s.Append(Change{URL: "c", NewDocument: true}, nil, "").Sequence
	s.Complete(seq, DefaultFormat, "", &page, "")
	if s.WantsContent(Change{URL: "c", Action: "click"}) {
		t.Fatal("content completed late is not counted as delivered")
	}
}

// The history keeps at most HistoryContent bytes of content: past it the
// oldest frames lose their content, not their place, and say so; the
// latest keeps its own even when it alone is larger.
func TestHistoryContentBounded(t *testing.T) {
	s := New("T", Options{HistoryContent: 250})
	page := strings.Repeat("x", 100)
	for i := range 5 {
		s.Append(Change{URL: fmt.Sprintf("http://a.test/%d", i), NewDocument: true}, &page, "")
	}
	kept := 0
	for _, f := range s.History() {
		if f.FullPage != nil {
			kept += len(*f.FullPage)
		} else if f.Note != ContentDropped {
			t.Errorf("frame %d lost its content with note %q", f.Sequence, f.Note)
		}
	}
	if kept > 250 || s.History()[4].FullPage == nil || s.History()[3].FullPage == nil || s.History()[2].FullPage != nil {
		t.Errorf("history keeps %d bytes; want the last two frames' 200 within 250", kept)
	}
	huge := strings.Repeat("y", 1000)
	s.Append(Change{URL: "http://a.test/huge", NewDocument: true}, &huge, "")
	if h := s.History(); h[len(h)-1].FullPage == nil || h[len(h)-2].FullPage != nil {
		t.Errorf("the latest frame keeps its content, alone: %+v", h[len(h)-2:])
	}
}

// A stream that continues a tab's frames after its node restarted goes on
// from the last one (the guard is against it) and owes the page's
// content even at the same URL: the old page's was not this one's.
func TestContinue(t *testing.T) {
	s := New("t", Options{})
	s.Continue(protocol.Frame{Tab: "t", Sequence: 41, URL: "http://a/x", FullPage: content("old")})
	if s.Sequence() != 41 || s.Last().FullPage != nil {
		t.Fatalf("continued at %d, last %+v", s.Sequence(), s.Last())
	}
	if err := s.Check(protocol.Based(41)); err != nil {
		t.Fatalf("the last frame before the restart is not current: %v", err)
	}
	restore := Change{URL: "http://a/x", Action: protocol.FrameRestore, Source: protocol.SourceNode, NewDocument: true}
	if !s.WantsContent(restore) {
		t.Fatal("the restore frame at the same URL does not carry the page's content")
	}
	if f := s.Append(restore, content("new"), ""); f.Sequence != 42 {
		t.Fatalf("restore frame %+v; want sequence 42", f)
	}
}
