package bus_test

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/bus"
)

// An embedded bus with one in-process service and one in-process client.
func ExampleStart() {
	b, err := bus.Start(bus.Options{NoListen: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close() // drains both connections, then stops the server

	svc, err := b.Connect("greeter")
	if err != nil {
		fmt.Println(err)
		return
	}
	svc.Subscribe("demo.greet", func(m *nats.Msg) {
		m.Respond([]byte("hello, " + string(m.Data)))
	})
	svc.Flush() // the subscription is in place before anyone asks

	client, err := b.Connect("client")
	if err != nil {
		fmt.Println(err)
		return
	}
	reply, err := client.Request("demo.greet", []byte("agent"), 5*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(reply.Data))
	fmt.Printf("embedded=%v url=%q max=%d MiB\n", b.Embedded(), b.ClientURL(), b.MaxPayload()>>20)
	// Output:
	// hello, agent
	// embedded=true url="" max=16 MiB
}
