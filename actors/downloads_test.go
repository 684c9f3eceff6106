package actors

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/internal/testscale"
)

// A browser framebus launches saves no downloads: Chromium's default
// puts them in ~/Downloads (here a HOME of the test's own, or the home of
// the account Chromium runs as when the test is root), unasked.
func TestLaunchedBrowserTakesNoDownloads(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "") // user-dirs.dirs is read from under HOME
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	b, err := StartBrowser(ctx, cdpdriver.LaunchOptions{Headless: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if u := b.Process().User(); u != nil {
		home = u.Home
	}
	for range 2 { // the second would be "data (1).bin"
		if _, err := b.NewTarget(ctx, site("/download")); err != nil {
			t.Fatal(err)
		}
	}
	// A 4-byte download is saved within milliseconds when it is allowed.
	deadline := time.Now().Add(testscale.D(3 * time.Second))
	for time.Now().Before(deadline) {
		var saved []string
		_ = filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Ext(path) == ".bin" {
				saved = append(saved, path)
			}
			return nil
		})
		if len(saved) > 0 {
			t.Fatalf("the browser saved downloads: %v", saved)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
