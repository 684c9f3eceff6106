package bus

import "errors"

// Errors returned by this package. Callers test for them with errors.Is; the
// returned errors wrap one of these and add what went wrong where.
var (
	// ErrInvalidOptions means Options asked for something impossible or
	// contradictory (a MaxPayload below MinMaxPayload, URL together with
	// NoListen, a port out of range, ...).
	ErrInvalidOptions = errors.New("bus: invalid options")

	// ErrServerStart means the embedded nats-server did not come up: most
	// often its TCP port is already taken.
	ErrServerStart = errors.New("bus: embedded NATS server failed to start")

	// ErrConnect means an external NATS server (Options.URL) could not be
	// reached, or does not accept the payload size asked for.
	ErrConnect = errors.New("bus: cannot connect to NATS")

	// ErrClosed is returned by Connect after Close.
	ErrClosed = errors.New("bus: closed")

	// ErrDrainTimeout is returned by Close when some connection did not
	// finish draining within Options.DrainTimeout and was closed anyway.
	ErrDrainTimeout = errors.New("bus: connections did not drain in time")
)
