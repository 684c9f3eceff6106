package cdpdriver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/mafredri/cdp/rpcc"
)

// The page connection's reader side over a websocket (an attached
// browser; a pipe session hands over whole messages). rpcc hands the
// codec the websocket as one stream of JSON messages; json.Decoder would scan each message three
// times (to find its end, to validate it, to copy its result) with its
// byte-by-byte state machine, which costs milliseconds on a snapshot or
// screenshot reply of a few hundred kilobytes. messageReader finds a
// message's end with a quick scan that jumps over string contents, and
// splitMessage cuts the envelope Chromium writes without scanning it
// again; whoever decodes the result validates it.

// messageReader splits a stream of JSON objects into whole messages.
type messageReader struct {
	r          io.Reader
	buf        []byte
	start, end int // unread data is buf[start:end]
}

func newMessageReader(r io.Reader) *messageReader {
	return &messageReader{r: r, buf: make([]byte, 64<<10)}
}

// next returns the next message, in memory of its own (rpcc keeps parts
// of it after the next message is read).
func (m *messageReader) next() ([]byte, error) {
	// Scanning state, kept across refills: i is the next byte to look at,
	// relative to m.start.
	i, depth, inString, begun := 0, 0, false, false
	for {
		data := m.buf[m.start:m.end]
		for i < len(data) {
			if inString {
				end, ok := stringEnd(data, i)
				i, inString = end, !ok
				continue
			}
			c := data[i]
			i++
			switch {
			case !begun:
				switch c {
				case ' ', '\t', '\r', '\n':
					m.start++ // between messages: dropped
					data = m.buf[m.start:m.end]
					i--
				case '{':
					begun, depth = true, 1
				default:
					return nil, fmt.Errorf("cdp: message starts with %q, not an object", c)
				}
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth == 0 {
					msg := bytes.Clone(data[:i])
					m.start += i
					return msg, nil
				}
			}
		}
		if err := m.fill(); err != nil {
			if err == io.EOF && (begun || m.start < m.end) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// stringEnd finds the end of a JSON string whose opening quote is before
// data[i]: the index after its closing quote, and true; or len(data) and
// false when data ends first. It jumps from quote to quote: a quote after
// an odd run of backslashes is escaped.
func stringEnd(data []byte, i int) (int, bool) {
	for {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return len(data), false
		}
		i += q
		k := i - 1
		for k >= 0 && data[k] == '\\' {
			k--
		}
		i++
		if (i-2-k)%2 == 0 {
			return i, true
		}
	}
}

// objectEnd is the index after the JSON object or array that starts at
// data[0], or -1 when data holds no whole one.
func objectEnd(data []byte) int {
	if len(data) == 0 || data[0] != '{' && data[0] != '[' {
		return -1
	}
	depth := 0
	for i := 0; i < len(data); {
		c := data[i]
		i++
		switch c {
		case '"':
			end, ok := stringEnd(data, i)
			if !ok {
				return -1
			}
			i = end
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// fill reads more of the stream, making room first.
func (m *messageReader) fill() error {
	if m.start > 0 {
		m.end = copy(m.buf, m.buf[m.start:m.end])
		m.start = 0
	}
	if m.end == len(m.buf) {
		m.buf = append(m.buf, make([]byte, len(m.buf))...)
	}
	n, err := m.r.Read(m.buf[m.end:])
	m.end += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// splitMessage fills r from one message. Chromium writes its replies as
// {"id":N,"result":{...}} and its events as {"method":"M","params":{...}}:
// those are cut where they stand. Anything else (an error reply, a
// message with more fields) is decoded in full.
func splitMessage(msg []byte, r *rpcc.Response) error {
	*r = rpcc.Response{}
	if rest, ok := bytes.CutPrefix(msg, []byte(`{"id":`)); ok && bytes.HasSuffix(msg, []byte("}}")) {
		digits := 0
		for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
			digits++
		}
		if result, ok := bytes.CutPrefix(rest[digits:], []byte(`,"result":{`)); ok && digits > 0 {
			id, err := strconv.ParseUint(string(rest[:digits]), 10, 64)
			if err == nil {
				r.ID = id
				// From the result's opening brace to the closing one.
				start := len(msg) - len(result) - 1
				r.Result = json.RawMessage(msg[start : len(msg)-1])
				return nil
			}
		}
	}
	if rest, ok := bytes.CutPrefix(msg, []byte(`{"method":"`)); ok && bytes.HasSuffix(msg, []byte("}}")) {
		if q := bytes.IndexByte(rest, '"'); q > 0 && bytes.IndexByte(rest[:q], '\\') < 0 {
			if params, ok := bytes.CutPrefix(rest[q:], []byte(`","params":{`)); ok {
				r.Method = string(rest[:q])
				start := len(msg) - len(params) - 1
				r.Args = json.RawMessage(msg[start : len(msg)-1])
				return nil
			}
		}
	}
	if err := json.Unmarshal(msg, r); err != nil {
		return errors.Join(errors.New("cdp: bad message"), err)
	}
	return nil
}
