package actors

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// task is one entry of testdata/site/tasks/tasks.json: a whole job a
// model does on a site, step by step, naming each element as a snapshot
// shows it (role and accessible name), the way the MCP benchmark replays
// it on framebus and on Playwright.
type task struct {
	Name  string     `json:"name"`
	What  string     `json:"what"`
	Start string     `json:"start"`
	Steps []taskStep `json:"steps"`
}

// taskStep is an action (do, on the element role "name") or an expect:
// text the snapshot must come to hold.
type taskStep struct {
	Do     string `json:"do,omitempty"`
	Role   string `json:"role,omitempty"`
	Name   string `json:"name,omitempty"`
	Value  string `json:"value,omitempty"`
	Expect string `json:"expect,omitempty"`
}

func (s taskStep) String() string {
	if s.Expect != "" {
		return fmt.Sprintf("expect %q", s.Expect)
	}
	return fmt.Sprintf("%s %s %q %q", s.Do, s.Role, s.Name, s.Value)
}

// scrollBottom is "bottom" as a scroll's to: far past any page's end,
// which the browser clamps to the end.
const scrollBottom = "0,10000000"

func loadTasks(t *testing.T) []task {
	t.Helper()
	data, err := os.ReadFile("../testdata/site/tasks/tasks.json")
	if err != nil {
		t.Fatal(err)
	}
	var tasks []task
	if err := json.Unmarshal(data, &tasks); err != nil {
		t.Fatalf("tasks.json: %v", err)
	}
	return tasks
}

// Every task of tasks.json can be done on framebus as the benchmark's
// scripted model does it: before each action a snapshot, in which the
// element the step names is exactly one line `- role "name" ... [ref=eN]`,
// and the action on that ref; an expect waits (a snapshot every 100 ms)
// for its text, which must not have been in the snapshot before the
// action it follows (else it would prove nothing).
func TestTasksAreDoable(t *testing.T) {
	t.Parallel()
	tasks := loadTasks(t)
	if len(tasks) < 12 {
		t.Fatalf("tasks.json has %d tasks, want at least 12", len(tasks))
	}
	for _, tk := range tasks {
		t.Run(tk.Name, func(t *testing.T) {
			t.Parallel()
			checkTaskShape(t, tk)
			tab, _, _ := tabAt(t, tk.Start)
			var before string // the snapshot the last action was chosen in
			var read, largest int
			for i, step := range tk.Steps {
				where := fmt.Sprintf("task %s, step %d (%s)", tk.Name, i+1, step)
				if step.Expect == "" {
					before = runTaskStep(t, tab, where, step)
					read, largest = read+len(before), max(largest, len(before))
					continue
				}
				if strings.Contains(before, step.Expect) {
					t.Fatalf("%s: the text was in the page before the action it follows; the snapshot then:\n%s", where, around(before, step.Expect))
				}
				seen := expectInSnapshot(t, tab, where, step.Expect)
				read, largest = read+len(seen), max(largest, len(seen))
			}
			// What a model reading a whole snapshot per step reads, for
			// the benchmark's author (go test -v).
			t.Logf("%s: %d snapshots, %d bytes in all, the largest %d bytes", tk.Name, len(tk.Steps), read, largest)
		})
	}
}

func checkTaskShape(t *testing.T, tk task) {
	t.Helper()
	if tk.Start == "" || tk.What == "" || len(tk.Steps) < 4 || len(tk.Steps) > 15 {
		t.Fatalf("task %s: want a start, a what and 4 to 15 steps, got %+v", tk.Name, tk)
	}
	for i, s := range tk.Steps {
		if (s.Do == "") == (s.Expect == "") {
			t.Fatalf("task %s, step %d: want either do or expect: %+v", tk.Name, i+1, s)
		}
	}
}

// runTaskStep snapshots the page, finds the step's element in it and acts
// on it; it returns the snapshot.
func runTaskStep(t *testing.T, tab *Tab, where string, step taskStep) string {
	t.Helper()
	text := snapshotOf(t, tab, protocol.Action{}).Text
	ref := func() string { return taskRef(t, text, where, step) }
	var plan []protocol.Action
	switch step.Do {
	case "navigate":
		plan = []protocol.Action{{Type: "navigate", URL: site(step.Value)}}
	case "press":
		if step.Role != "" {
			plan = append(plan, protocol.Action{Type: "focus", Selector: ref()})
		}
		plan = append(plan, protocol.Action{Type: "key", Key: step.Value})
	case "scroll":
		if step.Value != "bottom" {
			t.Fatalf("%s: scroll takes value \"bottom\"", where)
		}
		a := protocol.Action{Type: "scroll", To: scrollBottom}
		if step.Role != "" {
			a.Selector = ref()
		}
		plan = []protocol.Action{a}
	case "click", "check":
		plan = []protocol.Action{{Type: "click", Selector: ref()}}
	case "fill":
		plan = []protocol.Action{{Type: "fill", Selector: ref(), Text: step.Value}}
	case "select":
		plan = []protocol.Action{{Type: "select", Selector: ref(), Value: step.Value}}
	default:
		t.Fatalf("%s: unknown do %q", where, step.Do)
	}
	for _, a := range plan {
		a.BasedOnSequence = protocol.Based(tab.Info().Sequence)
		if res := send(t, tab.ID(), one(a)); !res.OK {
			t.Fatalf("%s: %s failed: %+v", where, a.Type, res)
		}
	}
	return text
}

// taskRef returns the ref of the one element a snapshot shows as role
// "name"; none or several fail the step, with the snapshot.
func taskRef(t *testing.T, text, where string, step taskStep) string {
	t.Helper()
	line := regexp.MustCompile(`^\s*- ` + regexp.QuoteMeta(step.Role) + ` "` + regexp.QuoteMeta(step.Name) + `"(?:\s.*)?\[ref=(e\d+)\]`)
	var refs []string
	for _, l := range strings.Split(text, "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			refs = append(refs, m[1])
		}
	}
	if len(refs) != 1 {
		t.Fatalf("%s: want exactly one %s %q with a ref in the snapshot, found %d (%v); the snapshot:\n%s",
			where, step.Role, step.Name, len(refs), refs[:min(len(refs), 5)], around(text, step.Name))
	}
	return refs[0]
}

// expectInSnapshot polls snapshots until one holds want, and returns it.
func expectInSnapshot(t *testing.T, tab *Tab, where, want string) string {
	t.Helper()
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for {
		text := snapshotOf(t, tab, protocol.Action{NoIdle: true}).Text
		if strings.Contains(text, want) {
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the snapshot never held %q; the last one:\n%s", where, want, around(text, want))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// around is the part of a snapshot worth showing in a failure: the lines
// near the first mention of what was looked for (by its first word when
// the whole is absent), or the start of a long snapshot.
func around(text, what string) string {
	const show = 40
	lines := strings.Split(text, "\n")
	probes := []string{what}
	if words := strings.Fields(what); len(words) > 1 {
		probes = append(probes, words[0])
	}
	at := 0
find:
	for _, probe := range probes {
		for i, l := range lines {
			if strings.Contains(l, probe) {
				at = i
				break find
			}
		}
	}
	from, to := max(0, at-show/2), min(len(lines), at+show/2)
	if from == 0 && to == len(lines) {
		return text
	}
	return fmt.Sprintf("(lines %d to %d of %d)\n%s", from+1, to, len(lines), strings.Join(lines[from:to], "\n"))
}
