package actors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go/micro"

	"github.com/framebus/framebus/actors/files"
	"github.com/framebus/framebus/protocol"
)

// A tab's files for upload: clients stage their own on
// <prefix>.tab.<tab>.stage, answered from the subscription's goroutine
// (written straight to the tab's private directory, never held whole in
// memory), so a busy tab never delays them; plans name node paths only
// under the node's file roots, and those are copied into the same
// directory before the browser sees them. See package files.

// serveStage answers one StageRequest.
func (t *Tab) serveStage(m micro.Request) {
	var req protocol.StageRequest
	reply := protocol.StageReply{}
	err := protocol.DecodeRequest(m.Data(), "stage", &req)
	if err == nil {
		reply.ID = req.ID
		switch req.Op {
		case protocol.StageBegin:
			reply.ID, err = t.stage.Begin(req.Name, req.Size, req.SHA256)
			reply.ChunkSize = t.stageChunkSize()
		case protocol.StageChunk:
			if len(req.Data) > protocol.StageChunkSize {
				err = protocol.Errorf(protocol.CodeTooLarge, "stage.data: %d bytes; a chunk carries at most %d", len(req.Data), protocol.StageChunkSize)
				break
			}
			reply.Received, err = t.stage.Write(req.ID, req.Offset, req.Data)
		case protocol.StageCommit:
			reply.Received, err = t.stage.Commit(req.ID)
		case protocol.StageAbort:
			err = t.stage.Abort(req.ID)
		default:
			err = protocol.Errorf(protocol.CodeBadRequest, "stage.op: %q is not one of begin, chunk, commit, abort", req.Op)
		}
	}
	if err != nil {
		reply.Code, reply.Error = protocol.CodeOf(err), err.Error()
	} else {
		reply.OK = true
	}
	respond(m, reply, t.log)
}

// stageChunkSize is the most bytes a chunk may carry on this bus: the
// protocol's size, or less on a bus whose messages are smaller (base64
// makes 3 bytes 4, and the request's JSON needs room).
func (t *Tab) stageChunkSize() int {
	return int(min(int64(protocol.StageChunkSize), (t.nc.MaxPayload()-1024)/4*3))
}

// upload sets the files of a file input: staged files by id, or node
// paths under the roots (copied first).
func (t *Tab) upload(ctx context.Context, a protocol.Action) (outcome, error) {
	var paths []string
	for i, id := range a.Staged {
		p, err := t.stage.Path(id)
		if err != nil {
			return outcome{}, fmt.Errorf("upload.staged[%d]: %w", i, err)
		}
		paths = append(paths, p)
	}
	for i, name := range a.Files {
		p, err := t.copyNodeFile(name)
		if err != nil {
			var denied *files.DeniedError
			var missing *files.NotFoundError
			switch {
			case errors.As(err, &denied):
				return outcome{}, protocol.Errorf(protocol.CodePermissionDenied, "upload.files[%d]: %v", i, err)
			case errors.As(err, &missing):
				return outcome{}, protocol.Errorf(protocol.CodeBadRequest, "upload.files[%d]: %v", i, err)
			}
			return outcome{}, fmt.Errorf("upload.files[%d]: %w", i, err)
		}
		paths = append(paths, p)
	}
	err := t.page.Upload(ctx, a.Selector, paths)
	return outcome{barrier: true, ran: inputSent(err)}, err
}

// copyNodeFile stages a copy of a node file under the roots: what the
// browser gets is the copy, so the original cannot be swapped for another
// file between the check and the read.
func (t *Tab) copyNodeFile(name string) (string, error) {
	f, err := t.roots.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return t.stage.Copy(f, filepath.Base(name))
}

// nodeStageDir makes the node's directory of its tabs' staged files:
// 0711, so a browser running as another account can enter it to reach its
// tab's directory (0700, its own), but not list it.
func nodeStageDir() (string, error) {
	dir, err := os.MkdirTemp("", "framebus-files-")
	if err == nil {
		err = os.Chmod(dir, 0o711)
	}
	if err != nil {
		return "", fmt.Errorf("files: %w", err)
	}
	return dir, nil
}

// DefaultMaxStagedBytes is how many bytes of staged files a node on m
// holds, all its tabs together, when it is given no bound: a quarter of
// the free space of the file system they go to (free bytes), and when
// that is memory (tmpfs: inMemory), at most a quarter of the available
// memory too. Each tab is bounded besides (files.Limits: 500 MiB).
func (m Machine) DefaultMaxStagedBytes(free int64, inMemory bool) int64 {
	n := free / 4
	if inMemory && m.MemAvailable > 0 {
		n = min(n, m.MemAvailable/4)
	}
	return max(1, n)
}

// maxStagedBytes is the bound of the node's staged files given asked
// (NodeOptions.MaxStagedBytes) on m, for files under dir: 0 for none.
func maxStagedBytes(asked int64, m Machine, dir string) (int64, error) {
	switch {
	case asked < 0:
		return 0, nil
	case asked > 0:
		return asked, nil
	}
	free, inMemory, err := diskFree(dir)
	if err != nil {
		return 0, fmt.Errorf("files: the free space of %s: %w", dir, err)
	}
	return m.DefaultMaxStagedBytes(free, inMemory), nil
}

// MaxStagedBytes is how many bytes of staged files the node's tabs may
// hold together, 0 for no bound.
func (n *Node) MaxStagedBytes() int64 { return n.opts.FileLimits.Shared.Max() }

// newStage is the tab's stage, its files the browser's account's.
func newStage(opts TabOptions) *files.Stage {
	s := files.NewStage(opts.StageDir, opts.FileLimits)
	if u := opts.StageReader; u != nil {
		s.OwnedBy(u.UID, u.GID)
	}
	return s
}
