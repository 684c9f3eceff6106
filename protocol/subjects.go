package protocol

import (
	"fmt"
	"regexp"
)

// DefaultPrefix is the first token of every framebus subject.
const DefaultPrefix = "framebus"

// Subjects names the NATS subjects of one framebus deployment. The scheme:
//
//	<prefix>.tab.<tab>.frame        frames of a tab (publish)
//	<prefix>.tab.<tab>.plan         plans for a tab (request/reply)
//	<prefix>.tab.<tab>.event.<kind> page events of a tab (publish)
//	<prefix>.tabs                   list the tabs on the bus (request/reply, every node answers)
type Subjects struct {
	Prefix string
}

// DefaultSubjects uses DefaultPrefix.
var DefaultSubjects = Subjects{Prefix: DefaultPrefix}

// NewSubjects checks prefix (dot-separated subject-safe tokens) and returns
// the scheme under it; "" means DefaultPrefix.
func NewSubjects(prefix string) (Subjects, error) {
	if prefix == "" {
		return DefaultSubjects, nil
	}
	if !prefixPattern.MatchString(prefix) {
		return Subjects{}, badRequest("prefix: %q is not a subject prefix (letters, digits, '-' and '_', tokens separated by '.')", prefix)
	}
	return Subjects{Prefix: prefix}, nil
}

var (
	tokenPattern  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	prefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
)

// ValidTabID reports whether id can be one token of a subject.
func ValidTabID(id string) bool { return tokenPattern.MatchString(id) }

func (s Subjects) p() string {
	if s.Prefix == "" {
		return DefaultPrefix
	}
	return s.Prefix
}

// TabFrames is where a tab publishes its frames.
func (s Subjects) TabFrames(tab string) string { return fmt.Sprintf("%s.tab.%s.frame", s.p(), tab) }

// AllFrames matches the frames of every tab.
func (s Subjects) AllFrames() string { return s.p() + ".tab.*.frame" }

// TabPlan is where a tab takes plans (request/reply).
func (s Subjects) TabPlan(tab string) string { return fmt.Sprintf("%s.tab.%s.plan", s.p(), tab) }

// TabContent is where a tab answers ContentRequests for frame content
// too large for one message.
func (s Subjects) TabContent(tab string) string { return fmt.Sprintf("%s.tab.%s.content", s.p(), tab) }

// TabEvents is where a tab publishes page events of one kind (dialog, console, ...).
func (s Subjects) TabEvents(tab, kind string) string {
	return fmt.Sprintf("%s.tab.%s.event.%s", s.p(), tab, kind)
}

// Tabs is the request subject every node answers with its tabs.
func (s Subjects) Tabs() string { return s.p() + ".tabs" }

// Browser is where a profile's browser takes lifecycle requests (OpStatus,
// OpLaunch, ...).
func (s Subjects) Browser(profile, op string) string {
	return fmt.Sprintf("%s.browser.%s.%s", s.p(), profile, op)
}

// AllTabPlans matches the plan subject of every tab.
func (s Subjects) AllTabPlans() string { return s.p() + ".tab.*.plan" }
