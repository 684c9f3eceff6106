package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/framebus/framebus/protocol"
)

// Durable frame history: every frame a tab publishes on its frame subject
// is also kept by a JetStream stream (Subjects.FrameStream). The tab
// publishes it live at once, and its frameStore sends it again on the
// tab's history subject (Subjects.HistoryFrames), which only the stream
// takes: a subject transform stores it under the frame subject, so a
// reader finds it there. Live subscribers never wait for the stream.
// Each frame carries a Nats-Msg-Id (protocol.FrameMsgID), so the stream
// stores it once however often it is sent (within the duplicate window).
// Content too large for one message goes to a JetStream object store
// (Subjects.ContentBucket), checked whole, before the stored frame names
// it, and is deleted when the frame leaves the history.
//
// A late or reconnecting observer replays a tab's frames from any
// sequence still kept with an ordered consumer filtered to the tab's
// frame subject, and reads a tab's current frame as the last message for
// that subject (the stream allows direct gets).

// Storage kinds of the history.
const (
	HistoryMemory = "memory"
	HistoryFile   = "file"
)

// History defaults: per tab, the last DefaultHistoryPerTab frames for
// DefaultHistoryAge; all tabs together within DefaultHistoryBytes (and the
// large contents as much again).
const (
	DefaultHistoryPerTab     = 1000
	DefaultHistoryAge        = 24 * time.Hour
	DefaultHistoryBytes      = 256 << 20
	DefaultHistoryDuplicates = 2 * time.Minute
	// DefaultStoreTimeout outlasts an election after a server is lost
	// without a word (raft's election timeout is 4 to 9 s).
	DefaultStoreTimeout = 20 * time.Second
)

// maxHistoryConsumers bounds the consumers on the frame stream: every
// watching reader has one (ephemeral, gone when it stops).
const maxHistoryConsumers = 1024

// historyTimeout bounds one JetStream call of the node (an object put of
// a few MB, a stream update): the server is in the process, or near.
const historyTimeout = 30 * time.Second

// HistoryOptions configure a node's frame history.
type HistoryOptions struct {
	// Disabled runs the node without history (frames live only, large
	// content kept by the tab for its latest frames).
	Disabled bool
	// Storage is HistoryMemory ("" too) or HistoryFile: file storage
	// under Dir, which the embedded server uses as its JetStream store
	// (a node on an external bus stores where that server does).
	Storage string
	Dir     string
	// MaxPerTab is how many frames of each tab are kept
	// (DefaultHistoryPerTab when 0); MaxAge how long
	// (DefaultHistoryAge when 0); MaxBytes bounds the frames of all tabs
	// together, and their large contents as much again
	// (DefaultHistoryBytes when 0). Past a bound the oldest go first.
	MaxPerTab int64
	MaxAge    time.Duration
	MaxBytes  int64
	// Duplicates is the window in which a frame published again is
	// recognised by its message id and stored once
	// (DefaultHistoryDuplicates, at most MaxAge).
	Duplicates time.Duration
	// StoreTimeout bounds how long a tab's frame is sent again while the
	// frame stream does not ack it (a cluster electing its leader)
	// before it is given up, logged, and left out of the history
	// (DefaultStoreTimeout when 0). See framestore.go.
	StoreTimeout time.Duration
	// Replicas is how many servers of a NATS cluster keep the history
	// (1 when 0; at most 5, and a cluster needs that many JetStream
	// servers): 3 on a cluster of three or more survives one server lost.
	Replicas int
}

func (o HistoryOptions) withDefaults() (HistoryOptions, error) {
	o.Storage = cmp.Or(o.Storage, HistoryMemory)
	o.MaxPerTab = cmp.Or(o.MaxPerTab, DefaultHistoryPerTab)
	o.MaxAge = cmp.Or(o.MaxAge, DefaultHistoryAge)
	o.MaxBytes = cmp.Or(o.MaxBytes, DefaultHistoryBytes)
	o.Duplicates = min(cmp.Or(o.Duplicates, DefaultHistoryDuplicates), o.MaxAge)
	o.StoreTimeout = cmp.Or(o.StoreTimeout, DefaultStoreTimeout)
	switch {
	case o.Storage != HistoryMemory && o.Storage != HistoryFile:
		return o, protocol.Errorf(protocol.CodeBadRequest, "history storage: %q is not %s or %s", o.Storage, HistoryMemory, HistoryFile)
	case o.MaxPerTab < 1:
		return o, protocol.Errorf(protocol.CodeBadRequest, "history maxPerTab: %d; want at least 1 frame per tab", o.MaxPerTab)
	case o.MaxAge < time.Second:
		return o, protocol.Errorf(protocol.CodeBadRequest, "history maxAge: %s; want at least 1s", o.MaxAge)
	case o.MaxBytes < 1<<20:
		return o, protocol.Errorf(protocol.CodeBadRequest, "history maxBytes: %d; want at least 1 MiB", o.MaxBytes)
	case o.StoreTimeout < 0:
		return o, protocol.Errorf(protocol.CodeBadRequest, "history storeTimeout: %s; want 0 (the default) or more", o.StoreTimeout)
	case o.Replicas < 0 || o.Replicas > 5:
		return o, protocol.Errorf(protocol.CodeBadRequest, "history replicas: %d; want 1 to 5", o.Replicas)
	}
	o.Replicas = max(o.Replicas, 1)
	return o, nil
}

