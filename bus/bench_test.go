package bus_test

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/protocol"
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

// BenchmarkClusterRequest measures what a cluster's route adds to a
// request: an agent's request to a responder in the node's account on the
// first member, from a client of that member and from a client of the
// third, interleaved in one run (both cross from the agent's account to
// the node's through its imports).
//
//	go test -run '^$' -bench ClusterRequest -benchtime 5000x -cpu 1 ./bus
func BenchmarkClusterRequest(b *testing.B) {
	members := startCluster(b, 3, []bus.User{{Name: "agent", PasswordHash: testHash, Role: protocol.RoleAgent}})
	subj := protocol.Subjects{Prefix: "fb"}
	plan := subj.TabPlan("BENCH")
	responder := connect(b, members[0], "responder")
	if _, err := responder.Subscribe(plan, func(m *nats.Msg) { m.Respond(m.Data) }); err != nil {
		b.Fatal(err)
	}
	if err := responder.Flush(); err != nil {
		b.Fatal(err)
	}
	agentOn := func(m *bus.Bus) *nats.Conn {
		nc, err := nats.Connect(m.ClientURL(), nats.UserInfo("agent", testPassword), nats.CustomInboxPrefix(protocol.InboxPrefix("agent")))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		return nc
	}
	local, remote := agentOn(members[0]), agentOn(members[2])
	payload := []byte(`{"id":"p","actions":[{"type":"eval","expression":"1+1"}]}`)
	round := func(nc *nats.Conn) time.Duration {
		start := time.Now()
		if _, err := nc.Request(plan, payload, wait); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	waitUntil(b, "the responder seen from the third member", func() bool {
		_, err := remote.Request(plan, payload, 200*time.Millisecond)
		return err == nil
	})
	for range 500 {
		round(local)
		round(remote)
	}
	var localT, remoteT []time.Duration
	b.ResetTimer()
	for range b.N {
		localT = append(localT, round(local))
		remoteT = append(remoteT, round(remote))
	}
	b.StopTimer()
	l, r := median(localT), median(remoteT)
	b.ReportMetric(float64(l.Microseconds()), "own-member-p50-µs")
	b.ReportMetric(float64(r.Microseconds()), "other-member-p50-µs")
	b.ReportMetric(float64(r)/float64(l), "other/own")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
