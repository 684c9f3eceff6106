package actors

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// A tab sends pictures of its page only while watched: a watch lease
// starts its screencast (a JPEG with its viewport and frame), a change
// of the page brings a new picture, and once the lease ends nothing more
// comes, whatever the page does.
func TestScreencastOnlyWhileWatched(t *testing.T) {
	tab, _, _ := tabAt(t, "/read.html")
	pics := watchEvents(t, protocol.DefaultSubjects.TabEvents(tab.ID(), "screen"))
	change := func(text string) {
		t.Helper()
		if r := send(t, tab.ID(), one(protocol.Action{Type: "eval", Expression: "document.body.style.background = " + jsString(text)})); !r.OK {
			t.Fatalf("change the page: %+v", r)
		}
	}
	// Unwatched: nothing.
	change("yellow")
	select {
	case m := <-pics:
		t.Fatalf("a picture of a tab no one watches: %d bytes", len(m.Data))
	case <-time.After(300 * time.Millisecond):
	}
	var lease protocol.WatchReply
	_ = json.Unmarshal(personDo(t, protocol.DefaultSubjects.TabWatch(tab.ID()), protocol.WatchRequest{Seconds: 1}), &lease)
	if lease.Until.IsZero() {
		t.Fatalf("watch: %+v", lease)
	}
	first := <-pics
	var meta protocol.ScreenMeta
	if err := json.Unmarshal([]byte(first.Header.Get(protocol.ScreenHeader)), &meta); err != nil {
		t.Fatalf("picture header %q: %v", first.Header.Get(protocol.ScreenHeader), err)
	}
	if !bytes.HasPrefix(first.Data, []byte{0xff, 0xd8}) || meta.Tab != tab.ID() || meta.DeviceWidth <= 0 || meta.Sequence != tab.Info().Sequence {
		t.Fatalf("picture: %d bytes %x..., meta %+v", len(first.Data), first.Data[:4], meta)
	}
	change("blue")
	select {
	case <-pics:
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatal("no picture after the page changed")
	}
	// The lease ends (a second), and with it the pictures.
	waitUntil(t, func() bool { tab.screen.mu.Lock(); defer tab.screen.mu.Unlock(); return tab.screen.cancel == nil })
	for len(pics) > 0 {
		<-pics
	}
	change("red")
	select {
	case m := <-pics:
		t.Fatalf("a picture after the lease ended: %d bytes", len(m.Data))
	case <-time.After(500 * time.Millisecond):
	}
}

// A watch asks for a rate: a thumbnail's lease alone holds the tab to
// that many pictures a second, however fast its page changes (counted
// over a window: a slow machine only sends fewer); a full lease beside
// it raises the rate at once, and it falls back when that one ends. A
// rate below zero is refused.
func TestScreencastRate(t *testing.T) {
	tab, _, _ := tabAt(t, "/anim.html")
	pics := watchEvents(t, protocol.DefaultSubjects.TabEvents(tab.ID(), "screen"))
	watch := protocol.DefaultSubjects.TabWatch(tab.ID())
	const thumb = 2
	slow := time.Second / thumb
	personDo(t, watch, protocol.WatchRequest{Seconds: protocol.MaxWatch, Rate: thumb})
	if got := tab.screen.interval(); got != slow {
		t.Fatalf("a thumbnail's lease: an interval of %s, want %s", got, slow)
	}
	select {
	case <-pics:
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatal("no picture of the animation")
	}
	start, n := time.Now(), 0
	for time.Since(start) < 3*slow+slow/2 {
		select {
		case <-pics:
			n++
		case <-time.After(slow):
		}
	}
	if most := int(time.Since(start)/slow) + 2; n > most {
		t.Fatalf("%d pictures in %s of a thumbnail's lease, want at most %d", n, time.Since(start), most)
	}
	personDo(t, watch, protocol.WatchRequest{Seconds: 1})
	if got := tab.screen.interval(); got != time.Second/protocol.MaxScreenRate {
		t.Fatalf("with a full lease beside it: an interval of %s", got)
	}
	waitUntil(t, func() bool { return tab.screen.interval() == slow })
	if data, code := personAsk(t, watch, protocol.WatchRequest{Rate: -1}); code != protocol.CodeBadRequest {
		t.Fatalf("a rate of -1: %s", data)
	}
}
