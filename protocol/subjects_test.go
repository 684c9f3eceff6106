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
