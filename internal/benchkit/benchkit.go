// Package benchkit holds what the benchmarks that compare framebus with
// a floor or a peer share: their percentiles, concurrent rounds, and the
// pages they fetch.
package benchkit

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Page100KB is an HTML page of 100,000 bytes.
var Page100KB = "<!DOCTYPE html><html><head><meta charset=utf-8><title>bench</title></head><body>" +
	strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>\n", 1200)[:100_000-100] +
	"</body></html>"

// P50 is the median of d.
func P50(d []time.Duration) time.Duration { return Percentile(d, 50) }

// Percentile is the p-th percentile of d (0 for none).
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// Round runs one n times at once and answers how long they all took.
func Round(n int, one func()) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(one)
	}
	wg.Wait()
	return time.Since(start)
}
