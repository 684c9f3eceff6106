package cdpdriver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// systemDNS turns Chromium's own DNS off in Local State and on again,
// keeping the rest of the file and a secure-DNS choice of the user's own.
func TestSystemDNS(t *testing.T) {
	dir := t.TempDir()
	d, err := openProfileDir(dir, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	path := filepath.Join(dir, "Local State")
	read := func() map[string]any {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	ours := map[string]any{"mode": "secure", "templates": deadDNS}

	if err := systemDNS(d, nil, false); err != nil { // nothing to undo
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("on, in a fresh profile: Local State written (%v)", err)
	}
	if err := systemDNS(d, nil, true); err != nil {
		t.Fatal(err)
	}
	if got := read()["dns_over_https"]; !reflect.DeepEqual(got, ours) {
		t.Fatalf("off: dns_over_https = %v", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("Local State mode %v", fi.Mode().Perm())
	}

	// What Chromium keeps there survives both ways.
	if err := os.WriteFile(path, []byte(`{"browser":{"enabled_labs_experiments":[]},"dns_over_https":{"mode":"secure","templates":"`+deadDNS+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := systemDNS(d, nil, false); err != nil {
		t.Fatal(err)
	}
	if m := read(); m["dns_over_https"] != nil || m["browser"] == nil {
		t.Fatalf("on again: %v", m)
	}
	if err := systemDNS(d, nil, true); err != nil {
		t.Fatal(err)
	}
	if m := read(); !reflect.DeepEqual(m["dns_over_https"], ours) || m["browser"] == nil {
		t.Fatalf("off again: %v", m)
	}

	// The user's own choice of secure DNS is theirs.
	own := map[string]any{"mode": "automatic", "templates": "https://dns.example/dns-query"}
	data, _ := json.Marshal(map[string]any{"dns_over_https": own})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := systemDNS(d, nil, false); err != nil {
		t.Fatal(err)
	}
	if got := read()["dns_over_https"]; !reflect.DeepEqual(got, own) {
		t.Fatalf("the user's own setting: %v", got)
	}

	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := systemDNS(d, nil, true); err == nil {
		t.Fatal("off, with a Local State that is not JSON: no error")
	}
	if err := systemDNS(d, nil, false); err != nil {
		t.Fatalf("on, with a Local State that is not JSON (Chromium resets it): %v", err)
	}
}
