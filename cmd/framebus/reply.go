package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/framebus/framebus/protocol"
)

// errorReply is every failure on stdout: {"ok":false,"error":...,"code":...}.
// Sequence, when known, is the tab's current frame: what to base a retry on.
type errorReply struct {
	OK       bool          `json:"ok"`
	Error    string        `json:"error"`
	Code     protocol.Code `json:"code"`
	Sequence int64         `json:"sequence,omitempty"`
}

// failureReply is the reply for a plan that did not succeed.
func failureReply(res protocol.PlanResult) errorReply {
	code := res.Code
	if code == "" {
		code = protocol.CodeInternal
	}
	return errorReply{Error: res.Error, Code: code, Sequence: res.Sequence}
}

// resultBookkeeping are the ActionResult fields that describe the result
// rather than carry what the action returned; the reply leaves them out.
var resultBookkeeping = map[string]bool{"index": true, "type": true, "ok": true, "error": true, "code": true}

// actionReply is the seeds' reply for one successful action:
// {"ok":true} followed by every field the action result carries, in the
// order protocol declares them ("sequence", "url", "title", "value", ...),
// then the extra fields.
// It is derived from the encoded ActionResult, so a field protocol adds
// shows up without a change here, and a field the result omits (eval of
// undefined has no value) is absent.
func actionReply(r protocol.ActionResult, extra ...replyField) (json.RawMessage, error) {
	raw, err := protocol.Marshal(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteString(`{"ok":true`)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("action result: unexpected token %v", tok)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		if resultBookkeeping[key] {
			continue
		}
		k, _ := json.Marshal(key)
		out.WriteByte(',')
		out.Write(k)
		out.WriteByte(':')
		out.Write(value)
	}
	for _, f := range extra {
		k, _ := json.Marshal(f.name)
		v, err := protocol.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		out.WriteByte(',')
		out.Write(k)
		out.WriteByte(':')
		out.Write(v)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// replyField is a field the CLI adds to a reply (see clientParams).
type replyField struct {
	name  string
	value any
}

// printJSON writes v as one line of JSON on stdout.
func (c *cli) printJSON(v any) {
	var data []byte
	switch v := v.(type) {
	case json.RawMessage:
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err == nil {
			data = buf.Bytes()
		} else {
			data = v
		}
	default:
		var err error
		if data, err = protocol.Marshal(v); err != nil {
			data, _ = json.Marshal(errorReply{Error: "encode reply: " + err.Error(), Code: protocol.CodeInternal})
		}
	}
	c.stdout.Write(append(data, '\n'))
}
