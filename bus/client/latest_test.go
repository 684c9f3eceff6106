package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/internal/bustest"
	"github.com/framebus/framebus/internal/testscale"
	"github.com/framebus/framebus/protocol"
)

// The history lags the live frames (a tab publishes a frame at once and
// stores it after). A frame the tab made just before a watch began is
// not live to that watch, and not stored yet when it reads the history;
// no frame comes after it. The watch still gets it once it is stored,
// Current and Frames wait for it, and a watch from the next frame does
// not take it for a new one. The stream is held by taking its subjects away (the
// node's store sends the frame again until it takes it).
func TestReadersGetTheFrameTheHistoryStoresLate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	node, tab := startNode(t, ctx)
	creds := bustest.AddUser(t, node.Bus(), protocol.RoleAgent)
	c := connect(t, node.Bus().ClientURL(), &creds, nil)
	admin, err := node.Bus().Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	release := bustest.HoldStream(t, ctx, admin, node.History().Stream())
	res, err := c.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "1+1"}})
	if err != nil || !res.OK {
		t.Fatalf("plan: %+v, %v", res, err)
	}
	late := res.Sequence // published, not stored
	from1, err := c.Watch(ctx, tab, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer from1.Stop()
	for want := int64(1); want < late; want++ {
		if f := next(t, from1); f.Sequence != want {
			t.Fatalf("the watch got frame %d, want %d", f.Sequence, want)
		}
	}
	after, err := c.Watch(ctx, tab, client.FromNext)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Stop()
	framesTo := make(chan int64, 1) // frames late to late
	go func() {
		var got int64
		err := c.Frames(ctx, tab, late, late, func(f client.Frame) error { got = f.Sequence; return nil })
		if err != nil {
			t.Errorf("frames: %v", err)
		}
		framesTo <- got
	}()
	current := make(chan client.Frame, 1)
	go func() {
		f, err := c.Current(ctx, tab)
		if err != nil {
			t.Errorf("current: %v", err)
		}
		current <- f
	}()
	release()
	if f := next(t, from1); f.Sequence != late {
		t.Fatalf("the watch got frame %d, want %d, stored late", f.Sequence, late)
	}
	if f := <-current; f.Sequence != late {
		t.Fatalf("current: frame %d, want %d", f.Sequence, late)
	}
	if n := <-framesTo; n != late {
		t.Fatalf("frames %d to %d read up to %d", late, late, n)
	}
	res, err = c.Plan(ctx, tab, protocol.Plan{Action: &protocol.Action{Type: "eval", Expression: "2+2"}})
	if err != nil || !res.OK {
		t.Fatalf("plan: %+v, %v", res, err)
	}
	if f := next(t, after); f.Sequence != res.Sequence {
		t.Fatalf("the watch from the next frame got frame %d first, want %d (frame %d was made before it began)", f.Sequence, res.Sequence, late)
	}
}
