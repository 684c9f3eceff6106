package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The serve path end to end: the configured viewport reaches the tab
// (here from $FRAMEBUS_VIEWPORT, the layer between the file and the
// flags), and `framebus resize` from the command line changes it and
// makes a frame.
func TestServeViewportAndResize(t *testing.T) {
	t.Parallel() // its own node
	n := startNode(t, envViewport+"=1024x768")
	size := func() string {
		t.Helper()
		m := mustOK(t, n.env, "eval", "innerWidth + 'x' + innerHeight")
		v, _ := json.Marshal(m["value"])
		return strings.Trim(string(v), `"`)
	}
	if got := size(); got != "1024x768" {
		t.Fatalf("serve with %s=1024x768: the page is %s", envViewport, got)
	}
	before := mustOK(t, n.env, "eval", "1")["sequence"].(float64)
	m := mustOK(t, n.env, "resize", "1280", "720")
	if m["sequence"].(float64) != before+1 || m["value"].(map[string]any)["changed"] != true {
		t.Fatalf("resize 1280 720: %v (sequence before %v)", m, before)
	}
	if got := size(); got != "1280x720" {
		t.Fatalf("after resize 1280 720: the page is %s", got)
	}
	mustOK(t, n.env, "resize", "--device", "Pixel 7")
	// about:blank has no viewport meta tag: a phone lays it out 980px
	// wide, zoomed out; its pixel ratio and touch points are the Pixel's.
	if m := mustOK(t, n.env, "eval", "devicePixelRatio + ' ' + navigator.maxTouchPoints"); m["value"] != "2.625 5" {
		t.Fatalf("after resize --device 'Pixel 7': the page says %v", m["value"])
	}
	mustOK(t, n.env, "resize", "800", "600", "--device-scale-factor", "1.5")
	if m := mustOK(t, n.env, "eval", "devicePixelRatio + ' ' + innerWidth"); m["value"] != "1.5 800" {
		t.Fatalf("after resize 800 600 --device-scale-factor 1.5: the page says %v", m["value"])
	}
	for _, args := range [][]string{{"resize", "50", "50"}, {"resize", "--device", "Nokia"}, {"resize", "1024"},
		{"resize", "800", "600", "--device-scale-factor", "9"}, {"resize", "800", "600", "--device-scale-factor", "x"}} {
		r := framebus(t, n.env, "", args...)
		if m := r.reply(t); r.status == 0 || m["code"] != "bad_request" {
			t.Errorf("framebus %q: exit %d, %s", args, r.status, r.stdout)
		}
	}
}

// --viewport, $FRAMEBUS_VIEWPORT, the file's viewport and device reach
// the effective configuration; bad ones are refused at startup, naming
// the setting and what it takes.
func TestConfigViewport(t *testing.T) {
	show := func(env []string, args ...string) config {
		t.Helper()
		m := mustOK(t, env, append([]string{"config"}, args...)...)
		data, _ := json.Marshal(m["config"])
		var cfg config
		if err := json.Unmarshal(data, &cfg); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if cfg := show(testEnv()); cfg.Viewport != "1280x720" || cfg.Device != "" {
		t.Fatalf("default viewport %q device %q", cfg.Viewport, cfg.Device)
	}
	if cfg := show(testEnv(envViewport+"=800x600"), "--viewport", "1920x1080", "--device", "iPad Mini"); cfg.Viewport != "1920x1080" || cfg.Device != "iPad Mini" {
		t.Fatalf("flags over the environment: %+v", cfg)
	}
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--viewport", "0x0"}, "100 to 7680"},
		{[]string{"--viewport", "-1280x720"}, "100 to 7680"},
		{[]string{"--viewport", "100000x100000"}, "100 to 7680"},
		{[]string{"--viewport", "abc"}, `"abc" is not a size`},
		{[]string{"--device", "Nokia"}, "iPhone 13"},
		{[]string{"--viewport", "window", "--device", "Pixel 7"}, "give one or the other"},
	} {
		for _, cmd := range []string{"config", "serve"} {
			r := framebus(t, testEnv(), "", append([]string{cmd}, tc.args...)...)
			if m := r.reply(t); r.status != exitUsage || m["code"] != "bad_request" || !strings.Contains(m["error"].(string), tc.mention) || !strings.Contains(m["error"].(string), "viewport") {
				t.Errorf("%s %q: exit %d, %s", cmd, tc.args, r.status, r.stdout)
			}
		}
	}
}
