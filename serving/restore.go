package serving

import (
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/protocol"
)

// tabsFileName is the file beside the state file where a node with file
// history keeps its open tabs, for its next start to bring them back
// under their ids (see actors.NodeOptions.TabsFile).
const tabsFileName = "tabs.json"

// restoreFile is the node's tabs file: beside the state file when the
// history is on file (the tabs go on from their last frames there), ""
// otherwise, or while another live node is registered in that state file
// (its tabs are its own).
func restoreFile(storage, statePath string, log zerolog.Logger) string {
	if storage != actors.HistoryFile {
		return ""
	}
	if st, err := ReadState(statePath); err == nil && st.PID != os.Getpid() && ProcessAlive(st.PID) {
		log.Warn().Int("pid", st.PID).Msg("another live node is registered in the state file: this one neither restores nor keeps its tabs")
		return ""
	}
	return filepath.Join(filepath.Dir(statePath), tabsFileName)
}

// restoredName is the name of the node that wrote the tabs file, which a
// node started again with its state and given no name takes: its tabs'
// frames, its sessions and its registry entry go on under it.
func restoredName(tabsFile string) string {
	if tabsFile == "" {
		return ""
	}
	name, _, err := actors.ReadTabsFile(tabsFile)
	if err != nil || !protocol.ValidNodeName(name) {
		return ""
	}
	return name
}
