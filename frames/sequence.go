package frames

import (
	"time"

	"github.com/framebus/framebus/protocol"
)

// DefaultHistory is how many recent frames a Stream keeps.
const DefaultHistory = 64

// DefaultMaxContent is the longest content a frame carries, in bytes:
// a page with more gets a frame without it, and a note that says so.
const DefaultMaxContent = 16 << 20

// DefaultHistoryContent bounds the content a Stream's history holds, in
// bytes: past it, the oldest frames lose their content (not themselves),
// so a tab's memory does not grow with the pages it has seen.
const DefaultHistoryContent = 64 << 20

// ContentDropped is the note of a kept frame whose content was let go.
const ContentDropped = "content no longer kept: the tab's history of content is full"

// Options configure a Stream. The zero value is the default policy.
type Options struct {
	Node    string // the node's name, which every frame carries
	History int    // frames kept; DefaultHistory when 0
	Policy  Policy // PolicyURLChange when ""
	Format  Format // DefaultFormat when ""
	// MaxContent is the longest content a frame carries, in bytes
	// (DefaultMaxContent when 0, no limit when negative); the reader of
	// the content enforces it (see MaxContentBytes).
	MaxContent int
	// HistoryContent bounds the content the history keeps, in bytes
	// (DefaultHistoryContent when 0, no bound when negative).
	HistoryContent int
	Now            func() time.Time
}

// Change is a new state of the page, as the tab actor saw it settle.
type Change struct {
	URL, Title    string
	Status        int    // the document's HTTP status; 0 when it had none
	Action        string // the action type, or protocol.FrameNavigation etc. for page changes
	Source        string // protocol.SourceAgent, SourcePage, SourceUser, SourceBrowser or SourceNode
	PlanID, Agent string
	// NewDocument: a new document was committed (not a same-document change).
	NewDocument bool
	// Format and Policy override the stream's for this frame (a plan's
	// fullPage settings); "" keeps the stream's.
	Format Format
	Policy Policy
	// DeltaSince: the content Append is given is the change from frame
	// DeltaSince's snapshot (FormatSnapshotDelta).
	DeltaSince int64
	// Control: the frame changes who drives the tab (protocol.Control).
	Control *protocol.Control
}

// Stream is one tab's frame sequence. It is not safe for concurrent use:
// one actor goroutine owns it.
type Stream struct {
	tab     string
	opts    Options
	seq     int64
	last    protocol.Frame
	history []protocol.Frame // ring of the latest frames; the oldest at head
	head    int
	// delivered is the URL of the last frame that carried content.
	delivered string
}

