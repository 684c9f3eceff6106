package protocol

import (
	"strings"
	"testing"
)

// Invalid UTF-8 anywhere in a plan or a request is refused naming the
// field, never decoded into U+FFFD and run as other text than was sent.
func TestInvalidUTF8IsRefused(t *testing.T) {
	plans := []struct{ body, field string }{
		{"{\"action\": {\"type\": \"navigate\", \"url\": \"https://a.test/\xff\"}}", "action.url:"},
		{"{\"actions\": [{\"type\": \"eval\", \"expression\": \"1\"}, {\"type\": \"type\", \"text\": \"a\xc3\"}]}", "actions[1].text:"},
		{"{\"action\": {\"type\": \"upload\", \"selector\": \"#f\", \"files\": [\"/ok\", \"/x\xe2\x82\"]}}", "action.files[1]:"},
		{"{\"id\": \"p\xfe\", \"action\": {\"type\": \"eval\", \"expression\": \"1\"}}", "id:"},
		{"{\"action\": {\"type\": \"eval\", \"expression\": \"'\\ud800'\"}}", "action.expression:"},
		{"{\"action\": {\"type\": \"eval\", \"expression\": \"'\\udc00\\ud800'\"}}", "action.expression:"},
		{"{\"action\": {\"type\": \"eval\", \"x\xff\": 1}}", `action."x`},
	}
	for _, tc := range plans {
		_, err := DecodePlan([]byte(tc.body))
		if CodeOf(err) != CodeBadRequest || !strings.HasPrefix(err.Error(), tc.field) || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("%q: %v, want bad_request naming %s", tc.body, err, tc.field)
		}
	}
	var req NewTabRequest
	if err := DecodeRequest([]byte("{\"url\": \"https://a.test/\xff\"}"), "newtab", &req); CodeOf(err) != CodeBadRequest || !strings.HasPrefix(err.Error(), "newtab.url:") {
		t.Errorf("newtab: %v", err)
	}
	// Valid text, escaped or not, surrogate pairs included, passes as it is.
	p, err := DecodePlan([]byte(`{"action": {"type": "type", "text": "é€😀 \ud83d\ude00 \\ud800"}}`))
	if err != nil || p.Actions[0].Text != `é€😀 😀 \ud800` {
		t.Fatalf("valid text: %+v %v", p, err)
	}
}
