package protocol

import (
	"strconv"
	"strings"
)

// SnapshotID names a snapshot a tab gave out: the frame it was taken at
// and the hash of its text (snapdelta.Hash), "12#1a2b3c4d". A snapshot
// action answers its id; its since takes one back, or a frame alone
// (Hash ""): that frame's snapshot (its content, else the last taken at
// it).
type SnapshotID struct {
	Frame int64
	Hash  string
}

func (id SnapshotID) String() string {
	if id.Hash == "" {
		return strconv.FormatInt(id.Frame, 10)
	}
	return strconv.FormatInt(id.Frame, 10) + "#" + id.Hash
}

// ParseSnapshotID reads "12" or "12#1a2b3c4d".
func ParseSnapshotID(s string) (SnapshotID, error) {
	frame, hash, withHash := strings.Cut(s, "#")
	seq, err := strconv.ParseInt(frame, 10, 64)
	if err != nil || seq < 1 || (withHash && !snapshotHash(hash)) {
		return SnapshotID{}, badRequest("since: %q is no frame (12) or snapshot id (12#1a2b3c4d)", s)
	}
	return SnapshotID{Frame: seq, Hash: hash}, nil
}

// snapshotHash: 8 lower-case hex digits.
func snapshotHash(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