// New returns an empty stream; its first Append is frame 1.
func New(tab string, opts Options) *Stream {
	if opts.History <= 0 {
		opts.History = DefaultHistory
	}
	if opts.Policy == "" {
		opts.Policy = PolicyURLChange
	}
	if opts.Format == "" {
		opts.Format = DefaultFormat
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxContent == 0 {
		opts.MaxContent = DefaultMaxContent
	}
	if opts.HistoryContent == 0 {
		opts.HistoryContent = DefaultHistoryContent
	}
	return &Stream{tab: tab, opts: opts}
}

// Continue makes the stream go on after last, the latest frame the tab
// had before its node restarted (from the history): the next Append is
// frame last.Sequence+1 and carries the page's content (the old page's
// was its, not this one's).
func (s *Stream) Continue(last protocol.Frame) {
	last.FullPage, last.FullPageFormat, last.FullPageRef = nil, "", nil
	s.seq, s.last, s.delivered = last.Sequence, last, ""
}

// MaxContentBytes is the longest content a frame may carry, 0 for no
// limit.
func (s *Stream) MaxContentBytes() int { return max(s.opts.MaxContent, 0) }

// Sequence is the current frame's number (0 before the first frame).
func (s *Stream) Sequence() int64 { return s.seq }

// Last is the current frame.
func (s *Stream) Last() protocol.Frame { return s.last }

// Format is the content format frames carry.
func (s *Stream) Format() Format { return s.opts.Format }

// Check applies the resolver's rule: an action planned against frame
// based may run only while based is the current frame. Nil means
// unguarded. The error is a stale_frame *protocol.Error.
func (s *Stream) Check(based *int64) error {
	if based == nil || *based == s.seq {
		return nil
	}
	return protocol.Errorf(protocol.CodeStaleFrame,
		"stale frame: the action was planned against frame %d but the tab is at frame %d", *based, s.seq)
}

// WantsContent reports whether the frame for c must carry the page content.
func (s *Stream) WantsContent(c Change) bool {
	if s.FormatOf(c) == FormatNone {
		return false
	}
	policy := s.opts.Policy
	if c.Policy != "" {
		policy = c.Policy
	}
	switch {
	case s.seq == 0 || c.URL != s.last.URL:
		return true
	case c.URL != s.delivered:
		// The frames at this URL so far went out without its content
		// (a dialog blocked the page as it loaded, the read failed):
		// it is still owed.
		return true
	case policy == PolicyAlways:
		return true
	case policy == PolicyDelta:
		// A new document's snapshot is whole; the others carry a delta
		// (WantsDelta).
		return s.FormatOf(c) != FormatSnapshot || c.NewDocument
	case policy == PolicyDocumentChange:
		return c.NewDocument
	}
	return false
}

// WantsDelta reports whether the frame for c carries the change from the
// frame before it (PolicyDelta), having no whole content to carry.
func (s *Stream) WantsDelta(c Change) bool {
	policy := s.opts.Policy
	if c.Policy != "" {
		policy = c.Policy
	}
	return policy == PolicyDelta && s.FormatOf(c) == FormatSnapshot && !s.WantsContent(c)
}

// FormatOf is the content format of the frame for c.
func (s *Stream) FormatOf(c Change) Format {
	if c.Format != "" {
		return c.Format
	}
	return s.opts.Format
}

// Append records c as the next frame and returns it. content is the page
// content when WantsContent said so (nil otherwise); note explains a frame
// whose content had to be left out.
func (s *Stream) Append(c Change, content *string, note string) protocol.Frame {
	s.seq++
	f := protocol.Frame{
		Version:  protocol.Version,
		Tab:      s.tab,
		Sequence: s.seq,
		Node:     s.opts.Node,
		URL:      c.URL,
		Title:    c.Title,
		Status:   c.Status,
		Action:   c.Action,
		Source:   c.Source,
		PlanID:   c.PlanID,
		Agent:    c.Agent,
		Time:     s.opts.Now().UTC(),
		FullPage: content,
		Note:     note,
		Control:  c.Control,
	}
	switch {
	case content != nil && c.DeltaSince > 0:
		f.FullPageFormat, f.FullPageSince = string(FormatSnapshotDelta), c.DeltaSince
	case content != nil:
		f.FullPageFormat = string(s.FormatOf(c))
		s.delivered = c.URL
	}
	s.last = f
	// A ring: the oldest frame is overwritten in place, nothing moves.
	if len(s.history) < s.opts.History {
		s.history = append(s.history, f)
	} else {
		s.history[s.head] = f
		s.head = (s.head + 1) % len(s.history)
	}
	s.boundContent()
	return f
}

// boundContent lets the oldest frames' content go while the history
// holds more than HistoryContent; the latest frame keeps its own.
func (s *Stream) boundContent() {
	if s.opts.HistoryContent < 0 {
		return
	}
	total := 0
	for _, f := range s.history {
		if f.FullPage != nil {
			total += len(*f.FullPage)
		}
	}
	for i := 0; i < len(s.history)-1 && total > s.opts.HistoryContent; i++ {
		f := &s.history[(s.head+i)%len(s.history)]
		if f.FullPage != nil {
			total -= len(*f.FullPage)
			f.FullPage, f.FullPageFormat = nil, ""
			f.Note = joinNotes(f.Note, ContentDropped)
		}
	}
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// History returns the kept frames, oldest first.
func (s *Stream) History() []protocol.Frame {
	out := make([]protocol.Frame, 0, len(s.history))
	out = append(out, s.history[s.head:]...)
	return append(out, s.history[:s.head]...)
}

// Complete fills in the content of frame seq, which was appended without
// it while its document loaded: its title, content (nil when it could not
// be read) and note. It returns the completed frame, or false when seq is
// no longer kept.
func (s *Stream) Complete(seq int64, format Format, title string, content *string, note string) (protocol.Frame, bool) {
	for i := range s.history {
		f := &s.history[i]
		if f.Sequence != seq {
			continue
		}
		if title != "" {
			f.Title = title
		}
		f.FullPage, f.FullPageFormat, f.Note = content, "", note
		if content != nil {
			f.FullPageFormat = string(format)
			s.delivered = f.URL
		}
		if s.last.Sequence == seq {
			s.last = *f
		}
		out := *f
		s.boundContent()
		return out, true
	}
	return protocol.Frame{}, false
}
