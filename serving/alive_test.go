package serving

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testscale"
)

// A node killed whose parent has not reaped it (a zombie) is no live
// node: its id still answers a signal, but a state file naming it names
// a node gone (its successor restores its tabs; a client says it stopped).
func TestZombieIsNoLiveNode(t *testing.T) {
	if !ProcessAlive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	// Not waited for: once it has exited it is a zombie.
	deadline := time.Now().Add(testscale.D(20 * time.Second))
	for !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not become a zombie", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ProcessAlive(pid) {
		t.Errorf("a zombie (pid %d) is taken for a live node", pid)
	}
}
