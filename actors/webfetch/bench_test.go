package webfetch

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/benchkit"

	"github.com/framebus/framebus/protocol"
)

// benchSetup serves benchkit.Page100KB on the allowed address and returns its URL,
// a Fetcher as a node makes it (the real whitelist and egress Dialer) and
// a plain net/http client with as many idle connections per host, so
// both keep their connections alive alike.
func benchSetup(b *testing.B) (string, *Fetcher, *http.Client) {
	srv := serveOn(b, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, benchkit.Page100KB)
	}))
	f := newFetcher(b, Options{})
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	return srv.URL + "/page", f, &http.Client{Transport: tr}
}

func benchFetch(b *testing.B, f *Fetcher, url string) {
	r, err := f.Fetch(context.Background(), protocol.FetchRequest{URL: url})
	if err != nil || len(r.Body) != len(benchkit.Page100KB) {
		b.Fatalf("fetch: %v (%d bytes)", err, len(r.Body))
	}
}

func benchRaw(b *testing.B, c *http.Client, url string) {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(body) != len(benchkit.Page100KB) {
		b.Fatalf("raw: %v (%d bytes)", err, len(body))
	}
}

// BenchmarkFetch100KB measures, interleaved in one run so machine noise
// hits both alike, Fetch of a 100 KB loopback page (whitelist check,
// egress Dialer, charset decoding, the reply) against the same GET with
// net/http directly, and reports each one's p50 and the ratio.
func BenchmarkFetch100KB(b *testing.B) {
	url, f, raw := benchSetup(b)
	for range 50 { // warm both up: connections open, buffers grown
		benchFetch(b, f, url)
		benchRaw(b, raw, url)
	}
	var fetchT, rawT []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		benchRaw(b, raw, url)
		t1 := time.Now()
		benchFetch(b, f, url)
		t2 := time.Now()
		rawT, fetchT = append(rawT, t1.Sub(t0)), append(fetchT, t2.Sub(t1))
	}
	b.StopTimer()
	b.ReportMetric(float64(benchkit.P50(rawT).Microseconds()), "raw-p50-µs")
	b.ReportMetric(float64(benchkit.P50(fetchT).Microseconds()), "fetch-p50-µs")
	b.ReportMetric(float64(benchkit.P50(fetchT))/float64(benchkit.P50(rawT)), "fetch/raw-p50")
}

// BenchmarkFetch100KBConcurrent64 runs rounds of 64 concurrent fetches of
// the page, alternating a round through Fetch and one through net/http
// directly, and reports each one's throughput and the ratio.
func BenchmarkFetch100KBConcurrent64(b *testing.B) {
	url, f, raw := benchSetup(b)
	round := func(one func()) time.Duration { return benchkit.Round(64, one) }
	viaFetch := func() { benchFetch(b, f, url) }
	direct := func() { benchRaw(b, raw, url) }
	round(viaFetch)
	round(direct)
	var fetchT, rawT time.Duration
	b.ResetTimer()
	for range b.N {
		rawT += round(direct)
		fetchT += round(viaFetch)
	}
	b.StopTimer()
	n := float64(64 * b.N)
	b.ReportMetric(n/rawT.Seconds(), "raw-fetches/s")
	b.ReportMetric(n/fetchT.Seconds(), "fetch-fetches/s")
	b.ReportMetric(rawT.Seconds()/fetchT.Seconds(), "fetch/raw-throughput")
}
