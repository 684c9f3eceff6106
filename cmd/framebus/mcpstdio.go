package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's stdio transport ends the session at the first line that is
// not a JSON-RPC message (and its JSON decoder cannot read on past bad
// JSON), so one bad line from a client would stop framebus mcp. The
// client's lines pass through checkedLines first: a bad one is answered
// with JSON-RPC's parse error or invalid request, and dropped.

// lockedWriter writes whole messages to the protocol's stream: the
// SDK's (one Write each) and checkedLines' answers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (*lockedWriter) Close() error { return nil }

// checkedLines is in's lines that are JSON-RPC messages (one a line, no
// batch); every other line is answered on out.
func checkedLines(in io.Reader, out io.Writer) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReader(in)
		for {
			line, tooLong, err := readBoundedLine(r, mcp.DefaultMaxLineLength)
			switch {
			case tooLong:
				answerBadLine(out, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than the %d bytes a line may be", mcp.DefaultMaxLineLength))
			case len(bytes.TrimSpace(line)) == 0:
			default:
				if code, msg := checkMessage(line); code != 0 {
					answerBadLine(out, requestID(line), code, msg)
				} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// readBoundedLine reads one line (without its newline), at most max bytes:
// past that it drops the rest of the line and says tooLong.
func readBoundedLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			line = append(line, bytes.TrimSuffix(chunk, []byte("\n"))...)
			if len(line) > max {
				line, tooLong = nil, true
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// checkMessage is 0 for a line the SDK reads as a JSON-RPC message,
// else the JSON-RPC error code and message to answer it with.
func checkMessage(line []byte) (int64, string) {
	// Valid first: the SDK's decoder reads a line's first value and
	// would take what follows it for the next message.
	if !json.Valid(line) {
		return jsonrpc.CodeParseError, "parse error: the line is not JSON"
	}
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
		// The SDK ends the session at a batch (protocol 2025-06-18 and
		// later have none).
		return jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported; send one message a line"
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()
	}
	return 0, ""
}

// requestID is the id of a request the SDK cannot read (nested deeper
// than it reads, say) when encoding/json can, so its sender gets its
// answer; nil (null) when there is none to read.
func requestID(line []byte) json.RawMessage {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 || (req.ID[0] != '"' && (req.ID[0] < '0' || req.ID[0] > '9') && req.ID[0] != '-') {
		return nil // no id, or one that is no string or number
	}
	return req.ID
}

// answerBadLine answers a line that is no message (id nil: null).
func answerBadLine(out io.Writer, id json.RawMessage, code int64, message string) {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
	out.Write(append(data, '\n'))
}
