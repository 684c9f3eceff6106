package whitelist

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	wl, err := New([]string{"*.example.test", "example.test", "127.0.0.1", "bücher.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url    string
		denied string // the host the error names; "" = allowed; "-" = denied without a host
	}{
		{"https://example.test/", ""},
		{"https://mail.example.test/inbox", ""},
		{"https://a.b.docs.example.test/x", ""},
		{"HTTPS://MAIL.EXAMPLE.TEST/", ""},
		{"https://mail.example.test./", ""},
		{"http://127.0.0.1:8080/", ""},
		{"about:blank", ""},
		{"https://xn--bcher-kva.test/", ""},
		{"https://BÜCHER.test/", ""},
		{"https://evil.test/", "evil.test"},
		{"https://example.test.evil.test/", "example.test.evil.test"},
		{"https://evilexample.test/", "evilexample.test"},
		{"https://example.test@evil.test/", "evil.test"},
		{"https://mail.example.test:443@evil.test/", "evil.test"},
		{`https://evil.test\@example.test/`, "evil.test"},
		{"https://evil.test#@example.test", "evil.test"},
		{"https://evil.test?@example.test", "evil.test"},
		{"https://%65vil.test/", "evil.test"},
		{"https://ｅｖｉｌ.test/", "evil.test"},
		{"https://evil。test/", "evil.test"},
		{"https://ev\til.test/", "evil.test"},
		{"  https://evil.test/  ", "evil.test"},
		{"https:evil.test/", "evil.test"},
		{"https:///evil.test/", "evil.test"},
		{"http://2130706433/", ""},               // 127.0.0.1 in decimal
		{"http://0x7f.1/", ""},                   // 127.0.0.1 in hex and short form
		{"http://0177.0.0.1/", ""},               // octal
		{"http://2130706434/", "127.0.0.2"},      // 127.0.0.2
		{"http://0x7f000002/", "127.0.0.2"},      // hex
		{"http://[::ffff:7f00:2]/", "127.0.0.2"}, // IPv4 in IPv6
		{"http://[::1]/", "[::1]"},
		{"http://localhost/", "localhost"},
		{"file:///etc/passwd", "-"},
		{"javascript:alert(1)", "-"},
		{"data:text/html,<h1>x", "-"},
		{"about:config", "-"},
		{"chrome://settings", "-"},
		{"ftp://example.test/", "-"},
		{"nonsense", "-"},
	}
	for _, tt := range tests {
		err := wl.Check(tt.url)
		var denied *DeniedError
		switch {
		case tt.denied == "" && err != nil:
			t.Errorf("%q denied: %v", tt.url, err)
		case tt.denied != "" && !errors.As(err, &denied):
			t.Errorf("%q allowed, want denied (%s)", tt.url, tt.denied)
		case tt.denied == "-" && denied.Host != "":
			t.Errorf("%q denied for host %q, want for its scheme: %v", tt.url, denied.Host, err)
		case tt.denied != "" && tt.denied != "-" && (denied.Host != tt.denied || !strings.Contains(err.Error(), tt.denied)):
			t.Errorf("%q: %v, want the error to name %s", tt.url, err, tt.denied)
		}
	}
}

func TestNilAndEmpty(t *testing.T) {
	all, _ := New(nil, nil)
	if err := all.Check("https://anything.test/"); err != nil {
		t.Fatalf("no whitelist denied: %v", err)
	}
	if err := all.Check("file:///etc/passwd"); err == nil {
		t.Fatal("no whitelist allowed file:")
	}
	none, _ := New([]string{}, nil)
	for _, u := range []string{"https://example.test/", "http://127.0.0.1/"} {
		if err := none.Check(u); err == nil {
			t.Fatalf("empty whitelist allowed %s", u)
		}
	}
	if err := none.Check("about:blank"); err != nil {
		t.Fatalf("empty whitelist denied about:blank: %v", err)
	}
	star, _ := New([]string{"*"}, nil)
	if err := star.Check("https://x.test/"); err != nil {
		t.Fatal(err)
	}
	withData, _ := New([]string{}, []string{"http", "https", "data"})
	if err := withData.Check("data:text/plain,hi"); err != nil {
		t.Fatalf("configured data: denied: %v", err)
	}
}

func TestBadPatterns(t *testing.T) {
	for _, p := range []string{"ex*ample.test", "*example.test", "a.*.test", "[::1", "exa mple.test"} {
		if _, err := New([]string{p}, nil); err == nil {
			t.Errorf("pattern %q accepted", p)
		}
	}
}
