package testchild

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testscale"
)

const parentEnv = "TESTCHILD_PARENT"

// TestMain doubles as the parent process of TestChildDiesWithKilledParent:
// it starts a long sleep with DieWithTest, prints the sleep's pid and
// waits to be killed.
func TestMain(m *testing.M) {
	if os.Getenv(parentEnv) != "" {
		child := DieWithTest(exec.Command("sleep", "1000"))
		if err := child.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(child.Process.Pid)
		select {}
	}
	os.Exit(m.Run())
}

// A parent killed hard (SIGKILL: no cleanup runs, as when go test kills a
// test binary at its timeout) takes its child with it.
func TestChildDiesWithKilledParent(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), parentEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = parent.Process.Kill()
		t.Fatalf("the parent printed no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		_ = parent.Process.Kill()
		t.Fatalf("the parent printed %q", line)
	}
	if !alive(pid) {
		t.Fatalf("the child %d is not running before its parent is killed", pid)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the child %d outlived its killed parent", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive says whether pid runs (a zombie, dead and not yet reaped by init,
// counts as gone).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state is the field after the command's closing parenthesis.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}
