// Package files is the node's file boundary: which of the node's files a
// plan may name (Roots, the files.roots setting), and the private
// directory where a tab keeps the files clients send it for upload
// (Stage).
//
// A plan names node paths only under a root. A path is judged by what it
// resolves to: `..` and symlinks are followed first (filepath.EvalSymlinks),
// then the result must lie in a root, which is itself resolved. Reading
// such a file (an upload) opens it and checks again what was opened
// (/proc/self/fd), so a symlink swapped in between cannot redirect the
// read; the bytes are copied into the tab's Stage and the browser is given
// the copy.
//
//	roots, err := files.NewRoots([]string{"/srv/uploads"})
//	resolved, err := roots.Resolve("/srv/uploads/a.pdf") // or *DeniedError
//
// Clients without access to the node's machine stage their own files: a
// StageRequest begin (name, size, sha256), chunks written straight to a
// 0600 file in the tab's 0700 directory, and a commit that checks size and
// digest. The tab refers to a staged file only by the opaque id the node
// chose; the directory goes when the tab closes. Limits bound a tab's
// files, and a Budget shared by every tab's Stage bounds a node's:
//
//	budget := files.NewBudget(1 << 30) // the node's tabs hold 1 GiB together
//	stage := files.NewStage("", files.Limits{Shared: budget})
package files
