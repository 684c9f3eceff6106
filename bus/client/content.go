package client

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/framebus/framebus/protocol"
)

// contentWait bounds fetching one frame's content by reference when the
// caller's context has no deadline.
const contentWait = 30 * time.Second

// inline fetches content a frame carries by reference and puts it in the
// frame (FullPage, and Data re-encoded): from the object store bucket the
// reference names, or, on a bus without history, in chunks from the tab.
func (c *Client) inline(ctx context.Context, f *Frame) error {
	ref := f.FullPageRef
	ctx, cancel := withDefaultTimeout(ctx, contentWait)
	defer cancel()
	var content []byte
	var err error
	if ref.Bucket != "" {
		content, err = c.objectContent(ctx, ref)
	} else {
		content, err = c.chunkedContent(ctx, ref)
	}
	if err != nil {
		return err
	}
	if len(content) != ref.Bytes {
		return protocol.Errorf(protocol.CodeInternal, "frame %d's content: got %d bytes, want %d", ref.Sequence, len(content), ref.Bytes)
	}
	s := string(content)
	pf := f.Frame
	pf.FullPage, pf.FullPageRef = &s, nil
	data, err := protocol.Marshal(pf)
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "frame %d: %v", ref.Sequence, err)
	}
	f.Frame, f.Data = pf, data
	return nil
}

// objectContent reads content from the object store.
func (c *Client) objectContent(ctx context.Context, ref *protocol.ContentRef) ([]byte, error) {
	var data []byte
	err := c.jsCall(ctx, func(ctx context.Context) error {
		store, err := c.objectStore(ctx, ref.Bucket)
		if err != nil {
			return err
		}
		data, err = store.GetBytes(ctx, ref.Object)
		return err
	})
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the content of frame %d (object %s in %s): %w", ref.Sequence, ref.Object, ref.Bucket, err)
	}
	return data, nil
}

// objectStore is the bucket's handle, looked up once.
func (c *Client) objectStore(ctx context.Context, bucket string) (jetstream.ObjectStore, error) {
	c.storesMu.Lock()
	defer c.storesMu.Unlock()
	if s, ok := c.stores[bucket]; ok {
		return s, nil
	}
	s, err := c.js.ObjectStore(ctx, bucket)
	if err != nil {
		return nil, err
	}
	if c.stores == nil {
		c.stores = map[string]jetstream.ObjectStore{}
	}
	c.stores[bucket] = s
	return s, nil
}

// chunkedContent asks the tab for the content's chunks (a bus without
// history: the tab keeps its latest large contents).
func (c *Client) chunkedContent(ctx context.Context, ref *protocol.ContentRef) ([]byte, error) {
	buf := make([]byte, 0, ref.Bytes)
	for i := 0; i < ref.Chunks; i++ {
		var r protocol.ContentReply
		if err := c.Request(ctx, ref.Subject, protocol.ContentRequest{Sequence: ref.Sequence, Chunk: i}, &r); err != nil {
			return nil, protocol.Errorf(protocol.CodeOf(err), "chunk %d of frame %d's content: %w", i, ref.Sequence, err)
		}
		buf = append(buf, r.Data...)
	}
	return buf, nil
}
