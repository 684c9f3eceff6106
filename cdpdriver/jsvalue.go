package cdpdriver

import (
	"bytes"
	"encoding/json"

	"github.com/mafredri/cdp/protocol/runtime"
)

// deepSerialization asks Chromium for a typed ("deep") serialization of a
// result. Unlike plain returnByValue it tells a DOM node from an empty
// object, marks repeated and circular references, and keeps BigInts, so
// eval can answer exactly as DR-014's table says in one round trip.
var deepSerialization = runtime.SerializationOptions{
	Serialization:        "deep",
	AdditionalParameters: json.RawMessage(`{"maxNodeDepth":0,"includeShadowTree":"none"}`),
}

// jsValue is one node of a deep serialization.
type jsValue struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value,omitempty"`
	Ref   *int            `json:"weakLocalObjectReference,omitempty"`
}

// jsonFromDeep converts a deep-serialized value to the JSON that DR-014's
// returnByValue (JSON.stringify's semantics) gives: NaN and ±Infinity are
// null and -0 is 0, at the top level too; DOM nodes and windows are left
// out like undefined (null in an array, no key in an object); objects with
// no JSON-visible properties (an Error, a Promise) are {}. One difference
// keeps information: BigInts are their digits, as a string. At the top
// level, values JSON cannot carry (undefined, functions, symbols, DOM
// nodes, windows) give nil: "no value". A circular reference is a
// *SerializationError. JSON longer than max (0: no limit) is a
// *ResultTooLargeError: an object met many times travels once, as
// references, but JSON writes it out each time (a value of 14 nested
// pairs of one object is 16 MB of JSON from a reply of kilobytes).
func jsonFromDeep(raw json.RawMessage, max int) (json.RawMessage, error) {
	var v jsValue
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	switch v.Type {
	case "undefined", "function", "symbol", "node", "window":
		return nil, nil
	}
	c := converter{refs: map[int]json.RawMessage{}, active: map[int]bool{}, max: max}
	var buf bytes.Buffer
	if _, err := c.write(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type converter struct {
	refs   map[int]json.RawMessage // serialized values by reference, for repeats; nil: no JSON form
	active map[int]bool            // references being serialized: met again means a cycle
	max    int                     // the most JSON written; 0: no limit
}

// write appends v's JSON to buf. It reports false when v has no JSON
// form (undefined, functions, symbols, DOM nodes, windows): arrays then
// hold null and objects leave the key out, as JSON.stringify does. A
// repeated reference is written as its first occurrence was.
func (c *converter) write(buf *bytes.Buffer, v jsValue) (bool, error) {
	if v.Ref == nil {
		return c.writeValue(buf, v)
	}
	ref := *v.Ref
	if len(v.Value) == 0 {
		if c.active[ref] {
			return false, &SerializationError{Reason: "circular reference"}
		}
		if prior, seen := c.refs[ref]; seen {
			if c.max > 0 && buf.Len()+len(prior) > c.max {
				return false, &ResultTooLargeError{What: "the eval value (an object it repeats, written out each time)", Size: buf.Len() + len(prior), Limit: c.max}
			}
			buf.Write(prior)
			return prior != nil, nil
		}
	}
	c.active[ref] = true
	start := buf.Len()
	ok, err := c.writeValue(buf, v)
	delete(c.active, ref)
	c.refs[ref] = nil
	if ok {
		c.refs[ref] = append(json.RawMessage(nil), buf.Bytes()[start:]...)
	}
	return ok, err
}

// writeValue appends v's JSON to buf, as write does, v's repeats aside.
func (c *converter) writeValue(buf *bytes.Buffer, v jsValue) (bool, error) {
	switch v.Type {
	case "undefined", "function", "symbol", "node", "window":
		return false, nil
	case "null":
		buf.WriteString("null")
	case "string", "boolean", "date":
		buf.Write(v.Value)
	case "number":
		buf.Write(jsonNumber(v.Value))
	case "bigint":
		buf.Write(v.Value)
	case "regexp":
		var re struct{ Pattern, Flags string }
		_ = json.Unmarshal(v.Value, &re)
		writeJSONString(buf, "/"+re.Pattern+"/"+re.Flags)
	case "array", "set":
		var items []jsValue
		_ = json.Unmarshal(v.Value, &items)
		buf.WriteByte('[')
		for i, item := range items {
			if i > 0 {
				buf.WriteByte(',')
			}
			ok, err := c.write(buf, item)
			if err != nil {
				return false, err
			}
			if !ok {
				buf.WriteString("null")
			}
		}
		buf.WriteByte(']')
	case "object", "map":
		var entries [][2]json.RawMessage
		_ = json.Unmarshal(v.Value, &entries)
		buf.WriteByte('{')
		n := 0
		for _, e := range entries {
			key, err := entryKey(e[0])
			if err != nil {
				return false, err
			}
			var item jsValue
			_ = json.Unmarshal(e[1], &item)
			mark := buf.Len()
			if n > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, key)
			buf.WriteByte(':')
			ok, err := c.write(buf, item)
			if err != nil {
				return false, err
			}
			if !ok {
				buf.Truncate(mark)
				continue
			}
			n++
		}
		buf.WriteByte('}')
	default: // error, promise, typed arrays, ...: as JSON.stringify, an empty object
		buf.WriteString("{}")
	}
	return true, nil
}

// jsonNumber is a deep-serialized number as JSON.stringify writes it: the
// numbers JSON has no form for, which come as strings, are null, except
// -0, which is 0.
func jsonNumber(value json.RawMessage) json.RawMessage {
	if len(value) == 0 || value[0] != '"' {
		return value
	}
	if string(value) == `"-0"` {
		return json.RawMessage("0")
	}
	return json.RawMessage("null") // NaN, Infinity, -Infinity
}

// writeJSONString writes s as a JSON string; strconv.Quote would write
// escapes JSON lacks (\v, \x01).
func writeJSONString(buf *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // a string always marshals
	buf.Write(q)
}

// entryKey is an object key (a string) or a Map key (a serialized value).
func entryKey(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var k jsValue
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", err
	}
	if k.Type == "string" {
		_ = json.Unmarshal(k.Value, &s)
		return s, nil
	}
	var c converter
	c.refs, c.active = map[int]json.RawMessage{}, map[int]bool{}
	var buf bytes.Buffer
	if _, err := c.write(&buf, k); err != nil {
		return "", err
	}
	return buf.String(), nil
}
