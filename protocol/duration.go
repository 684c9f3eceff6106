package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"time"
)

// Duration is a time.Duration on the wire. It is written as a Go duration
// string ("500ms", "2s", "1m") and read from such a string or from a number
// of milliseconds (the seeds' unit), so sub-second values survive end to end.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		switch {
		case err != nil && durationSyntax.MatchString(s):
			return tooLong(s) // well formed, but past what time.Duration holds
		case err != nil:
			return fmt.Errorf("duration %q: want a number of milliseconds or a duration like \"500ms\", \"2s\"", s)
		case v > MaxDuration || v < -MaxDuration:
			return tooLong(s)
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("duration %s: want a number of milliseconds or a duration like \"500ms\", \"2s\"", b)
	}
	if math.Abs(ms) > float64(MaxDuration/time.Millisecond) {
		return tooLong(string(b) + " (milliseconds)")
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}

// MaxDuration is the longest duration the wire takes: a day is far past
// any wait of a page, and a larger number is a mistake (or would overflow).
const MaxDuration = 24 * time.Hour

// durationSyntax is the form time.ParseDuration reads.
var durationSyntax = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)[a-zµμ]+)+$`)

func tooLong(s string) error {
	return fmt.Errorf("duration %s is longer than the longest allowed, %s", s, MaxDuration)
}
