package cdpdriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rs/zerolog"

	"github.com/framebus/framebus/internal/testscale"
)

// The framer finds each NUL-terminated message whole however the stream
// is cut: several in one read, one split over reads, one a byte a read.
func TestPipeFramer(t *testing.T) {
	messages := []string{
		`{"id":1,"result":{}}`,
		`{"method":"Page.loadEventFired","params":{"timestamp":1}}`,
		`{"id":2,"result":{"value":"` + strings.Repeat("long ", 40<<10) + `"}}`, // longer than the buffer
		`{}`,
	}
	stream := strings.Join(messages, "\x00") + "\x00"
	for name, r := range map[string]io.Reader{
		"whole":        strings.NewReader(stream),
		"byte a time":  iotest.OneByteReader(strings.NewReader(stream)),
		"half":         iotest.HalfReader(strings.NewReader(stream)),
		"data and EOF": iotest.DataErrReader(strings.NewReader(stream)),
	} {
		f := newPipeFramer(r)
		f.buf = make([]byte, 16) // grows as messages need
		var kept [][]byte
		for i, want := range messages {
			got, err := f.next()
			if err != nil {
				t.Fatalf("%s: message %d: %v", name, i, err)
			}
			if string(got) != want {
				t.Fatalf("%s: message %d:\n got %.80s\nwant %.80s", name, i, got, want)
			}
			kept = append(kept, got)
		}
		if _, err := f.next(); err != io.EOF {
			t.Errorf("%s: after the last message: %v; want io.EOF", name, err)
		}
		for i, got := range kept { // each message is its own memory
			if string(got) != messages[i] {
				t.Errorf("%s: message %d changed after later reads", name, i)
			}
		}
	}
	f := newPipeFramer(strings.NewReader(`{"id":1,"result":{}}` + "\x00" + `{"id":2,"res`))
	if _, err := f.next(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.next(); err != io.ErrUnexpectedEOF {
		t.Errorf("a stream cut inside a message: %v; want io.ErrUnexpectedEOF", err)
	}
}

// The sessionId Chromium appends is cut in place; one anywhere else is
// found by decoding; a sessionId inside params is not the message's.
func TestCutSessionID(t *testing.T) {
	tests := []struct{ msg, sid, body string }{
		{`{"id":3,"result":{"a":1},"sessionId":"S1"}`, "S1", `{"id":3,"result":{"a":1}}`},
		{`{"method":"Page.frameNavigated","params":{"frame":{}},"sessionId":"AB12"}`, "AB12", `{"method":"Page.frameNavigated","params":{"frame":{}}}`},
		{`{"sessionId":"S2","id":4,"result":{}}`, "S2", `{"sessionId":"S2","id":4,"result":{}}`},
		{`{"id":5,"result":{}}`, "", `{"id":5,"result":{}}`},
		{`{"method":"Target.attachedToTarget","params":{"sessionId":"S3","targetInfo":{}}}`, "", `{"method":"Target.attachedToTarget","params":{"sessionId":"S3","targetInfo":{}}}`},
		{`{"method":"Target.detachedFromTarget","params":{"targetId":"T","sessionId":"S4"}}`, "", `{"method":"Target.detachedFromTarget","params":{"targetId":"T","sessionId":"S4"}}`},
		{`{"id":6,"result":{"value":"x\",\"sessionId\":\"S5"}}`, "", `{"id":6,"result":{"value":"x\",\"sessionId\":\"S5"}}`},
		{`{"id":7,"result":{"value":"a"},"other":"b\",\"sessionId\":\"S6"}`, "", `{"id":7,"result":{"value":"a"},"other":"b\",\"sessionId\":\"S6"}`},
	}
	for _, tt := range tests {
		sid, body, err := cutSessionID([]byte(tt.msg))
		if err != nil || sid != tt.sid || string(body) != tt.body {
			t.Errorf("cutSessionID(%s) = %q, %s, %v; want %q, %s", tt.msg, sid, body, err, tt.sid, tt.body)
		}
	}
	if _, _, err := cutSessionID([]byte(`{"sessionId":`)); err == nil {
		t.Error("a broken message with a sessionId: no error")
	}
}

// pipeTestBrowser is the browser's end of a transport's pipe, played by
// the test: it reads what the transport sends and writes what the browser
// would.
type pipeTestBrowser struct {
	t      *testing.T
	inFile *os.File
	in     *pipeFramer // what the transport wrote
	out    *os.File    // what the transport reads
}

// newPipeTestTransport makes a transport whose browser is the test;
// limit, when given, sets the transport's limits before it starts.
func newPipeTestTransport(t *testing.T, limit ...func(*pipeTransport)) (*pipeTransport, *pipeTestBrowser) {
	toBrowserR, toBrowserW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromBrowserR, fromBrowserW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	tr := makePipeTransport(toBrowserW, fromBrowserR, zerolog.Nop())
	for _, f := range limit {
		f(tr)
	}
	tr.start()
	t.Cleanup(func() {
		fromBrowserW.Close()
		tr.Close()
		toBrowserR.Close()
	})
	return tr, &pipeTestBrowser{t: t, inFile: toBrowserR, in: newPipeFramer(toBrowserR), out: fromBrowserW}
}

// command reads the next message the transport sent.
func (b *pipeTestBrowser) command() map[string]any {
	b.t.Helper()
	if err := b.inFile.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		b.t.Fatal(err)
	}
	msg, err := b.in.next()
	if err != nil {
		b.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(msg, &m); err != nil {
		b.t.Fatalf("the transport sent %q: %v", msg, err)
	}
	return m
}

// send writes messages, all in one write.
func (b *pipeTestBrowser) send(msgs ...string) {
	b.t.Helper()
	if _, err := b.out.Write([]byte(strings.Join(msgs, "\x00") + "\x00")); err != nil {
		b.t.Fatal(err)
	}
}

// pipeTestNext reads a session's next message, with a deadline.
func pipeTestNext(t *testing.T, c *pipeConn) (string, error) {
	t.Helper()
	type got struct {
		msg []byte
		err error
	}
	ch := make(chan got, 1)
	go func() {
		msg, err := c.next()
		ch <- got{msg, err}
	}()
	select {
	case g := <-ch:
		return string(g.msg), g.err
	case <-time.After(10 * time.Second):
		t.Fatal("no message and no error after 10s: the reader hangs")
		return "", nil
	}
}

type pipeTestAttached struct {
	c   *pipeConn
	err error
}

// pipeTestAttachLater starts an attach of a page session; its outcome
// comes on the channel.
func pipeTestAttachLater(ctx context.Context, tr *pipeTransport, target string) <-chan pipeTestAttached {
	done := make(chan pipeTestAttached, 1)
	go func() {
		c, err := tr.attachPage(ctx, target)
		done <- pipeTestAttached{c, err}
	}()
	return done
}

// pipeTestAttach attaches a page session, answered by the browser with
// sid and, in the same write, first messages of that session.
func pipeTestAttach(t *testing.T, tr *pipeTransport, b *pipeTestBrowser, target, sid string, first ...string) *pipeConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	done := pipeTestAttachLater(ctx, tr, target)
	cmd := b.command()
	params, _ := cmd["params"].(map[string]any)
	if cmd["method"] != "Target.attachToTarget" || params["targetId"] != target || params["flatten"] != true || cmd["sessionId"] != nil {
		t.Fatalf("attach sent %v; want Target.attachToTarget of %s, flatten, on no session", cmd, target)
	}
	id, _ := json.Marshal(cmd["id"])
	b.send(append([]string{`{"id":` + string(id) + `,"result":{"sessionId":"` + sid + `"}}`}, first...)...)
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	return a.c
}

