package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
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

// objectContent reads content from the object store, by direct gets
// of its stream (OBJ_<bucket>): the object's meta message (the last on
// $O.<bucket>.M.<name in base64url>), then its chunks ($O.<bucket>.C.<nuid>)
// in batches; the size and SHA-256 digest the meta names are checked.
// nats.go's ObjectStore.Get reads the chunks with an ordered push
// consumer, which agents and observers may not make.
func (c *Client) objectContent(ctx context.Context, ref *protocol.ContentRef) ([]byte, error) {
	data, err := c.readObject(ctx, ref.Bucket, ref.Object)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeOf(err), "the content of frame %d (object %s in %s): %w", ref.Sequence, ref.Object, ref.Bucket, err)
	}
	return data, nil
}

// readObject reads an object of the object store bucket.
func (c *Client) readObject(ctx context.Context, bucket, name string) ([]byte, error) {
	stream := "OBJ_" + bucket
	meta, err := c.directLast(ctx, stream, "$O."+bucket+".M."+base64.URLEncoding.EncodeToString([]byte(name)))
	if errors.Is(err, errNotStored) {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "no such object (expired from the history?)")
	}
	if err != nil {
		return nil, err
	}
	var info jetstream.ObjectInfo
	switch {
	case meta.Header.Get("Nats-Stream") != "": // a JetStream answer a user aimed at the meta subject
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the object's meta message is not the object store's")
	case json.Unmarshal(meta.Data, &info) != nil:
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the object's meta message is not JSON")
	case info.Deleted:
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the object was deleted")
	case info.NUID == "" || (info.Opts != nil && info.Opts.Link != nil):
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the object's meta names no chunks of its own")
	}
	want, err := jetstream.DecodeObjectDigest(info.Digest)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the object's digest %q: %v", info.Digest, err)
	}
	data := make([]byte, 0, info.Size)
	chunks := "$O." + bucket + ".C." + info.NUID
	for seq := uint64(0); uint64(len(data)) < info.Size; {
		msgs, end, err := c.directBatch(ctx, stream, directRequest{Seq: seq, NextFor: chunks, Batch: directBatch, MaxBytes: directMaxBytes})
		if errors.Is(err, errNotStored) {
			break
		}
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if m.Header.Get("Nats-Stream") != "" {
				continue // a JetStream answer a user aimed at the chunks' subject
			}
			data = append(data, m.Data...)
		}
		if end.pending == 0 || len(msgs) == 0 {
			break
		}
		seq = end.last + 1
	}
	sum := sha256.Sum256(data)
	switch {
	case uint64(len(data)) != info.Size:
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the object's chunks hold %d bytes, its meta says %d", len(data), info.Size)
	case !bytes.Equal(sum[:], want):
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the object's chunks do not match its SHA-256 digest")
	}
	return data, nil
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
