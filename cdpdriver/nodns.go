package cdpdriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// deadDNS is the DNS-over-HTTPS server a browser without DNS is given:
// an address literal (no lookup to reach it) on the discard port, where
// no DoH server answers.
const deadDNS = "https://127.0.0.1:9/dns-query"

// systemDNS sets, in the profile's Local State, DNS-over-HTTPS in secure
// mode at deadDNS (off), or takes that setting out again (on) so that a
// profile once run under a whitelist resolves names again without one.
// With it Chromium never asks the machine's resolver, and every name it
// looks up itself fails. There is no command-line flag for it: Local
// State is where Chromium keeps its "Use secure DNS" choice. The rest of
// Local State is kept, and a choice of the user's own is left alone.
func systemDNS(userDataDir string, off bool) error {
	path := filepath.Join(userDataDir, "Local State")
	state := map[string]any{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !off {
			return nil
		}
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(data, &state); err != nil {
			if !off {
				return nil // not ours to undo; Chromium resets it
			}
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	ours := map[string]any{"mode": "secure", "templates": deadDNS}
	current, _ := state["dns_over_https"].(map[string]any)
	switch {
	case off:
		state["dns_over_https"] = ours
	case current != nil && current["templates"] == deadDNS:
		delete(state, "dns_over_https")
	default:
		return nil
	}
	if data, err = json.Marshal(state); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
