package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// Another local user (uid 65534) tries the http and search resources of
// a node it does not run: with the node's state file and credentials
// (unreadable), with a state file of its own, and with the bus URL and
// guessed passwords. Each is one attack; it got through when the command
// succeeded or a request reached the loopback page or engine. Every
// refusal is permission_denied, at once (never a timeout).
func TestOtherUserCannotFetchOrSearch(t *testing.T) {
	setpriv := needSetpriv(t)
	var reached atomic.Int64
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Write([]byte("secret page"))
	}))
	defer page.Close()
	n := startNode(t)
	home := nobodyHome(t)
	bin := filepath.Join(home, "framebus")
	copyFile(t, binary, bin, 0o755)
	base := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + home}
	if raceEnabled {
		base = append(base, "GORACE=atexit_sleep_ms=0")
	}
	busURL, err := url.Parse(n.state.Bus)
	if err != nil {
		t.Fatal(err)
	}
	guessed := func(user, password string) string {
		u := *busURL
		u.User = url.UserPassword(user, password)
		return u.String()
	}
	envs := [][]string{
		slices.Concat(base, []string{envURL + "=" + n.state.Bus, envState + "=" + n.stateFile}),
		slices.Concat(base, []string{envURL + "=" + n.state.Bus, envCreds + "=" + n.credsFile(serving.AgentCredsFile)}),
		slices.Concat(base, []string{envURL + "=" + n.state.Bus, envState + "=" + filepath.Join(home, "state.json")}),
		slices.Concat(base, []string{envURL + "=" + guessed("agent", "agent")}),
		slices.Concat(base, []string{envURL + "=" + guessed("admin", "")}),
	}
	through, tried := 0, 0
	for _, env := range envs {
		for _, args := range [][]string{{"fetch", page.URL + "/"}, {"search", "anything"}} {
			tried++
			r := framebusAs(t, setpriv, bin, env, "", args...)
			m := r.reply(t)
			if r.status == 0 || m["code"] != string(protocol.CodePermissionDenied) || strings.Contains(r.stdout, "secret page") {
				through++
				t.Errorf("%v as uid 65534 with %s: exit %d, %s %s", args, env[len(env)-1], r.status, r.stdout, r.stderr)
			}
		}
	}
	if reached.Load() != 0 {
		t.Errorf("the page saw %d requests", reached.Load())
	}
	t.Logf("%d fetches and searches as another local user, %d got through; the page saw %d requests", tried, through, reached.Load())
}
