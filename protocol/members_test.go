package protocol

import (
	"bytes"
	"encoding/json"
	"testing"
)

// members agrees with encoding/json on every valid object.
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
