package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The bus has no TLS, so serve refuses to listen anywhere but loopback
// unless told to (--allow-remote, bus.allowRemote), whichever way the
// address comes (flag, config file, environment): a usage error (exit 2,
// bad_request) that says why, before anything starts. Loopback addresses
// and localhost are accepted; so is --websocket on loopback.
func TestListenLoopbackOnly(t *testing.T) {
	dir := t.TempDir()
	bad := []string{"0.0.0.0:4999", ":4999", "[::]:4999", "192.168.1.10:4999", "10.0.0.1:0", "[fe80::1]:4999", "example.com:4999", "localhost.example.com:0", "[::ffff:0.0.0.0]:4999"}
	for i, listen := range bad {
		file := filepath.Join(dir, "bad"+itoa(i)+".yaml")
		if err := os.WriteFile(file, []byte("bus:\n  listen: \""+listen+"\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for source, run := range map[string]func() result{
			"flag":   func() result { return framebus(t, testEnv(), "", "serve", "--listen", listen) },
			"config": func() result { return framebus(t, testEnv(), "", "serve", "--config", file) },
			"env":    func() result { return framebus(t, testEnv(envListen+"="+listen), "", "serve") },
		} {
			r := run()
			m := r.reply(t)
			msg, _ := m["error"].(string)
			if r.status != exitUsage || m["code"] != "bad_request" || !strings.Contains(msg, "no TLS") || !strings.Contains(msg, listen) || !strings.Contains(msg, "loopback") {
				t.Errorf("serve with %s from the %s: exit %d, %s; want exit 2, bad_request saying why", listen, source, r.status, r.stdout)
			}
		}
	}
	for _, listen := range []string{"127.0.0.1:0", "127.0.0.2:4999", "[::1]:0", "localhost:0", "LOCALHOST.:4999"} {
		if r := framebus(t, testEnv(), "", "config", "--listen", listen); r.status != 0 {
			t.Errorf("config --listen %s: exit %d, %s", listen, r.status, r.stdout)
		}
	}
	for _, args := range [][]string{{"--websocket", "0.0.0.0:0"}, {"--websocket", "localhost"}, {"--websocket", "10.0.0.1:80"}} {
		r := framebus(t, testEnv(), "", append([]string{"serve"}, args...)...)
		if m := r.reply(t); r.status != exitUsage || m["code"] != "bad_request" || !strings.Contains(m["error"].(string), "WebSocket") {
			t.Errorf("serve %s: exit %d, %s; want exit 2, bad_request", args, r.status, r.stdout)
		}
	}
	for _, args := range [][]string{{"--listen", "0.0.0.0:0", "--allow-remote"}, {"--websocket", "127.0.0.1:0"}, {"--websocket", "0.0.0.0:0", "--allow-remote"}} {
		if r := framebus(t, testEnv(), "", append([]string{"config"}, args...)...); r.status != 0 {
			t.Errorf("config %s: exit %d, %s", args, r.status, r.stdout)
		}
	}
	// A flag on loopback overrides a file that is not.
	if r := framebus(t, testEnv(), "", "config", "--config", filepath.Join(dir, "bad0.yaml"), "--listen", "127.0.0.1:0"); r.status != 0 {
		t.Errorf("a loopback flag over a file's 0.0.0.0: exit %d, %s", r.status, r.stdout)
	}
}

// Address and range entries are whitelist entries like names, from every
// source; a source with schemes and no whitelist keeps no address policy.
func TestWhitelistAddressEntries(t *testing.T) {
	cfg := defaultConfig()
	list := []string{"example.test", "127.0.0.1", "10.0.0.0/8", "::1", "[fd00::7]"}
	cfg.Whitelist = &list
	wl, err := cfg.whitelist()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://example.test/", "http://127.0.0.1:4999/", "http://10.1.2.3/", "http://[::1]/", "http://[fd00::7]/"} {
		if err := wl.Check(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	if err := wl.CheckAddr("example.test", netip.MustParseAddr("192.168.0.1")); err == nil {
		t.Error("an unlisted private address allowed")
	}
	cfg = defaultConfig()
	cfg.Schemes = []string{"http", "https", "data"}
	if wl, err = cfg.whitelist(); err != nil || wl.CheckAddr("example.test", netip.MustParseAddr("127.0.0.1")) != nil {
		t.Errorf("schemes without a whitelist: %v", err)
	}
}
