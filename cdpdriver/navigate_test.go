package cdpdriver

import "testing"

func TestResolveURL(t *testing.T) {
	base := "http://127.0.0.1:8080/shop/list?page=2"
	cases := []struct{ in, want string }{
		{"example.com", "https://example.com"},
		{"example.com/path?q=1", "https://example.com/path?q=1"},
		{"localhost:3000", "http://localhost:3000"},
		{"localhost:3000/api", "http://localhost:3000/api"},
		{"127.0.0.1", "http://127.0.0.1"},
		{"127.0.0.1:9000/x", "http://127.0.0.1:9000/x"},
		{"[::1]:8080", "http://[::1]:8080"},
		{"app.localhost", "http://app.localhost"},
		{"https://example.com/", "https://example.com/"},
		{"HTTP://Example.com", "HTTP://Example.com"},
		{"about:blank", "about:blank"},
		{"data:text/html,hi", "data:text/html,hi"},
		{"file:/etc/passwd", "file:/etc/passwd"}, // file URLs, not a host named "file"
		{"file:etc/passwd", "file:etc/passwd"},
		{"FILE:/tmp/x", "FILE:/tmp/x"},
		{"//cdn.example.com/a", "https://cdn.example.com/a"},
		{"/search?q=products", "http://127.0.0.1:8080/search?q=products"},
		{"./item", "http://127.0.0.1:8080/shop/item"},
		{"?page=3", "http://127.0.0.1:8080/shop/list?page=3"},
		{"#top", "http://127.0.0.1:8080/shop/list?page=2#top"},
		{"  example.com  ", "https://example.com"},
	}
	for _, tc := range cases {
		got, err := ResolveURL(tc.in, base)
		if err != nil || got != tc.want {
			t.Errorf("ResolveURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "   ", "/relative-without-page"} {
		if got, err := ResolveURL(bad, "about:blank"); err == nil {
			t.Errorf("ResolveURL(%q) = %q, want an error", bad, got)
		}
	}
}

func TestJSONFromDeep(t *testing.T) {
	cases := []struct{ deep, want string }{
		{`{"type":"undefined"}`, ""},
		{`{"type":"node","value":{"nodeType":1}}`, ""},
		{`{"type":"number","value":"NaN"}`, `null`},
		{`{"type":"number","value":"-0"}`, `0`},
		{`{"type":"array","value":[{"type":"number","value":"-Infinity"},{"type":"node","value":{"nodeType":1}},{"type":"window","value":{}}]}`, `[null,null,null]`},
		{`{"type":"object","value":[["el",{"type":"node","value":{"nodeType":1}}],["e",{"type":"error"}]]}`, `{"e":{}}`},
		{`{"type":"array","value":[{"type":"function","weakLocalObjectReference":1},{"type":"function","weakLocalObjectReference":1}]}`, `[null,null]`},
		{`{"type":"object","value":[["\u000b",{"type":"number","value":1}]]}`, `{"\u000b":1}`},
		{`{"type":"array","value":[{"type":"undefined"},{"type":"string","value":"a"}]}`, `[null,"a"]`},
		{`{"type":"object","value":[["k",{"type":"function"}],["n",{"type":"null"}]]}`, `{"n":null}`},
		{`{"type":"regexp","value":{"pattern":"a+","flags":"g"}}`, `"/a+/g"`},
		{`{"type":"map","value":[[{"type":"number","value":1},{"type":"boolean","value":true}]]}`, `{"1":true}`},
		{`{"type":"array","value":[{"type":"object","value":[["k",{"type":"number","value":1}]],"weakLocalObjectReference":1},{"type":"object","weakLocalObjectReference":1}]}`, `[{"k":1},{"k":1}]`},
	}
	for _, tc := range cases {
		got, err := jsonFromDeep([]byte(tc.deep), 0)
		if err != nil || string(got) != tc.want {
			t.Errorf("jsonFromDeep(%s) = %s, %v; want %s", tc.deep, got, err, tc.want)
		}
	}
	cycle := `{"type":"object","value":[["self",{"type":"object","weakLocalObjectReference":1}]],"weakLocalObjectReference":1}`
	if _, err := jsonFromDeep([]byte(cycle), 0); err == nil {
		t.Fatal("a circular value converted without error")
	}
}
