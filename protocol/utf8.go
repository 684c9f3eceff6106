package protocol

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Text on the bus is UTF-8. encoding/json replaces invalid bytes (and an
// escaped lone surrogate, "\ud800") with U+FFFD without a word, so a plan
// would run with text other than what its sender wrote: such a request is
// refused, naming the field, before it is decoded.

// checkText refuses data that is not valid UTF-8 text throughout: nil, or
// a bad_request naming the first field (a key or a value) that is not.
// data is a JSON value; its fields are named under root ("" for a plan,
// whose fields go by their own names), and what names the whole.
func checkText(data []byte, root, what string) error {
	if utf8.Valid(data) && !hasEscapedSurrogate(data) {
		return nil
	}
	field, at := badTextField(data, root)
	if at == "" {
		// A valid surrogate pair; or bytes outside strings, which the
		// JSON check refuses in its own words.
		return nil
	}
	if field == "" {
		field = what
	}
	return badRequest("%s: is not valid UTF-8 text (%s); send text as UTF-8, unaltered", field, at)
}

// badTextField walks the JSON value in data (which need not be valid
// JSON: the walk stops where it cannot go on) and returns the path of
// the first string that is not valid text, and what is wrong with it.
func badTextField(data []byte, path string) (string, string) {
	i := skipSpace(data, 0)
	if i >= len(data) {
		return "", ""
	}
	switch data[i] {
	case '"':
		end := endOfString(data, i)
		if why := badText(data[i:end]); why != "" {
			return path, why
		}
	case '{':
		i = skipSpace(data, i+1)
		for i < len(data) && data[i] == '"' {
			kend := endOfString(data, i)
			key := data[i:kend]
			name := string(key[1 : len(key)-1])
			if u, err := strconv.Unquote(string(key)); err == nil {
				name = u
			}
			if why := badText(key); why != "" {
				return join(path, fmt.Sprintf("%q", name)), "in the key: " + why
			}
			i = skipSpace(data, kend)
			if i >= len(data) || data[i] != ':' {
				return "", ""
			}
			i = skipSpace(data, i+1)
			if i >= len(data) {
				return "", ""
			}
			vend := endOfValue(data, i)
			if f, why := badTextField(data[i:vend], join(path, name)); why != "" {
				return f, why
			}
			i = skipSpace(data, vend)
			if i < len(data) && data[i] == ',' {
				i = skipSpace(data, i+1)
			}
		}
	case '[':
		i = skipSpace(data, i+1)
		for n := 0; i < len(data) && data[i] != ']'; n++ {
			vend := endOfValue(data, i)
			if vend <= i {
				return "", ""
			}
			if f, why := badTextField(data[i:vend], fmt.Sprintf("%s[%d]", path, n)); why != "" {
				return f, why
			}
			i = skipSpace(data, vend)
			if i < len(data) && data[i] == ',' {
				i = skipSpace(data, i+1)
			}
		}
	}
	return "", ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// badText says what is wrong with a quoted JSON string's text, "" when
// nothing is.
func badText(q []byte) string {
	for i := 0; i < len(q); {
		r, size := utf8.DecodeRune(q[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Sprintf("byte 0x%02x at offset %d", q[i], i-1)
		}
		if q[i] == '\\' && i+1 < len(q) {
			if q[i+1] == 'u' {
				if bad, n := loneSurrogate(q, i); bad {
					return fmt.Sprintf("a lone surrogate %s at offset %d", q[i:i+6], i-1)
				} else if n > 0 {
					i += n
					continue
				}
			}
			i += 2
			continue
		}
		i += size
	}
	return ""
}

// loneSurrogate looks at the \u escape at q[i]: bad when it is half of a
// surrogate pair without its other half; n is the length of a valid pair
// (12), else 0.
func loneSurrogate(q []byte, i int) (bad bool, n int) {
	v, ok := hex4(q, i+2)
	switch {
	case !ok || v < 0xD800 || v > 0xDFFF:
		return false, 0
	case v >= 0xDC00:
		return true, 0
	}
	if i+12 <= len(q) && q[i+6] == '\\' && q[i+7] == 'u' {
		if w, ok := hex4(q, i+8); ok && w >= 0xDC00 && w <= 0xDFFF {
			return false, 12
		}
	}
	return true, 0
}

func hex4(q []byte, i int) (int, bool) {
	if i+4 > len(q) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(q[i:i+4]), 16, 16)
	return int(v), err == nil
}

// hasEscapedSurrogate is a quick test for "\ud8..".."\udf..", before the
// walk that checks whether one is alone.
func hasEscapedSurrogate(data []byte) bool {
	for i := 0; i+3 < len(data); i++ {
		if data[i] == '\\' && data[i+1] == 'u' && (data[i+2] == 'd' || data[i+2] == 'D') {
			switch data[i+3] {
			case '8', '9', 'a', 'b', 'c', 'd', 'e', 'f', 'A', 'B', 'C', 'D', 'E', 'F':
				return true
			}
		}
	}
	return false
}
