package bus

import (
	"io"
	"testing"

	"github.com/rs/zerolog"
)

func TestEnabled(t *testing.T) {
	debug := zerolog.New(io.Discard).Level(zerolog.DebugLevel)
	for _, tc := range []struct {
		name string
		log  zerolog.Logger
		lvl  zerolog.Level
		want bool
	}{
		{"zero logger debug", zerolog.Logger{}, zerolog.DebugLevel, false},
		{"nop debug", zerolog.Nop(), zerolog.DebugLevel, false},
		{"debug logger debug", debug, zerolog.DebugLevel, true},
		{"debug logger trace", debug, zerolog.TraceLevel, false},
	} {
		if got := enabled(tc.log, tc.lvl); got != tc.want {
			t.Errorf("%s: enabled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFatalfLogsAndRemembersFirstMessage(t *testing.T) {
	l := newServerLogger(zerolog.Nop())
	l.Fatalf("first %d", 1) // must return, not exit
	l.Fatalf("second %d", 2)
	if got := l.firstFatal(); got != "first 1" {
		t.Fatalf("firstFatal() = %q, want %q", got, "first 1")
	}
}
