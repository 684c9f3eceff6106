package actors

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine is what a node's default bounds are derived from (see
// DefaultMaxTabs and DefaultMaxStagedBytes), read once at start.
type Machine struct {
	// MemAvailable is the memory available to the node's processes, in
	// bytes: Linux's MemAvailable, or less when the node's cgroup (a
	// container's) allows less. 0: unknown.
	MemAvailable int64
	// Cores is how many CPUs the node may run on.
	Cores int
}

// ThisMachine reads the machine the node runs on.
func ThisMachine() Machine {
	m := Machine{MemAvailable: memAvailable(), Cores: runtime.NumCPU()}
	if left, ok := cgroupMemoryLeft(); ok && (m.MemAvailable == 0 || left < m.MemAvailable) {
		m.MemAvailable = left
	}
	return m
}

// cgroupMemoryLeft is what the tightest memory limit of the process's
// cgroup and its parents leaves, if any sets one: a container's limit,
// which /proc/meminfo does not show (cgroup v2's memory.max, or v1's
// memory.limit_in_bytes).
func cgroupMemoryLeft() (int64, bool) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	left, found := int64(0), false
	for _, line := range strings.Split(string(data), "\n") {
		var root, limitFile, usedFile string
		path, v2 := strings.CutPrefix(line, "0::")
		switch _, controllers, _ := strings.Cut(line, ":"); {
		case v2:
			root, limitFile, usedFile = "/sys/fs/cgroup", "memory.max", "memory.current"
		case strings.HasPrefix(controllers, "memory:"):
			path = strings.TrimPrefix(controllers, "memory:")
			root, limitFile, usedFile = "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		for dir := filepath.Join(root, path); strings.HasPrefix(dir, root); dir = filepath.Dir(dir) {
			limit, errLimit := readCgroupNumber(filepath.Join(dir, limitFile))
			used, errUsed := readCgroupNumber(filepath.Join(dir, usedFile))
			if l := max(0, limit-used); errLimit == nil && errUsed == nil && (!found || l < left) {
				left, found = l, true
			}
			if dir == root {
				break
			}
		}
	}
	return left, found
}

// readCgroupNumber reads a cgroup file of one number ("max" is no number).
func readCgroupNumber(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// diskFree is the space free to this process on dir's file system, and
// whether that file system is memory (tmpfs, ramfs: what is written
// there takes the machine's memory).
func diskFree(dir string) (free int64, inMemory bool, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false, err
	}
	inMemory = st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC
	return int64(st.Bavail) * st.Bsize, inMemory, nil
}
