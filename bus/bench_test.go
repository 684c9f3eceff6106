package bus_test

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/bus"
)

// BenchmarkRequestReply measures one request/reply round trip of a ~100 byte
// payload against an in-process responder, from an in-process client and
// from a TCP client on loopback.
func BenchmarkRequestReply(b *testing.B) {
	bb := startBus(b, bus.Options{})
	responder := connect(b, bb, "responder")
	sub, err := responder.Subscribe("bench.echo", func(m *nats.Msg) { m.Respond(m.Data) })
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := responder.FlushTimeout(wait); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 100)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}

	for _, bc := range []struct {
		name string
		conn func() *nats.Conn
	}{
		{"inproc", func() *nats.Conn { return connect(b, bb, "requester") }},
		{"tcp", func() *nats.Conn { return dial(b, bb) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			nc := bc.conn()
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := nc.Request("bench.echo", payload, wait); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
