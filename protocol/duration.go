package protocol

import (
	"encoding/json"
	"fmt"
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
		if err != nil {
			return fmt.Errorf("duration %q: want a number of milliseconds or a duration like \"500ms\", \"2s\"", s)
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("duration %s: want a number of milliseconds or a duration like \"500ms\", \"2s\"", b)
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}
