package protocol

import (
	"strconv"
	"strings"
)

// SnapshotID names a snapshot a tab gave out: the frame it was taken at
// and the hash of its text (snaptext.Hash), "12#1a2b3c4d". A snapshot
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
	if err != nil || seq < 1 || frame[0] == '+' || (withHash && !snapshotHash(hash)) {
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

// ParseSnapshotCursor reads a cursor, a snapshot's id and a byte offset
// in its text: "12#1a2b3c4d@32768".
func ParseSnapshotCursor(s string) (SnapshotID, int, error) {
	idPart, at, ok := strings.Cut(s, "@")
	id, err := ParseSnapshotID(idPart)
	offset, aerr := strconv.Atoi(at)
	if !ok || err != nil || id.Hash == "" || aerr != nil || offset < 0 {
		return SnapshotID{}, 0, badRequest("cursor: %q is not a snapshot's cursor (12#1a2b3c4d@32768, a part's next)", s)
	}
	return id, offset, nil
}

// checkSnapshot checks a snapshot action's combination of parameters.
func checkSnapshot(a Action) error {
	text := func(name string) error {
		if a.Format == "json" {
			return badRequest("%s: the json format has none; it is of the text format", name)
		}
		return nil
	}
	switch {
	case a.Settle && a.NoIdle, a.NetworkIdle && a.NoIdle:
		return badRequest("noIdle: takes it at once, so it does not go with settle or networkIdle, which wait")
	case a.Settle && a.NetworkIdle:
		return badRequest("settle and networkIdle: one wait or the other (settle is the default)")
	case a.MaxBytes < 0:
		return badRequest("maxBytes: %d is not a size (1 or more; 0 for no bound)", a.MaxBytes)
	case a.Cursor != "":
		if a.Since != "" || a.Search != "" || a.Selector != "" || a.Interactive || a.Depth != 0 || a.MaxNodes != 0 || a.Format != "" {
			return badRequest("cursor: reads the next part of the snapshot it names; it takes maxBytes only")
		}
		_, _, err := ParseSnapshotCursor(a.Cursor)
		return err
	case a.Since != "" && a.Search != "":
		return badRequest("since and search: a delta or a search, not both")
	case a.Since != "":
		if err := text("since"); err != nil {
			return err
		}
		_, err := ParseSnapshotID(a.Since)
		return err
	case a.Search != "":
		return text("search")
	case a.MaxBytes != 0:
		return text("maxBytes")
	}
	return nil
}