func (o HistoryOptions) storage() jetstream.StorageType {
	if o.Storage == HistoryFile {
		return jetstream.FileStorage
	}
	return jetstream.MemoryStorage
}

// History is a node's frame stream and content store, shared by its tabs.
type History struct {
	opts    HistoryOptions
	js      jetstream.JetStream
	stream  jetstream.Stream
	content jetstream.ObjectStore
	bucket  string
	// maxPayload is the bus's largest message, which bounds a chunk.
	maxPayload int64
	log        zerolog.Logger
}

// objectChunk is the object store's usual chunk size.
const objectChunk = 128 << 10

// ErrNoJetStream: the bus has no JetStream, so there is no history.
var ErrNoJetStream = errors.New("the bus has no JetStream")

// retryJetStream runs a JetStream call a few seconds at a time until it
// answers or ctx ends: on a cluster still forming (electing leaders,
// placing a replicated stream) a request may get no answer at all, or
// the answer 503 (no leader yet). Any other API error is final.
func retryJetStream(ctx context.Context, call func(context.Context) error) error {
	for {
		try, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := call(try)
		cancel()
		var apiErr *jetstream.APIError
		switch {
		case err == nil || ctx.Err() != nil:
			return err
		case errors.As(err, &apiErr) && (apiErr.Code == http.StatusServiceUnavailable || apiErr.ErrorCode == 10005):
			// No leader yet, or too few members known yet for the replicas
			// (a member that has just joined; err_code 10005): ask again.
			select { // answered at once: pause before asking again
			case <-ctx.Done():
				return err
			case <-time.After(250 * time.Millisecond):
			}
		case errors.As(err, &apiErr) || !errors.Is(err, context.DeadlineExceeded):
			return err
		}
	}
}

// jetStreamUnsettled reports an error of a JetStream call or publish
// that a cluster still electing a leader gives, so that asking again
// later may succeed: no answer in time, no responders, no ack from the
// stream, or the API's 503.
func jetStreamUnsettled(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.As(err, &apiErr) && apiErr.Code == http.StatusServiceUnavailable
}

