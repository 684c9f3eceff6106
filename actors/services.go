package actors

import (
	"fmt"
	"maps"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/protocol"
)

// Discovery: every request/reply subject of a node is an endpoint of the
// NATS micro service ServiceName (nats.go's micro package), so `nats micro
// ls` and `nats micro info framebus` list them with their subjects and
// request counts. The node is one instance (tabs, status, sessions,
// session start); each profile, tab and session is an instance of its
// own, with metadata naming it ({"profile": name}, {"tab": id},
// {"session": id}), stopped when it goes: micro endpoints cannot be
// removed one by one, and an instance per thing keeps `nats micro info`
// saying what runs where.
//
// Endpoints keep the subjects' semantics: every node answers tabs and
// status, and a profile's lifecycle (no queue group), one node of a queue
// group takes each session start; a tab's and a session's subjects have
// one subscriber, its own.

// ServiceName is the micro service name of framebus nodes.
const ServiceName = "framebus"

// ServiceVersion is the service's version: the protocol's, as semver.
var ServiceVersion = fmt.Sprintf("%d.0.0", protocol.Version)

// endpoint is one request/reply subject of an instance.
type endpoint struct {
	name    string // unique in the instance: letters, digits, '-', '_'
	subject string
	handle  micro.HandlerFunc
	queue   string // "": every subscriber gets each request
}

// addService registers an instance of ServiceName with its endpoints.
func addService(nc *nats.Conn, description string, metadata map[string]string, endpoints []endpoint) (micro.Service, error) {
	svc, err := micro.AddService(nc, micro.Config{
		Name:        ServiceName,
		Version:     ServiceVersion,
		Description: description,
		Metadata:    maps.Clone(metadata),
	})
	if err != nil {
		return nil, err
	}
	for _, e := range endpoints {
		opts := []micro.EndpointOpt{micro.WithEndpointSubject(e.subject), micro.WithEndpointQueueGroupDisabled()}
		if e.queue != "" {
			opts[1] = micro.WithEndpointQueueGroup(e.queue)
		}
		// As a plain subscription would, a busy endpoint holds what
		// comes (its clients' deadlines bound the wait) up to the
		// library's pending limits.
		if err := svc.AddEndpoint(e.name, answerableOnly(e.handle), opts...); err != nil {
			_ = svc.Stop()
			return nil, fmt.Errorf("service endpoint %s (%s): %w", e.name, e.subject, err)
		}
	}
	return svc, nil
}

// answerableOnly drops what is no request a client waits for (see
// protocol.Answerable): a message with no reply subject, or a JetStream
// delivery, which an observer can aim at any subject.
func answerableOnly(h micro.HandlerFunc) micro.HandlerFunc {
	return func(r micro.Request) {
		if protocol.Answerable(r.Reply()) {
			h(r)
		}
	}
}
