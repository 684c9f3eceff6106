package bus_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/protocol"
)

// wait bounds every receive and request in these tests; none of them sleeps.
const wait = 10 * time.Second

func startBus(t testing.TB, opts bus.Options) *bus.Bus {
	t.Helper()
	b, err := bus.Start(opts)
	if err != nil {
		t.Fatalf("Start(%+v): %v", opts, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func connect(t testing.TB, b *bus.Bus, name string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := b.Connect(name, opts...)
	if err != nil {
		t.Fatalf("Connect(%q): %v", name, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// dial connects over TCP the way another process would, as a new admin
// user (the tests' subjects are none of the roles').
func dial(t testing.TB, b *bus.Bus) *nats.Conn {
	t.Helper()
	return bustest.Connect(t, b, protocol.RoleAdmin, nats.Name("test-tcp"))
}

// echo answers every request on subject with "echo:" + the request, and
// flushes so the subscription is known to the server before it returns.
func echo(t testing.TB, nc *nats.Conn, subject string) {
	t.Helper()
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		m.Respond(append([]byte("echo:"), m.Data...))
	})
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", subject, err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.FlushTimeout(wait); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func request(t testing.TB, nc *nats.Conn, subject, data string) {
	t.Helper()
	msg, err := nc.Request(subject, []byte(data), wait)
	if err != nil {
		t.Fatalf("Request(%q): %v", subject, err)
	}
	if got, want := string(msg.Data), "echo:"+data; got != want {
		t.Fatalf("reply = %q, want %q", got, want)
	}
}

// subscribeSync subscribes and flushes, so a publish from any connection
// made after it returns is delivered.
func subscribeSync(t testing.TB, nc *nats.Conn, subject string) *nats.Subscription {
	t.Helper()
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatalf("SubscribeSync(%q): %v", subject, err)
	}
	if err := nc.FlushTimeout(wait); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	return sub
}

func portOf(t testing.TB, clientURL string) int {
	t.Helper()
	u, err := url.Parse(clientURL)
	if err != nil {
		t.Fatalf("parse %q: %v", clientURL, err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("port of %q: %v", clientURL, err)
	}
	return p
}

func TestZeroOptionsListenOnLoopbackRandomPort(t *testing.T) {
	b := startBus(t, bus.Options{})
	if !b.Embedded() {
		t.Fatal("Embedded() = false for zero Options")
	}
	if !strings.HasPrefix(b.ClientURL(), "nats://127.0.0.1:") {
		t.Fatalf("ClientURL() = %q, want nats://127.0.0.1:PORT", b.ClientURL())
	}
	if p := portOf(t, b.ClientURL()); p <= 0 || p == 4222 {
		t.Fatalf("port = %d, want a random port (not 4222)", p)
	}
	if got := b.MaxPayload(); got != bus.DefaultMaxPayload {
		t.Fatalf("MaxPayload() = %d, want %d", got, bus.DefaultMaxPayload)
	}
}

func TestInProcessPubSub(t *testing.T) {
	b := startBus(t, bus.Options{})
	sub := subscribeSync(t, connect(t, b, "sub"), "test.pubsub")
	pub := connect(t, b, "pub")
	if err := pub.Publish("test.pubsub", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(wait)
	if err != nil {
		t.Fatalf("NextMsg: %v", err)
	}
	if string(msg.Data) != "hello" {
		t.Fatalf("got %q, want hello", msg.Data)
	}
}

func TestInProcessRequestReply(t *testing.T) {
	b := startBus(t, bus.Options{})
	echo(t, connect(t, b, "responder"), "test.echo")
	request(t, connect(t, b, "requester"), "test.echo", "ping")
}

func TestTCPClientTalksToInProcessClient(t *testing.T) {
	b := startBus(t, bus.Options{})
	inproc := connect(t, b, "inproc")
	tcp := dial(t, b)

	echo(t, inproc, "test.inproc.echo")
	request(t, tcp, "test.inproc.echo", "from tcp")

	echo(t, tcp, "test.tcp.echo")
	request(t, inproc, "test.tcp.echo", "from inproc")
}

func TestLargeMessageDeliveredWhole(t *testing.T) {
	b := startBus(t, bus.Options{})
	payload := make([]byte, 9<<20) // above nats-server's 1 MiB and 8 MiB marks
	for i := range payload {
		payload[i] = byte(i*7 + i>>13)
	}
	conns := map[string]func(t *testing.T, name string) *nats.Conn{
		"inproc": func(t *testing.T, name string) *nats.Conn { return connect(t, b, name) },
		"tcp":    func(t *testing.T, _ string) *nats.Conn { return dial(t, b) },
	}
	for _, tc := range []struct{ from, to string }{
		{"inproc", "inproc"},
		{"inproc", "tcp"},
		{"tcp", "inproc"},
		{"tcp", "tcp"},
	} {
		t.Run(tc.from+"_to_"+tc.to, func(t *testing.T) {
			sub := subscribeSync(t, conns[tc.to](t, "sub"), "test.large")
			pub := conns[tc.from](t, "pub")
			if err := pub.Publish("test.large", payload); err != nil {
				t.Fatalf("Publish 9 MiB: %v", err)
			}
			msg, err := sub.NextMsg(wait)
			if err != nil {
				t.Fatalf("NextMsg: %v", err)
			}
			if !bytes.Equal(msg.Data, payload) {
				t.Fatalf("received %d bytes, not the %d sent", len(msg.Data), len(payload))
			}
		})
	}
}

func TestPayloadAboveMaxIsRejected(t *testing.T) {
	b := startBus(t, bus.Options{MaxPayload: bus.MinMaxPayload})
	nc := connect(t, b, "pub")
	if got := nc.MaxPayload(); got != bus.MinMaxPayload {
		t.Fatalf("client sees MaxPayload %d, want %d", got, bus.MinMaxPayload)
	}
	err := nc.Publish("test.too.large", make([]byte, bus.MinMaxPayload+1))
	if !errors.Is(err, nats.ErrMaxPayload) {
		t.Fatalf("Publish above max: err = %v, want nats.ErrMaxPayload", err)
	}
}

func TestPortInUseIsAnError(t *testing.T) {
	first := startBus(t, bus.Options{})
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()

	for _, tc := range []struct {
		name string
		port int
	}{
		{"held by another bus", portOf(t, first.ClientURL())},
		{"held by a plain listener", plain.Addr().(*net.TCPAddr).Port},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			b, err := bus.Start(bus.Options{Port: tc.port})
			if err == nil {
				b.Close()
				t.Fatalf("Start on taken port %d succeeded", tc.port)
			}
			t.Logf("error after %s: %v", time.Since(start), err)
			if !errors.Is(err, bus.ErrServerStart) {
				t.Errorf("err = %v, want one wrapping bus.ErrServerStart", err)
			}
			if hp := "127.0.0.1:" + strconv.Itoa(tc.port); !strings.Contains(err.Error(), hp) {
				t.Errorf("err = %q, want it to name %s", err, hp)
			}
		})
	}

	// The first bus is unharmed.
	echo(t, connect(t, first, "responder"), "test.still.up")
	request(t, dial(t, first), "test.still.up", "ok")
}

func TestNoListen(t *testing.T) {
	b := startBus(t, bus.Options{NoListen: true})
	if got := b.ClientURL(); got != "" {
		t.Fatalf("ClientURL() = %q, want \"\" with NoListen", got)
	}
	if !b.Embedded() {
		t.Fatal("Embedded() = false")
	}
	if b.Server().Addr() != nil {
		t.Fatalf("server listens on %v despite NoListen", b.Server().Addr())
	}
	echo(t, connect(t, b, "responder"), "test.nolisten")
	request(t, connect(t, b, "requester"), "test.nolisten", "in-process only")
}

func TestCloseClosesConnectionsAndIsIdempotent(t *testing.T) {
	b, err := bus.Start(bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	userClosed := make(chan struct{})
	a, err := b.Connect("a", nats.ClosedHandler(func(*nats.Conn) { close(userClosed) }))
	if err != nil {
		t.Fatal(err)
	}
	sub := subscribeSync(t, a, "test.close")
	early, err := b.Connect("early")
	if err != nil {
		t.Fatal(err)
	}
	early.Close() // closing one yourself before Close is fine
	tcp := dial(t, b)

	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !a.IsClosed() {
		t.Error("connection from Connect still open after Close")
	}
	if sub.IsValid() {
		t.Error("subscription still valid after Close")
	}
	select {
	case <-userClosed:
	case <-time.After(wait):
		t.Error("the caller's ClosedHandler did not run")
	}
	if err := tcp.FlushTimeout(time.Second); err == nil {
		t.Error("TCP client can still flush to a closed bus")
	}

	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := b.Connect("late"); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("Connect after Close: err = %v, want bus.ErrClosed", err)
	}
}

func TestCloseGivesUpOnAStuckDrain(t *testing.T) {
	b, err := bus.Start(bus.Options{DrainTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	nc, err := b.Connect("stuck")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe("test.stuck", func(*nats.Msg) {
		close(entered)
		<-release
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("test.stuck", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(wait):
		t.Fatal("handler never ran")
	}

	err = b.Close()
	if !errors.Is(err, bus.ErrDrainTimeout) {
		t.Fatalf("Close: err = %v, want bus.ErrDrainTimeout", err)
	}
	if !nc.IsClosed() {
		t.Fatal("stuck connection not closed")
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts bus.Options
		want string
	}{
		{"payload below 8 MiB", bus.Options{MaxPayload: 1 << 20}, "MaxPayload"},
		{"negative payload", bus.Options{MaxPayload: -1}, "MaxPayload"},
		{"URL with NoListen", bus.Options{URL: "nats://127.0.0.1:1", NoListen: true}, "NoListen"},
		{"port too high", bus.Options{Port: 70000}, "Port"},
		{"negative port", bus.Options{Port: -2}, "Port"},
		{"name with space", bus.Options{Name: "frame bus"}, "Name"},
		{"negative ready timeout", bus.Options{ReadyTimeout: -time.Second}, "ReadyTimeout"},
		{"negative drain timeout", bus.Options{DrainTimeout: -time.Second}, "DrainTimeout"},
		// No TLS: loopback only unless AllowRemote.
		{"every interface", bus.Options{Host: "0.0.0.0"}, "no TLS"},
		{"every IPv6 interface", bus.Options{Host: "::"}, "no TLS"},
		{"websocket on every interface", bus.Options{WebSocket: "0.0.0.0:0"}, "WebSocket"},
		{"websocket without a port", bus.Options{WebSocket: "127.0.0.1"}, "WebSocket"},
		{"users of an external server", bus.Options{URL: "nats://127.0.0.1:1", Users: []bus.User{{Name: "a", PasswordHash: "$2a$04$x", Role: "agent"}}}, "embedded server only"},
		{"a plaintext password", bus.Options{Users: []bus.User{{Name: "a", PasswordHash: "secret", Role: "agent"}}}, "bcrypt"},
		{"an unknown role", bus.Options{Users: []bus.User{{Name: "a", PasswordHash: testHash, Role: "root"}}}, "role"},
		{"a user name with a dot", bus.Options{Users: []bus.User{{Name: "a.b", PasswordHash: testHash, Role: "agent"}}}, "user name"},
		{"a user twice", bus.Options{Users: []bus.User{{Name: "a", PasswordHash: testHash, Role: "agent"}, {Name: "a", PasswordHash: testHash, Role: "observer"}}}, "twice"},
		{"a LAN address", bus.Options{Host: "192.168.1.10"}, "not a loopback address"},
		{"an origin with a path", bus.Options{WebSocket: "127.0.0.1:0", WebSocketOrigins: []string{"http://127.0.0.1:8080/page"}}, "origin"},
		{"an origin without a scheme", bus.Options{WebSocket: "127.0.0.1:0", WebSocketOrigins: []string{"127.0.0.1:8080"}}, "origin"},
		{"a wildcard origin", bus.Options{WebSocket: "127.0.0.1:0", WebSocketOrigins: []string{"*"}}, "origin"},
		{"a short cluster secret", bus.Options{Cluster: &bus.ClusterOptions{Listen: "127.0.0.1:0", Secret: "short"}}, "Secret"},
		{"a cluster on every interface", bus.Options{Cluster: &bus.ClusterOptions{Listen: "0.0.0.0:0", Secret: clusterSecret}}, "not a loopback address"},
		{"a route with a user", bus.Options{Cluster: &bus.ClusterOptions{Listen: "127.0.0.1:0", Secret: clusterSecret, Routes: []string{"nats-route://u:p@127.0.0.1:1"}}}, "Routes"},
		{"a route without a port", bus.Options{Cluster: &bus.ClusterOptions{Listen: "127.0.0.1:0", Secret: clusterSecret, Routes: []string{"nats-route://127.0.0.1"}}}, "Routes"},
		{"a cluster of an external server", bus.Options{URL: "nats://127.0.0.1:1", Cluster: &bus.ClusterOptions{Listen: "127.0.0.1:0", Secret: clusterSecret}}, "embedded server only"},
		{"origins without a listener", bus.Options{WebSocketOrigins: []string{"http://127.0.0.1:8080"}}, "without a WebSocket listener"},
		{"a name", bus.Options{Host: "example.com"}, "not a loopback address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := bus.Start(tc.opts)
			if err == nil {
				b.Close()
				t.Fatal("Start succeeded")
			}
			if !errors.Is(err, bus.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want bus.ErrInvalidOptions naming %s", err, tc.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the server's logging goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func TestServerLogsGoThroughLogger(t *testing.T) {
	var out syncBuffer
	b := startBus(t, bus.Options{Logger: zerolog.New(&out).Level(zerolog.InfoLevel)})
	b.Close()
	log := out.String()
	for _, want := range []string{
		`"component":"nats-server"`,
		`Server is ready`,
		`"message":"embedded NATS server ready"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	// Our default 16 MiB payload is deliberate; the server's warning about
	// payloads over 8 MiB must not show as a warning on every start.
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "Maximum payloads") && strings.Contains(line, `"level":"warn"`) {
			t.Errorf("max payload notice logged as a warning: %s", line)
		}
	}
}

func TestExternal(t *testing.T) {
	embedded := startBus(t, bus.Options{})
	// Another process's bus: it logs in as a user of the embedded one.
	admin := bustest.AddUser(t, embedded, protocol.RoleAdmin)
	extURL := strings.Replace(embedded.ClientURL(), "nats://", "nats://"+admin.User+":"+admin.Password+"@", 1)
	ext := startBus(t, bus.Options{URL: extURL})
	if ext.Embedded() {
		t.Fatal("Embedded() = true with URL set")
	}
	if ext.ClientURL() != extURL {
		t.Fatalf("ClientURL() = %q, want %q", ext.ClientURL(), extURL)
	}
	if ext.MaxPayload() != embedded.MaxPayload() {
		t.Fatalf("MaxPayload() = %d, want the server's %d", ext.MaxPayload(), embedded.MaxPayload())
	}

	echo(t, connect(t, embedded, "inproc-responder"), "test.across.to.embedded")
	request(t, connect(t, ext, "ext-requester"), "test.across.to.embedded", "hi")

	echo(t, connect(t, ext, "ext-responder"), "test.across.to.external")
	request(t, connect(t, embedded, "inproc-requester"), "test.across.to.external", "hello")

	// Closing the external bus closes its connections, not the server.
	extConn := connect(t, ext, "ext-extra")
	if err := ext.Close(); err != nil {
		t.Fatalf("Close external: %v", err)
	}
	if !extConn.IsClosed() {
		t.Fatal("external bus connection open after Close")
	}
	echo(t, connect(t, embedded, "after"), "test.after")
	request(t, dial(t, embedded), "test.after", "still up")
}

// freeURL returns a nats:// URL on which nothing listens.
func freeURL(t *testing.T, userinfo string) string {
	t.Helper()
	return "nats://" + userinfo + bustest.FreeAddr(t)
}

func TestExternalUnreachable(t *testing.T) {
	u := freeURL(t, "")
	_, err := bus.Start(bus.Options{URL: u, ReadyTimeout: 2 * time.Second})
	if !errors.Is(err, bus.ErrConnect) {
		t.Fatalf("err = %v, want bus.ErrConnect", err)
	}
	if want := "cannot connect to NATS at " + u + ":"; !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %q, want it to contain %q", err, want)
	}
}

func TestExternalErrorHidesCredentials(t *testing.T) {
	_, err := bus.Start(bus.Options{URL: freeURL(t, "alice:s3cret@"), ReadyTimeout: 2 * time.Second})
	if err == nil {
		t.Fatal("Start succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "alice") {
		t.Fatalf("error leaks credentials: %v", err)
	}
}

// TestExternalSmallMaxPayload runs a stock nats-server with its 1 MiB default,
// the common case for an existing deployment.
func TestExternalSmallMaxPayload(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(wait) {
		t.Fatal("stock server not ready")
	}

	b := startBus(t, bus.Options{URL: srv.ClientURL()})
	if got := b.MaxPayload(); got != 1<<20 {
		t.Fatalf("MaxPayload() = %d, want the server's 1 MiB", got)
	}

	_, err = bus.Start(bus.Options{URL: srv.ClientURL(), MaxPayload: bus.DefaultMaxPayload})
	if !errors.Is(err, bus.ErrConnect) || !strings.Contains(err.Error(), "max_payload") {
		t.Fatalf("err = %v, want bus.ErrConnect explaining max_payload", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.2": true, "::1": true, "[::1]": true, "::ffff:127.0.0.1": true,
		"localhost": true, "LocalHost.": true,
		"": false, "0.0.0.0": false, "::": false, "192.168.1.10": false, "10.0.0.1": false,
		"fe80::1": false, "example.com": false, "localhost.example.com": false, "127.0.0.1.nip.io": false,
	} {
		if got := bus.IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v", host, got)
		}
	}
}

// JetStream runs in memory with no store dir given (the server's
// temporary one is removed by Close), and on disk in the one given, where
// a stream survives a restart.
func TestJetStream(t *testing.T) {
	b := startBus(t, bus.Options{NoListen: true, JetStream: &bus.JetStreamOptions{}})
	if !b.JetStream() {
		t.Fatal("JetStream not enabled")
	}
	tmp := b.Server().StoreDir()
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("store dir: %v", err)
	}
	nc := connect(t, b, "js")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MEM", Subjects: []string{"mem.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatalf("memory stream: %v", err)
	}
	b.Close()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the temporary store dir %s is still there after Close: %v", tmp, err)
	}

	dir := t.TempDir()
	for run := range 2 {
		b := startBus(t, bus.Options{NoListen: true, JetStream: &bus.JetStreamOptions{StoreDir: dir}})
		js, err := jetstream.New(connect(t, b, "js"))
		if err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DISK", Subjects: []string{"disk.>"}, Storage: jetstream.FileStorage}); err != nil {
				t.Fatalf("file stream: %v", err)
			}
			if _, err := js.Publish(ctx, "disk.a", []byte("kept")); err != nil {
				t.Fatal(err)
			}
		} else {
			s, err := js.Stream(ctx, "DISK")
			if err != nil {
				t.Fatalf("the file stream after a restart: %v", err)
			}
			if m, err := s.GetLastMsgForSubject(ctx, "disk.a"); err != nil || string(m.Data) != "kept" {
				t.Fatalf("the message after a restart: %v %v", m, err)
			}
		}
		b.Close()
	}
}