// haveJetStream fails, wrapping ErrNoJetStream, when the bus has no
// JetStream for js's account; what names the caller in other errors. On
// a cluster that is still electing JetStream's leader nothing answers
// yet, or the answer is 503: it asks again until ctx ends, saying in the
// log what it waits for, and past ctx the error is unavailable. (A
// cluster's first start elects no leader before every member in the
// routes is up: servers started one at a time wait for the last.)
func haveJetStream(ctx context.Context, js jetstream.JetStream, what string, log zerolog.Logger) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, jetStreamWait)
		defer cancel()
	}
	began, told := time.Now(), time.Now()
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AccountInfo(try)
		cancel()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
			return fmt.Errorf("%w: %w", ErrNoJetStream, err)
		case ctx.Err() != nil:
			return protocol.Errorf(protocol.CodeUnavailable, "%s: the bus's JetStream did not answer within %s (a cluster elects its leader only once a majority of its members are up, and on its first start every member listed in its routes): %w",
				what, time.Since(began).Round(time.Second), err)
		}
		if time.Since(told) >= jetStreamWaitLog {
			log.Warn().Err(err).Dur("waited", time.Since(began)).Msgf("%s: waiting for the bus's JetStream (a cluster still electing its leader: are the other members up?)", what)
			told = time.Now()
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// jetStreamWait bounds haveJetStream when its caller set no deadline,
// and jetStreamWaitLog is how often it says it still waits.
const (
	jetStreamWait    = 2 * time.Minute
	jetStreamWaitLog = 5 * time.Second
)

// StartHistory creates the frame stream and the content bucket on nc's
// JetStream, or updates them to opts (an existing history is kept). On a
// server without JetStream it returns an error wrapping ErrNoJetStream.
func StartHistory(ctx context.Context, nc *nats.Conn, subj protocol.Subjects, opts HistoryOptions, log zerolog.Logger) (*History, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	// The wait for JetStream itself is the caller's: a cluster may still
	// be starting. Then each call has historyTimeout.
	if err := haveJetStream(ctx, js, "history", log); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	streamConfig := jetstream.StreamConfig{
		Name:        subj.FrameStream(),
		Description: "framebus frames of every tab, by tab subject",
		// The stream takes the history subjects, never the live ones, and
		// stores each frame under its tab's frame subject: a frame sent
		// again until the stream acks it cannot follow a later frame's
		// live publish into the stream (see framestore.go). A stream an
		// older node made (on AllFrames) is updated to this in place.
		// Questions and answers (docs/people.md) are kept too, as they
		// are published: a reader finds them by their subject.
		Subjects:          append([]string{subj.AllHistoryFrames()}, subj.PersonEvents()...),
		SubjectTransform:  historyTransform(subj),
		Storage:           opts.storage(),
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgsPerSubject: opts.MaxPerTab,
		MaxAge:            opts.MaxAge,
		MaxBytes:          opts.MaxBytes,
		MaxMsgSize:        int32(min(nc.MaxPayload(), 1<<31-1)),
		Duplicates:        opts.Duplicates,
		AllowDirect:       true,
		// The history is only ever appended to: no one purges it or
		// deletes a frame, not even by aiming a JetStream answer at
		// the purge API (a reader may name any reply subject).
		DenyPurge:  true,
		DenyDelete: true,
		// Readers' consumers are ephemeral; a bound keeps a reader
		// from making them without end.
		MaxConsumers: maxHistoryConsumers,
		Replicas:     opts.Replicas,
	}
	var stream jetstream.Stream
	err = retryJetStream(ctx, func(try context.Context) (err error) {
		stream, err = js.CreateOrUpdateStream(try, streamConfig)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("history: stream %s: %w", subj.FrameStream(), err)
	}
	var content jetstream.ObjectStore
	err = retryJetStream(ctx, func(try context.Context) (err error) {
		content, err = js.CreateOrUpdateObjectStore(try, jetstream.ObjectStoreConfig{
			Bucket:      subj.ContentBucket(),
			Description: "framebus frame content too large for one message",
			TTL:         opts.MaxAge,
			MaxBytes:    opts.MaxBytes,
			Storage:     opts.storage(),
			Replicas:    opts.Replicas,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("history: content bucket %s: %w", subj.ContentBucket(), err)
	}
	return &History{opts: opts, js: js, stream: stream, content: content, bucket: subj.ContentBucket(), maxPayload: nc.MaxPayload(), log: log}, nil
}

// historyTransform maps a tab's history subject to its frame subject.
func historyTransform(subj protocol.Subjects) *jetstream.SubjectTransformConfig {
	return &jetstream.SubjectTransformConfig{
		Source:      subj.AllHistoryFrames(),
		Destination: subj.TabFrames("{{wildcard(1)}}"),
	}
}

// Options are the history's settings, defaults filled in.
func (h *History) Options() HistoryOptions { return h.opts }

// Stream is the frame stream.
func (h *History) Stream() jetstream.Stream { return h.stream }

// putContent stores a frame's large content; the reference goes in the
// frame.
func (h *History) putContent(ctx context.Context, name string, seq int64, content string) (*protocol.ContentRef, error) {
	// Chunks of the library's default size, or smaller on a bus whose
	// messages are (the chunk's headers need room too).
	meta := jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: uint32(min(objectChunk, h.maxPayload-chunkOverhead))}}
	info, err := h.content.Put(ctx, meta, strings.NewReader(content))
	if err != nil {
		return nil, err
	}
	if err := h.checkChunks(ctx, info); err != nil {
		return nil, err
	}
	if err := h.checkObject(ctx, name, content); err != nil {
		return nil, err
	}
	return &protocol.ContentRef{Bucket: h.bucket, Object: name, Sequence: seq, Bytes: len(content)}, nil
}

// objectReadAgain is the pause before reading an object back again
// that a replica did not have yet.
const objectReadAgain = 20 * time.Millisecond

// errObjectCorrupt: an object read back right after its put is not what
// was put.
var errObjectCorrupt = errors.New("the object read back is not the content put")

// checkObject reads object name back and compares it with content, so
// that no frame names content that is not whole. A put acked in full can
// still have stored wrong chunks: nats.go's put sends every chunk from
// one reused message and buffer, and a chunk it sends again after "no
// responders" (the bucket's stream handing over to its next leader)
// goes with the data of the chunk read last (seen: an object of four
// chunks stored as the last chunk four times; digests do not match).
// The corrupt object is deleted; the caller puts again under a new name.
func (h *History) checkObject(ctx context.Context, name, content string) error {
	data, err := h.content.GetBytes(ctx, name)
	for errors.Is(err, jetstream.ErrObjectNotFound) {
		// The meta is read with a direct get, which any replica answers:
		// one that has not applied the put yet finds nothing.
		select {
		case <-ctx.Done():
			return fmt.Errorf("object %s not found after its put: %w", name, ctx.Err())
		case <-time.After(objectReadAgain):
		}
		data, err = h.content.GetBytes(ctx, name)
	}
	if err == nil && string(data) == content {
		return nil
	}
	if err != nil && !errors.Is(err, jetstream.ErrDigestMismatch) {
		return err
	}
	if derr := h.content.Delete(ctx, name); derr != nil {
		h.log.Warn().Err(derr).Str("object", name).Msg("delete a corrupt frame content")
	}
	if err == nil {
		err = fmt.Errorf("%d bytes, want %d", len(data), len(content))
	}
	return fmt.Errorf("object %s: %w: %w", name, errObjectCorrupt, err)
}

// errChunksLost: the bucket's stream does not hold the chunks a put
// made, one for one.
var errChunksLost = errors.New("the content bucket does not hold the object's chunks one for one")

// checkChunks makes sure the content bucket's stream holds exactly the
// chunks a put made. A put while the bucket's replicas change leader
// was once acked with a chunk stored twice or missing, which a reader
// finds only later, as a corrupt object (digests do not match); the
// stream's leader counts them in one request.
func (h *History) checkChunks(ctx context.Context, info *jetstream.ObjectInfo) error {
	stream, err := h.js.Stream(ctx, "OBJ_"+h.bucket)
	if err != nil {
		return err
	}
	subject := "$O." + h.bucket + ".C." + info.NUID
	si, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return err
	}
	if held := si.State.Subjects[subject]; held != uint64(info.Chunks) {
		return fmt.Errorf("object %s: %d chunks put, %d stored: %w", info.Name, info.Chunks, held, errChunksLost)
	}
	return nil
}

// storedContent is a frame's large content in the object store: every
// name a put of it was tried under (see frameStore.putContent).
type storedContent struct {
	seq   int64
	names []string
}

// dropContent deletes the large contents of a tab's frames that have left
// the history (the stream keeps MaxPerTab frames of a tab); kept lists
// the tab's frames with large content, oldest first, and what remains of
// it is returned. Age removes the rest (the bucket's TTL is the stream's
// MaxAge).
func (h *History) dropContent(tab string, kept []storedContent, current int64) []storedContent {
	n := 0
	for _, c := range kept {
		if c.seq > current-h.opts.MaxPerTab {
			break
		}
		for _, name := range c.names {
			ctx, cancel := context.WithTimeout(context.Background(), historyTimeout)
			err := h.content.Delete(ctx, name)
			cancel()
			if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
				h.log.Warn().Err(err).Str("tab", tab).Int64("sequence", c.seq).Msg("delete frame content")
			}
		}
		n++
	}
	return kept[n:]
}

// fetchObject reads a frame's content from the object store.
func fetchObject(nc *nats.Conn, ref *protocol.ContentRef, timeout time.Duration) (*string, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "frame %d's content: %v", ref.Sequence, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	obs, err := js.ObjectStore(ctx, ref.Bucket)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "frame %d's content: bucket %s: %v", ref.Sequence, ref.Bucket, err)
	}
	data, err := obs.GetBytes(ctx, ref.Object)
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound):
		return nil, protocol.Errorf(protocol.CodeBadRequest, "frame %d's content (%s in %s) is no longer kept: it left the history", ref.Sequence, ref.Object, ref.Bucket)
	case err != nil:
		return nil, protocol.Errorf(protocol.CodeUnavailable, "frame %d's content: %v", ref.Sequence, err)
	case len(data) != ref.Bytes:
		return nil, protocol.Errorf(protocol.CodeInternal, "frame %d's content: got %d bytes, want %d", ref.Sequence, len(data), ref.Bytes)
	}
	s := string(data)
	return &s, nil
}
