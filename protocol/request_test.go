package protocol

import (
	"strings"
	"testing"
)

func TestDecodeRequest(t *testing.T) {
	var ok NewTabRequest
	if err := DecodeRequest([]byte(`{"url": "/x"}`), "newtab", &ok); err != nil || ok.URL != "/x" {
		t.Fatalf("newtab {url}: %+v, %v", ok, err)
	}
	cases := []struct{ body, want string }{
		{`{"url": 5}`, "newtab.url: must be a string, got a number"},
		{`{"url": "/x", "tab": "y"}`, `newtab: "tab" is not a field of this request`},
		{`{"url": "/a", "url": "/b"}`, `newtab: invalid JSON: "url" is given twice`},
		{`[1]`, "newtab: expected a JSON object"},
		{`{"url": `, "newtab: invalid JSON"},
		{`nope`, "newtab: expected a JSON object, got text that is not JSON"},
	}
	for _, tc := range cases {
		var req NewTabRequest
		err := DecodeRequest([]byte(tc.body), "newtab", &req)
		if CodeOf(err) != CodeBadRequest || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("newtab %s: %v, want bad_request %q", tc.body, err, tc.want)
		}
	}
	var content ContentRequest
	if err := DecodeRequest([]byte(`{"sequence": 1.5}`), "content", &content); err == nil || !strings.Contains(err.Error(), "content.sequence: must be an integer") {
		t.Errorf("content {sequence: 1.5}: %v", err)
	}
}
