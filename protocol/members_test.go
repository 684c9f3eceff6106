package protocol

import (
	"bytes"
	"encoding/json"
	"testing"
)

// members agrees with encoding/json on every valid object, and refuses
// one that gives a key twice.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a" : "x\"}" , "b":[1,{"c":"]"}],"d":null}`,
		`{"a\u0062":true,"a":1,"a":2}`, "{\n\t\"k\"\t:\r\n{\"x\":[]}\n}", `{"e":-1.5e3,"f":"\\"}`,
		`{"action":{"type":"eval","expression":"1+1","basedOnSequence":12}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		trimmed := bytes.TrimSpace(data)
		if !json.Valid(trimmed) || len(trimmed) == 0 || trimmed[0] != '{' {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &want); err != nil {
			t.Fatal(err)
		}
		got, err := members(trimmed)
		if twice, ok := repeatsKey(t, trimmed); ok {
			if err == nil {
				t.Fatalf("members(%q) took %q given twice", trimmed, twice)
			}
			return
		}
		if err != nil {
			t.Fatalf("members(%q): %v", trimmed, err)
		}
		if len(got) != len(want) {
			t.Fatalf("members(%q) = %d members, want %d", trimmed, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) {
				t.Fatalf("members(%q)[%q] = %q, want %q", trimmed, k, got[k], v)
			}
		}
	})
}

// repeatsKey is a key the object gives twice, as encoding/json reads keys.
func repeatsKey(t *testing.T, object []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(object))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		key := tok.(string)
		if seen[key] {
			return key, true
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return "", false
}
