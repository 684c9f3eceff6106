package protocol

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// members splits a valid JSON object into its members without decoding
// the values: the map's values are sub-slices of data. data must have
// passed json.Valid and start with '{'. A key given twice is an error
// (encoding/json would keep the last value, so a plan could say one
// thing to a reader and do another).
func members(data []byte) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, 8)
	i := skipSpace(data, 1)
	if i < len(data) && data[i] == '}' {
		return out, nil
	}
	for i < len(data) {
		end := endOfString(data, i)
		key, err := unquoteKey(data[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the ':'
		vend := endOfValue(data, i)
		if _, twice := out[key]; twice {
			return nil, fmt.Errorf("%q is given twice", key)
		}
		out[key] = json.RawMessage(data[i:vend])
		i = skipSpace(data, vend)
		if data[i] == '}' {
			break
		}
		i = skipSpace(data, i+1) // the ','
	}
	return out, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// endOfString is the index just past the string starting at data[i] ('"').
func endOfString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// endOfValue is the index just past the value starting at data[i].
func endOfValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return endOfString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = endOfString(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	}
	j := i
	for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' && data[j] != ' ' && data[j] != '\t' && data[j] != '\n' && data[j] != '\r' {
		j++
	}
	return j
}

func unquoteKey(q []byte) (string, error) {
	for _, c := range q[1 : len(q)-1] {
		if c == '\\' || c >= utf8.RuneSelf { // escapes and non-ASCII: as encoding/json reads them
			var s string
			err := json.Unmarshal(q, &s)
			return s, err
		}
	}
	return string(q[1 : len(q)-1]), nil
}
