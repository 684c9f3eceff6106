package cdpdriver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// ErrChromiumNotFound means no Chromium binary could be found (or the one
// FRAMEBUS_CHROMIUM names cannot be run). The wrapping error says where we
// looked and how to install one.
var ErrChromiumNotFound = errors.New("chromium not found")

// findEnv names the environment variable that overrides the search.
const findEnv = "FRAMEBUS_CHROMIUM"

// findInstallHint is the exact way to fix a missing browser.
const findInstallHint = `install it with "apt-get install -y chromium" (Debian/Ubuntu), or set ` + findEnv + ` to the path of a Chromium or Chrome binary`

// findNames are looked up on PATH, in this order.
var findNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"}

// findPaths are tried when nothing is on PATH (services often run with a
// minimal PATH).
func findPaths() []string {
	if runtime.GOOS == "darwin" {
		return []string{
			"/Applications/Chromium.app/Contents/MacOS/Chromium",
			"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
		}
	}
	return []string{
		"/usr/bin/chromium",
		"/usr/bin/chromium-browser",
		"/usr/lib/chromium/chromium",
		"/snap/bin/chromium",
		"/usr/bin/google-chrome",
		"/usr/bin/google-chrome-stable",
		"/opt/google/chrome/chrome",
	}
}

// FindChromium returns the Chromium binary to run: $FRAMEBUS_CHROMIUM if it
// is set (an error if it does not exist or is not executable; a bare name is
// looked up on PATH), else the first of chromium, chromium-browser,
// google-chrome, google-chrome-stable and chrome found on PATH, else the
// first existing well-known install path (/usr/bin/chromium, ...).
//
// Every error wraps ErrChromiumNotFound and says how to install Chromium.
func FindChromium() (string, error) {
	if v := os.Getenv(findEnv); v != "" {
		path, err := exec.LookPath(v)
		if err != nil {
			return "", fmt.Errorf("%w: %s=%q cannot be run (%w); set it to an existing executable, or unset it and %s",
				ErrChromiumNotFound, findEnv, v, err, findInstallHint)
		}
		return path, nil
	}
	for _, name := range findNames {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	paths := findPaths()
	for _, path := range paths {
		if findIsExecutable(path) {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w: looked for %s on PATH and at %s; %s",
		ErrChromiumNotFound, strings.Join(findNames, ", "), strings.Join(paths, ", "), findInstallHint)
}

func findIsExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
