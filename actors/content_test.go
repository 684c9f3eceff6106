package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// A frame whose content is larger than the bus carries in one message
// arrives whole: with a reference whose chunks reassemble to the content,
// never dropped or cut.
func TestContentLargerThanAMessage(t *testing.T) {
	// A stock NATS server that carries at most 64 KiB per message, as an
	// external server may be configured.
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true, MaxPayload: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tab := openTab(t, func(o *TabOptions) { o.Conn = nc })
	frames := watchFrames(t, nc, protocol.DefaultSubjects.TabFrames(tab.ID()))
	msg, err := nc.Request(protocol.DefaultSubjects.TabPlan(tab.ID()), []byte(`{"action":{"type":"navigate","url":"`+site("/big.html")+`","wait":true}}`), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, err := protocol.DecodePlanResult(msg.Data)
	if err != nil || !r.OK {
		t.Fatalf("navigate: %+v %v", r, err)
	}
	f := frames.until(r.Sequence)
	if f.FullPage != nil || f.FullPageRef == nil || f.FullPageRef.Chunks < 2 || !strings.Contains(f.Note, "fullPageRef") {
		t.Fatalf("big frame: %+v", f)
	}
	content, err := FetchContent(nc, f, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(*content) != f.FullPageRef.Bytes || int64(f.FullPageRef.Bytes) <= nc.MaxPayload() {
		t.Fatalf("content of %d bytes, ref says %d, bus max %d", len(*content), f.FullPageRef.Bytes, nc.MaxPayload())
	}
	for _, want := range []string{`- heading "Big page" [level=1]`, `Row 0: "quoted"`, "<tag> café", `link "link 2999"`, "The very last row"} {
		if !strings.Contains(*content, want) {
			t.Fatalf("reassembled content lacks %q", want)
		}
	}
	// A chunk that does not exist, and a frame not kept, are clear errors.
	_, err = FetchContent(nc, protocol.Frame{FullPageRef: &protocol.ContentRef{Subject: f.FullPageRef.Subject, Sequence: 999, Chunks: 1}}, 10*time.Second)
	if protocol.CodeOf(err) != protocol.CodeBadRequest || !strings.Contains(err.Error(), "frame 999") {
		t.Fatalf("fetch of a frame not kept: %v", err)
	}
}

// A page whose content is longer than frames carry (MaxContent) gets a
// frame without it, refused in the page, and a note that says how long
// it was and the limit; a page within it still gets its content, and
// the tab stays usable.
func TestFrameContentOverTheLimit(t *testing.T) {
	const limit = 4000
	tab, frames, _ := tabAt(t, "/index.html", func(o *TabOptions) { o.Frames.MaxContent = limit })
	res := send(t, tab.ID(), one(protocol.Action{Type: "navigate", URL: site("/index.html?again"), Wait: true}))
	small := frames.until(res.Sequence)
	if small.FullPage == nil || len(*small.FullPage) > limit {
		t.Fatalf("a page within the limit: frame %d has no content (note %q)", small.Sequence, small.Note)
	}
	for _, format := range []string{"snapshot", "html", "text"} {
		res := send(t, tab.ID(), protocol.Plan{FullPage: format, Actions: []protocol.Action{{Type: "navigate", URL: site("/rows.html?n=300&format=" + format), Wait: true}}})
		if !res.OK {
			t.Fatalf("navigate: %+v", res)
		}
		f := frames.until(res.Sequence)
		if f.FullPage != nil || f.FullPageRef != nil {
			t.Errorf("%s: frame %d carries content (%d bytes, %v); want none past the limit of %d", format, f.Sequence, contentLen(f), f.URL, limit)
		}
		if !strings.Contains(f.Note, "frames.maxContent") || !strings.Contains(f.Note, "4000 bytes") {
			t.Errorf("%s: note %q; want the size and the limit (frames.maxContent)", format, f.Note)
		}
	}
	if res := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "1+1"})); !res.OK {
		t.Errorf("the tab after: %+v", res)
	}
}

func contentLen(f protocol.Frame) int {
	if f.FullPage == nil {
		return -1
	}
	return len(*f.FullPage)
}
