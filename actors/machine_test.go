package actors

import (
	"runtime"
	"testing"
)

// The bounds a node takes without being given any, from its machine: the
// attacker's 25 tabs (5.4 GB of Chromium) on this kind of machine (2
// cores, about 22 GB available) are more than it takes.
func TestDefaultBoundsFromTheMachine(t *testing.T) {
	const gib = int64(1) << 30
	for _, c := range []struct {
		m    Machine
		tabs int
	}{
		{Machine{MemAvailable: 22 * gib, Cores: 2}, 16}, // cores bound it
		{Machine{MemAvailable: 4 * gib, Cores: 8}, 8},   // memory: 2 GiB at 256 MiB a tab
		{Machine{MemAvailable: 0, Cores: 2}, 16},        // memory unknown
		{Machine{MemAvailable: 100 << 20, Cores: 1}, 2}, // never fewer than 2
		{Machine{MemAvailable: 64 * gib, Cores: 0}, 8},  // cores unknown: one
	} {
		if got := c.m.DefaultMaxTabs(); got != c.tabs {
			t.Errorf("%+v: %d tabs, want %d", c.m, got, c.tabs)
		}
	}
	if got := (Machine{MemAvailable: 22 * gib, Cores: 2}).DefaultMaxTabs(); got >= 25 {
		t.Errorf("the attacker's 25 tabs fit under %d", got)
	}
	for _, c := range []struct {
		m        Machine
		free     int64
		inMemory bool
		want     int64
	}{
		{Machine{MemAvailable: 22 * gib}, 80 * gib, false, 20 * gib}, // a quarter of the disk
		{Machine{MemAvailable: 4 * gib}, 12 * gib, true, 1 * gib},    // a tmpfs: a quarter of the memory
		{Machine{MemAvailable: 40 * gib}, 12 * gib, true, 3 * gib},   // a tmpfs smaller than memory
		{Machine{}, 0, false, 1},                                     // a full disk takes nothing
	} {
		if got := c.m.DefaultMaxStagedBytes(c.free, c.inMemory); got != c.want {
			t.Errorf("%+v, %d free (in memory %v): %d bytes, want %d", c.m, c.free, c.inMemory, got, c.want)
		}
	}
	// Asked for: a number is kept, 0 is the machine's, -1 is none.
	m := Machine{MemAvailable: 22 * gib, Cores: 2}
	for asked, want := range map[int]int{5: 5, 0: 16, -1: 0} {
		if got := maxTabs(asked, m); got != want {
			t.Errorf("maxTabs(%d) = %d, want %d", asked, got, want)
		}
	}
	here := ThisMachine()
	if here.Cores != runtime.NumCPU() || here.MemAvailable <= 0 {
		t.Errorf("this machine: %+v", here)
	}
	t.Logf("this machine: %+v: %d tabs", here, here.DefaultMaxTabs())
}
