package bus

import (
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// serverLogger adapts zerolog to nats-server's Logger interface.
//
// The server's stock logger calls os.Exit on Fatalf, and the server calls
// Fatalf for a taken port. Here Fatalf logs at error level and remembers the
// first message, so Start can turn it into an error.
type serverLogger struct {
	log zerolog.Logger

	mu      sync.Mutex
	fatal   string // first Fatalf message; "" when none
	lastErr string // last Errorf message; "" when none

	// nameClash is closed when a server of the cluster had this one's
	// name (the server closes the route; see Bus.NameClash).
	nameClash     chan struct{}
	nameClashOnce sync.Once
}

// duplicateNameError ends the format of nats-server's error when a route
// comes from a server with this server's name (server/route.go; the
// route's name comes before it).
const duplicateNameError = "Remote server has a duplicate name: %q"

func newServerLogger(l zerolog.Logger) *serverLogger {
	return &serverLogger{log: l.With().Str("component", "nats-server").Logger(), nameClash: make(chan struct{})}
}

// enabled reports whether l writes events at lvl. It also answers false for
// the zero zerolog.Logger, whose level reads as debug but which writes
// nowhere.
func enabled(l zerolog.Logger, lvl zerolog.Level) bool {
	e := l.WithLevel(lvl)
	ok := e.Enabled()
	e.Discard()
	return ok
}

// firstFatal returns the first message passed to Fatalf, or "".
func (l *serverLogger) firstFatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

func (l *serverLogger) Noticef(format string, v ...any) { l.log.Info().Msgf(format, v...) }

func (l *serverLogger) Warnf(format string, v ...any) {
	// The server warns about any MaxPayload above 8 MiB, which is every
	// default framebus start; that is a choice we made, not a problem.
	if strings.HasPrefix(format, "Maximum payloads over") {
		l.log.Info().Msgf(format, v...)
		return
	}
	l.log.Warn().Msgf(format, v...)
}

func (l *serverLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error().Bool("fatal", true).Msg(msg)
	l.mu.Lock()
	if l.fatal == "" {
		l.fatal = msg
	}
	l.mu.Unlock()
}

func (l *serverLogger) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error().Msg(msg)
	if strings.HasSuffix(format, duplicateNameError) {
		l.nameClashOnce.Do(func() { close(l.nameClash) })
	}
	l.mu.Lock()
	l.lastErr = msg
	l.mu.Unlock()
}

// lastError returns the last message passed to Errorf, or "": why a
// leaf connection keeps failing, for one.
func (l *serverLogger) lastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}
func (l *serverLogger) Debugf(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l *serverLogger) Tracef(format string, v ...any) { l.log.Trace().Msgf(format, v...) }
