package actors

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/framebus/framebus/actors/files"
	"github.com/framebus/framebus/protocol"
)

// fileRoots makes dir the tab's only file root.
func fileRoots(t *testing.T, dir string) func(*TabOptions) {
	t.Helper()
	roots, err := files.NewRoots([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return func(o *TabOptions) { o.FileRoots = roots }
}

// stageFile stages content on a tab as a client does (begin, chunks,
// commit) and returns its id.
func stageFile(t *testing.T, nc *nats.Conn, subj protocol.Subjects, tab, name string, content []byte) string {
	t.Helper()
	sum := sha256.Sum256(content)
	r := stageReq(t, nc, subj, tab, protocol.StageRequest{Op: protocol.StageBegin, Name: name, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:])})
	if !r.OK {
		t.Fatalf("begin %s: %+v", name, r)
	}
	for off := 0; off < len(content); off += r.ChunkSize {
		end := min(off+r.ChunkSize, len(content))
		if c := stageReq(t, nc, subj, tab, protocol.StageRequest{Op: protocol.StageChunk, ID: r.ID, Offset: int64(off), Data: content[off:end]}); !c.OK || c.Received != int64(end) {
			t.Fatalf("chunk %d of %s: %+v", off, name, c)
		}
	}
	if c := stageReq(t, nc, subj, tab, protocol.StageRequest{Op: protocol.StageCommit, ID: r.ID}); !c.OK {
		t.Fatalf("commit %s: %+v", name, c)
	}
	return r.ID
}