// The transport routes by session: an attached session's first messages,
// which follow the attach reply in the same read, reach it; a session's
// writes carry its id; a message for an unknown session reaches nobody;
// a session the browser detaches ends (its reader gets an error, not a
// hang); one we close is detached; the pipe's end ends every session.
func TestPipeTransportRoutesBySession(t *testing.T) {
	tr, b := newPipeTestTransport(t)
	one := pipeTestAttach(t, tr, b, "T1", "S1", `{"method":"Page.lifecycleEvent","params":{"name":"init"},"sessionId":"S1"}`)
	two := pipeTestAttach(t, tr, b, "T2", "S2")
	if msg, err := pipeTestNext(t, one); err != nil || msg != `{"method":"Page.lifecycleEvent","params":{"name":"init"}}` {
		t.Fatalf("S1's first message: %s, %v", msg, err)
	}

	if _, err := two.Write([]byte(`{"id":1,"method":"Runtime.evaluate","params":{"expression":"1"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if cmd := b.command(); cmd["sessionId"] != "S2" || cmd["method"] != "Runtime.evaluate" || cmd["id"] != 1.0 {
		t.Fatalf("S2's command went as %v", cmd)
	}

	b.send(`{"id":1,"result":{},"sessionId":"NOBODY"}`,
		`{"id":1,"result":{"two":true},"sessionId":"S2"}`,
		`{"id":9,"result":{"one":true},"sessionId":"S1"}`)
	if msg, err := pipeTestNext(t, two); err != nil || msg != `{"id":1,"result":{"two":true}}` {
		t.Fatalf("S2 read %s, %v", msg, err)
	}
	if msg, err := pipeTestNext(t, one); err != nil || msg != `{"id":9,"result":{"one":true}}` {
		t.Fatalf("S1 read %s, %v; the unknown session's message must reach nobody", msg, err)
	}

	// The browser detaches S1: what was queued is read, then the end.
	b.send(`{"method":"Page.loadEventFired","params":{},"sessionId":"S1"}`,
		`{"method":"Target.detachedFromTarget","params":{"sessionId":"S1","targetId":"T1"}}`)
	if msg, err := pipeTestNext(t, one); err != nil || !strings.Contains(msg, "loadEventFired") {
		t.Fatalf("S1's last message: %s, %v", msg, err)
	}
	if _, err := pipeTestNext(t, one); !errors.Is(err, errSessionDetached) {
		t.Fatalf("S1 after its detach: %v; want errSessionDetached", err)
	}
	if _, err := one.Write([]byte(`{"id":2,"method":"Page.enable"}`)); !errors.Is(err, errSessionDetached) {
		t.Fatalf("a write to a detached session: %v", err)
	}

	// We close S3: the browser is asked to detach it.
	three := pipeTestAttach(t, tr, b, "T3", "S3")
	three.Close()
	cmd := b.command()
	if params, _ := cmd["params"].(map[string]any); cmd["method"] != "Target.detachFromTarget" || params["sessionId"] != "S3" || cmd["sessionId"] != nil {
		t.Fatalf("closing S3 sent %v; want Target.detachFromTarget of S3", cmd)
	}
	if _, err := pipeTestNext(t, three); !errors.Is(err, errSessionDetached) {
		t.Fatalf("S3 after Close: %v", err)
	}

	// The browser goes: S2's reader and writer fail.
	b.out.Close()
	if _, err := pipeTestNext(t, two); err == nil || !strings.Contains(err.Error(), "closed its pipe") {
		t.Fatalf("S2 after the pipe closed: %v", err)
	}
	if _, err := two.Write([]byte(`{"id":2,"method":"Page.enable"}`)); err == nil {
		t.Fatal("a write after the pipe closed succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	if _, err := tr.attachPage(ctx, "T4"); err == nil || ctx.Err() != nil {
		t.Fatalf("attach after the pipe closed: %v (it must fail at once)", err)
	}
}

// An attach whose caller gives up before the reply is detached again
// when the reply comes: no session is left that nobody reads.
func TestPipeTransportAbandonedAttach(t *testing.T) {
	tr, b := newPipeTestTransport(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := tr.attachPage(ctx, "T1")
		done <- err
	}()
	cmd := b.command()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("attach with its context cancelled: %v", err)
	}
	id, _ := json.Marshal(cmd["id"])
	b.send(`{"id":` + string(id) + `,"result":{"sessionId":"S1"}}`)
	cmd = b.command()
	if params, _ := cmd["params"].(map[string]any); cmd["method"] != "Target.detachFromTarget" || params["sessionId"] != "S1" {
		t.Fatalf("after an abandoned attach's reply the transport sent %v; want Target.detachFromTarget of S1", cmd)
	}
	tr.mu.Lock()
	left, calls := len(tr.sessions), len(tr.calls)
	tr.mu.Unlock()
	if left != 0 || calls != 0 {
		t.Fatalf("%d sessions registered, %d calls waiting after an abandoned attach", left, calls)
	}
}

// pipeTestCallID is the id of a transport's command, as the browser read it.
func pipeTestCallID(cmd map[string]any) string {
	id, _ := json.Marshal(cmd["id"])
	return string(id)
}

// Replies on no session to ids tabs use (a command to a session the
// browser already dropped) do not answer the transport's own command
// waiting meanwhile: the attach gets its own reply, a working session.
// (Before the transport's ids had a range of their own, its first attach
// took the reply to id 1 and failed, and its session was never detached.)
func TestPipeTransportTabRepliesAreNotItsOwn(t *testing.T) {
	tr, b := newPipeTestTransport(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	done := pipeTestAttachLater(ctx, tr, "T1")
	cmd := b.command()
	var dropped []string
	for _, id := range []uint64{1, 2, 3, 4, postedIDs + 1, postedIDs + 2} {
		dropped = append(dropped, fmt.Sprintf(`{"id":%d,"error":{"code":-32001,"message":"Session with given id not found."}}`, id))
	}
	b.send(append(dropped, `{"id":`+pipeTestCallID(cmd)+`,"result":{"sessionId":"S1"}}`)...)
	a := <-done
	if a.err != nil {
		t.Fatalf("attach, while replies to dropped sessions' commands came: %v", a.err)
	}
	if a.c.sid != "S1" {
		t.Fatalf("attach gave session %q; want S1", a.c.sid)
	}
}

// An attach reply no call waits for (its caller gave up and was
// forgotten) is detached: no session stays attached that nobody reads.
func TestPipeTransportUnclaimedAttachDetached(t *testing.T) {
	tr, b := newPipeTestTransport(t)
	b.send(fmt.Sprintf(`{"id":%d,"result":{"sessionId":"S9"}}`, pipeCallIDs+77))
	cmd := b.command()
	if params, _ := cmd["params"].(map[string]any); cmd["method"] != "Target.detachFromTarget" || params["sessionId"] != "S9" {
		t.Fatalf("after an attach reply nobody waited for, the transport sent %v; want Target.detachFromTarget of S9", cmd)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.sessions) != 0 {
		t.Fatalf("%d sessions registered", len(tr.sessions))
	}
}

// A browser that reads nothing of its pipe holds up no caller: writes
// and closes return at once, and once one message has waited writeStall
// the pipe is given up: waiting commands and sessions end with an error
// that says why.
func TestPipeTransportStalledBrowser(t *testing.T) {
	tr, b := newPipeTestTransport(t, func(tr *pipeTransport) { tr.writeStall = 200 * time.Millisecond })
	one := pipeTestAttach(t, tr, b, "T1", "S1")
	two := pipeTestAttach(t, tr, b, "T2", "S2")
	// The test's browser reads no more: a message larger than the
	// pipe's buffer stalls the writer.
	big := `{"id":1,"method":"Runtime.evaluate","params":{"expression":"'` + strings.Repeat("a", 1<<20) + `'"}}`
	returned := make(chan error, 2)
	go func() {
		_, err := one.Write([]byte(big))
		returned <- err
	}()
	go func() { returned <- two.Close() }()
	for range 2 {
		select {
		case err := <-returned:
			if err != nil {
				t.Fatalf("a write or close with the browser stalled: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a write or close waits for a browser that reads nothing")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	if _, err := tr.attachPage(ctx, "T3"); err == nil || !strings.Contains(err.Error(), "stopped or hung") {
		t.Fatalf("attach to a stalled browser: %v; want the pipe given up as stopped or hung", err)
	}
	if _, err := pipeTestNext(t, one); err == nil || !strings.Contains(err.Error(), "stopped or hung") {
		t.Fatalf("a session's reader after the pipe was given up: %v", err)
	}
}

// The framer caps one message: a longer one is read to its end and
// skipped, saying whose reply it was, and the stream goes on; after a
// large message its buffer is small again.
func TestPipeFramerLongMessage(t *testing.T) {
	long := strings.Repeat("x", 5000)
	messages := []string{
		`{"id":5,"result":{"value":"` + long + `"},"sessionId":"S1"}`,
		`{"id":1,"result":{}}`,
		`{"method":"Page.x","params":{"v":"` + long + `"},"sessionId":"S1"}`,
		`{"id":` + fmt.Sprint(pipeCallIDs) + `,"result":{"v":"` + long + `"}}`,
		`{"id":2,"result":{}}`,
	}
	stream := strings.Join(messages, "\x00") + "\x00"
	type want struct {
		id   uint64
		sid  string
		size int
	}
	wants := []any{want{5, "S1", len(messages[0])}, messages[1], want{0, "", len(messages[2])}, want{pipeCallIDs, "", len(messages[3])}, messages[4]}
	for name, r := range map[string]io.Reader{
		"whole": strings.NewReader(stream),
		"half":  iotest.HalfReader(strings.NewReader(stream)),
		"bytes": iotest.OneByteReader(strings.NewReader(stream)),
	} {
		f := newPipeFramer(r)
		f.buf, f.max = make([]byte, 16), 1000
		for i, w := range wants {
			msg, err := f.next()
			var tooLong *pipeMessageTooLong
			switch w := w.(type) {
			case string:
				if err != nil || string(msg) != w {
					t.Fatalf("%s: message %d: %.80s, %v; want %s", name, i, msg, err, w)
				}
			case want:
				if !errors.As(err, &tooLong) {
					t.Fatalf("%s: message %d: %.80s, %v; want it skipped as too long", name, i, msg, err)
				}
				if id, sid := tooLong.replyTo(); id != w.id || sid != w.sid || tooLong.size != w.size {
					t.Fatalf("%s: message %d skipped as a reply to %d of %q, %d bytes; want %d of %q, %d bytes", name, i, id, sid, tooLong.size, w.id, w.sid, w.size)
				}
			}
		}
		if _, err := f.next(); err != io.EOF {
			t.Errorf("%s: after the last message: %v", name, err)
		}
	}

	big := strings.Repeat("y", 1<<20)
	f := newPipeFramer(strings.NewReader(`{"v":"` + big + `"}` + "\x00{}\x00"))
	if msg, err := f.next(); err != nil || len(msg) != len(big)+8 {
		t.Fatalf("a 1 MiB message: %d bytes, %v", len(msg), err)
	}
	if len(f.buf) > pipeFramerBuf {
		t.Errorf("the framer keeps a buffer of %d bytes after a 1 MiB message; want %d", len(f.buf), pipeFramerBuf)
	}
	if msg, err := f.next(); err != nil || string(msg) != "{}" {
		t.Fatalf("the message after the large one: %q, %v", msg, err)
	}
}

// A reply too long to read fails its command (a session's, with an error
// reply; the transport's own, with an error) and the pipe goes on.
func TestPipeTransportLongReply(t *testing.T) {
	tr, b := newPipeTestTransport(t, func(tr *pipeTransport) { tr.maxMessage = 1000 })
	one := pipeTestAttach(t, tr, b, "T1", "S1")
	long := strings.Repeat("x", 5000)
	b.send(`{"id":7,"result":{"value":"`+long+`"},"sessionId":"S1"}`, `{"id":8,"result":{},"sessionId":"S1"}`)
	msg, err := pipeTestNext(t, one)
	if err != nil || !strings.HasPrefix(msg, `{"id":7,"error":`) || !strings.Contains(msg, "framebus reads at most 1000") {
		t.Fatalf("S1's too long reply came as %.200s, %v; want an error reply to id 7", msg, err)
	}
	if msg, err := pipeTestNext(t, one); err != nil || msg != `{"id":8,"result":{}}` {
		t.Fatalf("the reply after it: %s, %v", msg, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	done := pipeTestAttachLater(ctx, tr, "T2")
	cmd := b.command()
	b.send(`{"id":` + pipeTestCallID(cmd) + `,"result":{"sessionId":"S2","x":"` + long + `"}}`)
	if err := (<-done).err; err == nil || !strings.Contains(err.Error(), "framebus reads at most 1000") {
		t.Fatalf("attach answered too long: %v", err)
	}
}

// A session whose reader falls sessionBacklog bytes behind ends, with an
// error saying so, and is detached; the others go on.
func TestPipeTransportSessionBacklog(t *testing.T) {
	tr, b := newPipeTestTransport(t, func(tr *pipeTransport) { tr.sessionBacklog = 1000 })
	one := pipeTestAttach(t, tr, b, "T1", "S1")
	two := pipeTestAttach(t, tr, b, "T2", "S2")
	event := `{"method":"Page.x","params":{"v":"` + strings.Repeat("x", 300) + `"},"sessionId":"S1"}`
	b.send(event, event, event, event, `{"id":1,"result":{},"sessionId":"S2"}`)
	cmd := b.command()
	if params, _ := cmd["params"].(map[string]any); cmd["method"] != "Target.detachFromTarget" || params["sessionId"] != "S1" {
		t.Fatalf("a session fallen behind: the transport sent %v; want Target.detachFromTarget of S1", cmd)
	}
	if _, err := pipeTestNext(t, one); err == nil || !strings.Contains(err.Error(), "fell") {
		t.Fatalf("S1's reader: %v; want the session ended as fallen behind", err)
	}
	if msg, err := pipeTestNext(t, two); err != nil || msg != `{"id":1,"result":{}}` {
		t.Fatalf("S2 read %s, %v", msg, err)
	}
}

// A session's own bound: its replies longer than that fail their command
// with the error a *ResultTooLargeError is made of, its long events are
// dropped, and another session with a larger bound still gets messages
// of that size. The framer reads no message longer than the largest
// bound (maxMessage while no session set one).
func TestPipeTransportSessionLimit(t *testing.T) {
	tr, b := newPipeTestTransport(t)
	small := pipeTestAttach(t, tr, b, "T1", "S1")
	large := pipeTestAttach(t, tr, b, "T2", "S2")
	if got := tr.readLimit(); got != maxPipeMessage {
		t.Fatalf("the framer reads %d bytes with no session bound; want %d", got, maxPipeMessage)
	}
	small.setMessageLimit(1000)
	large.setMessageLimit(3000)
	if got := tr.readLimit(); got != 3000 {
		t.Fatalf("the framer reads %d bytes; want the largest session bound, 3000", got)
	}
	value := strings.Repeat("x", 2000)
	reply := `{"id":7,"result":{"value":"` + value + `"},"sessionId":"`
	b.send(reply+`S1"}`, `{"method":"Runtime.x","params":{"v":"`+value+`"},"sessionId":"S1"}`, `{"id":8,"result":{},"sessionId":"S1"}`, reply+`S2"}`)
	msg, err := pipeTestNext(t, small)
	if err != nil || !strings.HasPrefix(msg, `{"id":7,"error":`) {
		t.Fatalf("S1's reply over its bound came as %.200s, %v; want an error reply to id 7", msg, err)
	}
	var m struct{ Error struct{ Message string } }
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		t.Fatal(err)
	}
	tooLarge, ok := replyTooLong(errors.New(m.Error.Message), "the eval value")
	if !ok || tooLarge.Size != len(reply+`S1"}`)-len(`,"sessionId":"S1"`) || tooLarge.Limit != 1000 {
		t.Fatalf("the error %q reads as %+v, %v; want the reply's size and the bound 1000", m.Error.Message, tooLarge, ok)
	}
	if msg, err := pipeTestNext(t, small); err != nil || msg != `{"id":8,"result":{}}` {
		t.Fatalf("after the long reply and event, S1 got %.200s, %v; want the reply to id 8", msg, err)
	}
	if msg, err := pipeTestNext(t, large); err != nil || !strings.Contains(msg, value) {
		t.Fatalf("S2, bound at 3000, got %.200s, %v; want its 2 KB reply", msg, err)
	}

	// Over every bound: skipped as it streams.
	b.send(`{"id":9,"result":{"value":"`+strings.Repeat(value, 2)+`"},"sessionId":"S2"}`, `{"id":10,"result":{},"sessionId":"S2"}`)
	if msg, err := pipeTestNext(t, large); err != nil || !strings.HasPrefix(msg, `{"id":9,"error":`) || !strings.Contains(msg, "at most 3000") {
		t.Fatalf("S2's reply over every bound came as %.200s, %v; want an error reply to id 9", msg, err)
	}
	if msg, err := pipeTestNext(t, large); err != nil || msg != `{"id":10,"result":{}}` {
		t.Fatalf("the reply after it: %s, %v", msg, err)
	}
}
