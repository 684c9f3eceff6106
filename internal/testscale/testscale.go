// Package testscale is the one knob a slow or busy machine turns to give
// the tests more time: every deadline a test waits for a condition with
// is scaled by FRAMEBUS_TEST_SCALE (a number, 1 when unset). CI on a
// shared machine raises it; nothing else changes. A deadline only bounds
// how long a test waits for what must happen: tests never assert that
// something happened quickly.
//
//	ctx, cancel := context.WithTimeout(ctx, testscale.D(30*time.Second))
package testscale

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// Env is the environment variable that holds the scale.
const Env = "FRAMEBUS_TEST_SCALE"

// Factor is the scale: FRAMEBUS_TEST_SCALE, or 1. A value that is not a
// number of at least 1 stops the tests at once, rather than run them
// with deadlines nobody asked for.
var Factor = sync.OnceValue(func() float64 {
	v := os.Getenv(Env)
	if v == "" {
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 || f > 100 {
		panic(fmt.Sprintf("%s=%q: want a number from 1 to 100", Env, v))
	}
	return f
})

// D is d scaled by Factor.
func D(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Factor())
}