func stageReq(t *testing.T, nc *nats.Conn, subj protocol.Subjects, tab string, req protocol.StageRequest) protocol.StageReply {
	t.Helper()
	data, _ := json.Marshal(req)
	msg, err := nc.Request(subj.TabStage(tab), data, 30*time.Second)
	if err != nil {
		t.Fatalf("stage %s: %v", req.Op, err)
	}
	var r protocol.StageReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// uploadedFiles is what the page's #one input holds: its files' names and
// the SHA-256 of the first one's bytes, as the page reads them.
func uploadedFiles(t *testing.T, tab *Tab) (names []string, sum string) {
	t.Helper()
	var got struct {
		Names []string
		Sum   string
	}
	cmdEvalInto(t, tab, `(async () => {
		const el = document.getElementById('one');
		let sum = "";
		if (el.files.length) {
			const d = await crypto.subtle.digest('SHA-256', await el.files[0].arrayBuffer());
			sum = Array.from(new Uint8Array(d), b => b.toString(16).padStart(2, '0')).join('');
		}
		return {Names: Array.from(el.files, f => f.name), Sum: sum};
	})()`, &got)
	return got.Names, got.Sum
}

// A plan names node files only under the roots: from the attacker's side,
// every attempt to upload a file outside them (/etc/shadow, a `..`
// escape, a symlink in the root pointing out, another tab's staged id, an
// id that is a path) is refused with a clear code, and the page's input
// holds nothing afterwards. Files staged over the bus, larger than a
// chunk, reach the page byte for byte.
func TestUploadFilesAreABoundary(t *testing.T) {
	root := t.TempDir()
	inside := filepath.Join(root, "in.txt")
	if err := os.WriteFile(inside, []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "passwd")); err != nil {
		t.Fatal(err)
	}
	tab, _, _ := tabAt(t, "/upload.html", fileRoots(t, root))
	other, _, _ := tabAt(t, "/upload.html")
	subj := protocol.DefaultSubjects
	otherID := stageFile(t, testConn, subj, other.ID(), "other.txt", []byte("the other tab's"))

	attacks := []struct {
		a    protocol.Action
		code protocol.Code
		says string
	}{
		{protocol.Action{Files: []string{"/etc/shadow"}}, protocol.CodePermissionDenied, "/etc/shadow is outside the file roots (files.roots: "},
		{protocol.Action{Files: []string{root + "/../../../../etc/passwd"}}, protocol.CodePermissionDenied, "files.roots"},
		{protocol.Action{Files: []string{filepath.Join(root, "passwd")}}, protocol.CodePermissionDenied, "resolves to /etc/passwd"},
		{protocol.Action{Files: []string{"etc/passwd"}}, protocol.CodePermissionDenied, "files.roots"},
		{protocol.Action{Staged: []string{otherID}}, protocol.CodeBadRequest, "no file"},
		{protocol.Action{Staged: []string{"../../etc/passwd"}}, protocol.CodeBadRequest, "is not a staged file's id"},
		{protocol.Action{Staged: []string{strings.Repeat("0", 32)}}, protocol.CodeBadRequest, "no file"},
		{protocol.Action{Files: []string{inside}, Staged: []string{otherID}}, protocol.CodeBadRequest, "not both"},
	}
	through := 0
	for _, at := range attacks {
		a := at.a
		a.Type, a.Selector = "upload", "#one"
		res := send(t, tab.ID(), one(a))
		if res.OK {
			through++
		}
		if res.Code != at.code || !strings.Contains(res.Error, at.says) {
			t.Errorf("upload %v %v: %s %q, want %s saying %q", a.Files, a.Staged, res.Code, res.Error, at.code, at.says)
		}
		if names, _ := uploadedFiles(t, tab); len(names) != 0 {
			through++
			t.Errorf("upload %v %v set %v", a.Files, a.Staged, names)
		}
	}
	if through != 0 {
		t.Fatalf("%d uploads outside the roots got through", through)
	}

	// Under the root: allowed, and the browser is given a copy.
	cmdMutate(t, tab, protocol.Action{Type: "upload", Selector: "#one", Files: []string{inside}})
	if names, sum := uploadedFiles(t, tab); len(names) != 1 || names[0] != "in.txt" || sum != hexSum([]byte("inside")) {
		t.Fatalf("upload under the root: %v %s", names, sum)
	}
	// Staged over the bus: a file of several chunks, byte for byte.
	big := make([]byte, 2*protocol.StageChunkSize+12345)
	rand.Read(big)
	id := stageFile(t, testConn, subj, tab.ID(), "big.bin", big)
	cmdMutate(t, tab, protocol.Action{Type: "upload", Selector: "#one", Staged: []string{id}})
	if names, sum := uploadedFiles(t, tab); len(names) != 1 || names[0] != "big.bin" || sum != hexSum(big) {
		t.Fatalf("staged upload: %v %s, want big.bin %s", names, sum, hexSum(big))
	}
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Staging refuses what it should, with clear codes: a size over the limit
// (too_large), bytes that do not match the declared digest, a chunk
// larger than a chunk, an unknown operation; and a tab's staged files are
// gone when it closes.
func TestStagingLimitsAndCleanup(t *testing.T) {
	tab := openTab(t, func(o *TabOptions) { o.FileLimits = files.Limits{MaxFile: 1 << 20, MaxTotal: 3 << 20} })
	subj := protocol.DefaultSubjects
	zero := strings.Repeat("0", 64)
	if r := stageReq(t, testConn, subj, tab.ID(), protocol.StageRequest{Op: "begin", Name: "x", Size: 2 << 20, SHA256: zero}); r.OK || r.Code != protocol.CodeTooLarge {
		t.Errorf("a file over the limit: %+v", r)
	}
	var id string
	for i := 0; i < 3; i++ {
		id = stageFile(t, testConn, subj, tab.ID(), fmt.Sprint("f", i), bytes.Repeat([]byte{'a'}, 1<<20))
	}
	if r := stageReq(t, testConn, subj, tab.ID(), protocol.StageRequest{Op: "begin", Name: "x", Size: 1, SHA256: zero}); r.OK || r.Code != protocol.CodeTooLarge {
		t.Errorf("over the tab's total: %+v", r)
	}
	for _, body := range []string{`{"op":"teleport"}`, `{"op":"begin","name":"../x","size":1,"sha256":"` + zero + `"}`, "{\"op\":\"begin\",\"name\":\"a\xff\"}"} {
		msg, err := testConn.Request(subj.TabStage(tab.ID()), []byte(body), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var r protocol.StageReply
		json.Unmarshal(msg.Data, &r)
		if r.OK || r.Code != protocol.CodeBadRequest {
			t.Errorf("%q: %+v", body, r)
		}
	}
	// The files are in a private directory, the node's (others may at
	// most pass through it, to the file the browser's account is given),
	// gone when the tab stops.
	p, err := tab.stage.Path(id)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(filepath.Dir(p))
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm()&0o066 != 0 || int(fi.Sys().(*syscall.Stat_t).Uid) != os.Geteuid() {
		t.Fatalf("stage directory %s: %v %v; want the node's, no one else reading or writing it", dir, fi, err)
	}
	tab.Stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("staged files left after the tab stopped: %v", err)
	}
}

// A plan whose text is not UTF-8 reaches no page: the tab answers
// bad_request naming the field, and the text is never run altered.
func TestPlanWithInvalidUTF8(t *testing.T) {
	tab, _, seq := tabAt(t, "/form.html")
	res := send(t, tab.ID(), []byte("{\"action\":{\"type\":\"fill\",\"selector\":\"#name\",\"text\":\"caf\xe9\"}}"))
	if res.OK || res.Code != protocol.CodeBadRequest || !strings.HasPrefix(res.Error, "action.text: is not valid UTF-8") {
		t.Fatalf("fill with Latin-1 text: %+v", res)
	}
	if tab.Info().Sequence != seq {
		t.Fatalf("a refused plan made a frame")
	}
	cmdExpect(t, tab, "document.getElementById('name').value", `""`)
}
