package cdpdriver

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mafredri/cdp/protocol/runtime"
)

// deepSerialization asks Chromium for a typed ("deep") serialization of a
// result. Unlike plain returnByValue it tells a DOM node from an empty
// object, marks repeated and circular references, and keeps NaN and BigInts,
// so eval can answer exactly as DR-014's table says in one round trip.
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

// jsonFromDeep converts a deep-serialized value to the JSON that
// JSON.stringify would give, with two differences that keep information:
// NaN and ±Infinity become their spelling as strings, BigInts their digits.
// At the top level, values JSON cannot carry (undefined, functions, symbols,
// DOM nodes, windows) give nil: "no value". A circular reference is a
// *SerializationError.
func jsonFromDeep(raw json.RawMessage) (json.RawMessage, error) {
	var v jsValue
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	switch v.Type {
	case "undefined", "function", "symbol", "node", "window":
		return nil, nil
	}
	c := converter{refs: map[int]json.RawMessage{}, active: map[int]bool{}}
	var buf bytes.Buffer
	if _, err := c.write(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type converter struct {
	refs   map[int]json.RawMessage // serialized values by reference, for repeats
	active map[int]bool            // references being serialized: met again means a cycle
}

// write appends v's JSON to buf. It reports false when v has no JSON
// form (undefined, functions, symbols): arrays then hold null and objects
// leave the key out, as JSON.stringify does.
func (c *converter) write(buf *bytes.Buffer, v jsValue) (bool, error) {
	if v.Ref != nil && len(v.Value) == 0 {
		if c.active[*v.Ref] {
			return false, &SerializationError{Reason: "circular reference"}
		}
		if prior, ok := c.refs[*v.Ref]; ok {
			buf.Write(prior)
			return true, nil
		}
	}
	start := buf.Len()
	if v.Ref != nil {
		c.active[*v.Ref] = true
		defer func() {
			delete(c.active, *v.Ref)
			c.refs[*v.Ref] = append(json.RawMessage(nil), buf.Bytes()[start:]...)
		}()
	}
	switch v.Type {
	case "undefined", "function", "symbol":
		return false, nil
	case "null":
		buf.WriteString("null")
	case "string", "boolean", "date":
		buf.Write(v.Value)
	case "number":
		var s string
		if json.Unmarshal(v.Value, &s) == nil { // NaN, -0, Infinity, -Infinity
			if s == "-0" {
				buf.WriteString("0")
			} else {
				buf.WriteString(strconv.Quote(s))
			}
		} else {
			buf.Write(v.Value)
		}
	case "bigint":
		buf.Write(v.Value)
	case "regexp":
		var re struct{ Pattern, Flags string }
		_ = json.Unmarshal(v.Value, &re)
		buf.WriteString(strconv.Quote("/" + re.Pattern + "/" + re.Flags))
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
			buf.WriteString(strconv.Quote(key))
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
	default: // node, window, error, promise, typed arrays, ...: as JSON.stringify, an empty object
		buf.WriteString("{}")
	}
	return true, nil
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
