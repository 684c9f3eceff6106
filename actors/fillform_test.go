package actors

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// formValues is the form's values as fillform.html reads them.
type formValues struct {
	Name, About, Plan, Country, Volume, Age string
	News, Terms                             bool
}

// fill-form fills text, a textarea (by ref), checkboxes, a radio, a
// select and a range in one action and one frame, in document order,
// with real clicks only for the boxes whose state changes.
func TestFillForm(t *testing.T) {
	tab, _, _ := tabAt(t, "/fillform.html")
	ref := refOf(t, tab, `textbox "About"`)
	cmdMutate(t, tab, protocol.Action{Type: "fill-form", Fields: map[string]string{
		"#volume":  "8",
		"#country": "France",
		"#pro":     "true",
		"#terms":   "true", // checked already: no click
		"#news":    "True",
		ref:        "line one\nline two",
		"#name":    "Ann",
		"#age":     "42",
	}})
	var got formValues
	cmdEvalInto(t, tab, "window.values()", &got)
	want := formValues{Name: "Ann", About: "line one\nline two", Plan: "pro", Country: "fr", Volume: "8", Age: "42", News: true, Terms: true}
	if got != want {
		t.Fatalf("the form holds %+v, want %+v", got, want)
	}
	cmdExpect(t, tab, "window.changes.join()", `"name,about,news,pro,country,volume,age"`)
	cmdExpect(t, tab, "window.clicks.join()", `"news,pro"`)
	cmdMutate(t, tab, protocol.Action{Type: "fill-form", Fields: map[string]string{"#news": "false", "#name": ""}})
	cmdExpect(t, tab, "[window.values().news, window.values().name]", `[false,""]`)
}

// refOf takes a snapshot and returns the ref of the line that contains
// what.
func refOf(t *testing.T, tab *Tab, what string) string {
	t.Helper()
	r := cmdRead(t, tab, protocol.Action{Type: "snapshot"})
	var snap snapshotValue
	if err := json.Unmarshal(r.Value, &snap); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(snap.Text, "\n") {
		if i := strings.Index(line, "[ref="); i >= 0 && strings.Contains(line, what) {
			return strings.TrimSuffix(strings.Fields(line[i+5:])[0], "]")
		}
	}
	t.Fatalf("no ref for %s in %s", what, r.Value)
	return ""
}

// A field fill-form cannot fill fails the whole action before any field
// is touched, with a code and a message naming the field.
func TestFillFormRefusesBeforeFilling(t *testing.T) {
	tab, _, _ := tabAt(t, "/fillform.html")
	cases := []struct {
		field, value string
		code         protocol.Code
		says         string
	}{
		{"#missing", "x", protocol.CodeElementNotFound, "#missing"},
		{"#news", "maybe", protocol.CodeBadRequest, `"maybe" is not a state for element #news`},
		{"#free", "false", protocol.CodeBadRequest, "#free (input#free) is a checked radio button"},
		{"#volume", "eleven", protocol.CodeBadRequest, "a number from 0 to 10"},
		{"#age", "old", protocol.CodeBadRequest, "not a number"},
		{"#country", "Spain", protocol.CodeElementNotFound, "Spain"},
		{"#send", "x", protocol.CodeBadRequest, "#send (button#send) is a <button>, which fill-form cannot fill"},
		{"#label", "x", protocol.CodeBadRequest, "is a <span>"},
		{"#locked", "x", protocol.CodeBadRequest, "#locked (input#locked) is disabled"},
		{"e999999", "x", protocol.CodeBadRequest, "e999999"},
		{"[", "x", protocol.CodeBadRequest, "["},
	}
	for _, tc := range cases {
		// #name sorts before every field above, and comes first in the
		// document: it is not filled either.
		res := cmdFails(t, tab, protocol.Action{Type: "fill-form", Fields: map[string]string{"#name": "filled", tc.field: tc.value}}, tc.code)
		if !strings.Contains(res.Error, tc.says) {
			t.Errorf("%s = %q: error %q does not say %q", tc.field, tc.value, res.Error, tc.says)
		}
		cmdExpect(t, tab, "[window.values().name, window.changes.length]", `["old name",0]`)
	}
	cmdFails(t, tab, protocol.Action{Type: "fill-form"}, protocol.CodeBadRequest)
	res := cmdFails(t, tab, protocol.Action{Type: "fill-form", Fields: map[string]string{"#name": "a", "input[name=name]": "b"}}, protocol.CodeBadRequest)
	if !strings.Contains(res.Error, "same field") {
		t.Errorf("one field twice: %q", res.Error)
	}
}
