package protocol

import "regexp"

// Staging sends a client's own files to a tab for upload, so that nobody
// needs a path on the node's machine. On <prefix>.tab.<tab>.stage
// (request/reply), in order:
//
//	{"op":"begin","name":"a.pdf","size":N,"sha256":HEX}  -> {"ok":true,"id":ID,"chunkSize":C}
//	{"op":"chunk","id":ID,"offset":O,"data":BASE64}      -> {"ok":true,"id":ID,"received":O+len}
//	{"op":"commit","id":ID}                              -> {"ok":true,"id":ID,"received":N}
//
// then an upload action with "staged": [ID]. Chunks hold at most
// StageChunkSize bytes, sent in order; commit checks the size and the
// SHA-256 declared at begin (a mismatch drops the file). {"op":"abort"}
// drops a file. The node chose the id; it names the file only for the tab
// it was staged for, and the file goes when that tab closes.
type StageRequest struct {
	Op     string `json:"op"`
	Name   string `json:"name,omitempty"`
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	ID     string `json:"id,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	Data   []byte `json:"data,omitempty"`
}

// The staging operations.
const (
	StageBegin  = "begin"
	StageChunk  = "chunk"
	StageCommit = "commit"
	StageAbort  = "abort"
)

// StageChunkSize is the most bytes one chunk carries: with base64 and
// its envelope about a third of the bus's default 1 MiB message.
const StageChunkSize = 256 << 10

// StageReply answers a StageRequest.
type StageReply struct {
	OK        bool   `json:"ok"`
	ID        string `json:"id,omitempty"`
	Received  int64  `json:"received"`
	ChunkSize int    `json:"chunkSize,omitempty"`
	Error     string `json:"error,omitempty"`
	Code      Code   `json:"code,omitempty"`
}

var stagedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// ValidStagedID reports whether id has the form of a staged file's id (32
// lower-case hex digits), which no path has.
func ValidStagedID(id string) bool { return stagedID.MatchString(id) }
