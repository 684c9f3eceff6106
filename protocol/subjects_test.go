package protocol

import "testing"

// Only the message id the node gives a frame makes a message on a frame
// subject a frame: a web page's bytes or another tab's frame sent there
// by JetStream carry none, or another.
func TestNodeFrameSeq(t *testing.T) {
	for _, c := range []struct {
		tab, id string
		seq     int64
		ok      bool
	}{
		{"T1", "T1.7", 7, true},
		{"T1", FrameMsgID("T1", 123456789), 123456789, true},
		{"T1", "", 0, false},
		{"T1", "T2.7", 0, false},
		{"T1", "XT1.7", 0, false},
		{"T1", "T1.", 0, false},
		{"T1", "T1.0", 0, false},
		{"T1", "T1.07", 0, false},
		{"T1", "T1.+7", 0, false},
		{"T1", "T1.-7", 0, false},
		{"T1", "T1.7.8", 0, false},
		{"T1", "T1.99999999999999999999", 0, false},
	} {
		seq, ok := NodeFrameSeq(c.tab, c.id)
		if ok != c.ok || ok && seq != c.seq {
			t.Errorf("NodeFrameSeq(%q, %q) = %d, %v; want %d, %v", c.tab, c.id, seq, ok, c.seq, c.ok)
		}
	}
}

// Only requests that change nothing are taken for ones a client may send
// again after losing their answer.
func TestReadOnly(t *testing.T) {
	s := DefaultSubjects
	for subject, want := range map[string]bool{
		s.TabContent("T1"):                      true,
		s.Tabs():                                true,
		s.BrowserStatus():                       true,
		s.SessionList():                         true,
		s.Profile("work", OpStatus):             true,
		s.NodeProfile("n1", "work", OpPages):    true,
		s.TabPlan("T1"):                         false,
		s.TabCancel("T1"):                       false,
		s.TabStage("T1"):                        false,
		s.Profile("work", OpNewTab):             false,
		s.Profile("work", OpLaunch):             false,
		s.NodeProfile("n1", "work", OpCloseTab): false,
		s.HTTPFetch():                           false,
		s.SessionStart():                        false,
		"other.tab.T1.content":                  false,
		s.TabContent("T1") + ".more":            false,
		"framebus.node.n1.status":               false,
	} {
		if got := s.ReadOnly(subject); got != want {
			t.Errorf("ReadOnly(%q) = %v, want %v", subject, got, want)
		}
	}
}
