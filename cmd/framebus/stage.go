package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/protocol"
)

// upload's files on the command line are the user's own, where the CLI
// runs: the CLI reads them and sends their bytes to the tab over the bus
// (protocol.StageRequest), then sends the upload with the ids the node
// answered. Nobody needs a path on the node's machine; --on-node sends the
// paths as they are, for files under the node's files.roots.

// stageRequestTimeout bounds one staging request (one chunk).
const stageRequestTimeout = 30 * time.Second

// stagedUpload rewrites a one-action upload plan that names the user's
// files into one that names them by the ids the tab staged them under.
func (cl *client) stagedUpload(ctx context.Context, tab string, plan protocol.Plan) ([]byte, protocol.Plan, error) {
	a := plan.Actions[0]
	ids := make([]string, 0, len(a.Files))
	for _, path := range a.Files {
		id, err := cl.stageFile(ctx, tab, path)
		if err != nil {
			return nil, plan, err
		}
		ids = append(ids, id)
	}
	a.Files, a.Staged = nil, ids
	plan.Action, plan.Actions = &a, []protocol.Action{a}
	data, err := json.Marshal(protocol.Plan{ID: plan.ID, Agent: plan.Agent, Version: plan.Version, FullPage: plan.FullPage, FullPagePolicy: plan.FullPagePolicy, Action: &a})
	return data, plan, err
}

// stageFile sends one file to the tab in chunks and answers its id. The
// file is read twice (its digest, then its chunks), never held whole.
func (cl *client) stageFile(ctx context.Context, tab, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", protocol.Errorf(protocol.CodeBadRequest, "upload %s: %v", path, osReason(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", protocol.Errorf(protocol.CodeBadRequest, "upload %s: %v", path, osReason(err))
	}
	if !fi.Mode().IsRegular() {
		return "", protocol.Errorf(protocol.CodeBadRequest, "upload %s: is not a regular file", path)
	}
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return "", protocol.Errorf(protocol.CodeBadRequest, "upload %s: %v", path, osReason(err))
	}
	begin, err := cl.stage(ctx, tab, path, protocol.StageRequest{Op: protocol.StageBegin, Name: filepath.Base(path), Size: size, SHA256: hex.EncodeToString(h.Sum(nil))})
	if err != nil {
		return "", err
	}
	id := begin.ID
	chunk := min(begin.ChunkSize, protocol.StageChunkSize)
	if chunk <= 0 {
		chunk = protocol.StageChunkSize
	}
	err = cl.sendChunks(ctx, tab, path, id, f, size, chunk)
	if err == nil {
		_, err = cl.stage(ctx, tab, path, protocol.StageRequest{Op: protocol.StageCommit, ID: id})
	}
	if err != nil {
		// Best effort: the tab drops it anyway when it closes.
		actx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
		defer cancel()
		_, _ = cl.stage(actx, tab, path, protocol.StageRequest{Op: protocol.StageAbort, ID: id})
		return "", err
	}
	return id, nil
}

func (cl *client) sendChunks(ctx context.Context, tab, path, id string, f *os.File, size int64, chunk int) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return protocol.Errorf(protocol.CodeBadRequest, "upload %s: %v", path, osReason(err))
	}
	buf := make([]byte, chunk)
	var off int64
	for off < size {
		n, err := io.ReadFull(f, buf[:min(int64(chunk), size-off)])
		if err != nil {
			return protocol.Errorf(protocol.CodeBadRequest, "upload %s: changed while it was read: %v", path, err)
		}
		if _, err := cl.stage(ctx, tab, path, protocol.StageRequest{Op: protocol.StageChunk, ID: id, Offset: off, Data: buf[:n]}); err != nil {
			return err
		}
		off += int64(n)
	}
	return nil
}

// stage sends one StageRequest and answers its reply, or the node's
// refusal as an error with the node's code.
func (cl *client) stage(ctx context.Context, tab, path string, req protocol.StageRequest) (protocol.StageReply, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return protocol.StageReply{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, stageRequestTimeout)
	defer cancel()
	out, err := cl.bc.RequestData(rctx, cl.subj.TabStage(tab), data)
	switch {
	case protocol.CodeOf(err) == protocol.CodePermissionDenied:
		return protocol.StageReply{}, err
	case errors.Is(err, nats.ErrNoResponders):
		return protocol.StageReply{}, cl.tabNotFound(ctx, tab)
	case err != nil && ctx.Err() != nil:
		return protocol.StageReply{}, protocol.Errorf(protocol.CodeCancelled, "upload %s: interrupted", path)
	case err != nil && rctx.Err() != nil:
		return protocol.StageReply{}, protocol.Errorf(protocol.CodeTimeout, "upload %s: tab %s did not answer a %s within %s", path, tab, req.Op, stageRequestTimeout)
	case err != nil:
		return protocol.StageReply{}, errNoNode(err)
	}
	var reply protocol.StageReply
	if err := json.Unmarshal(out, &reply); err != nil {
		return reply, protocol.Errorf(protocol.CodeInternal, "upload %s: the node's reply to %s: %v", path, req.Op, err)
	}
	if !reply.OK {
		return reply, protocol.Errorf(reply.Code, "upload %s: %s", path, reply.Error)
	}
	return reply, nil
}

// checkOnNode takes --on-node: a switch.
func checkOnNode(value any) error {
	if _, ok := value.(bool); !ok {
		return fmt.Errorf("--on-node: takes no value")
	}
	return nil
}
