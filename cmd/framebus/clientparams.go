package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/framebus/framebus/protocol"
)

// clientParam does the work of a parameter declared ClientOnly: it is
// never sent; the CLI applies it to the action's result and may add fields
// to the reply. Keyed by parameter name; TestActionCommands checks every
// ClientOnly parameter of every action has one.
type clientParam struct {
	// check refuses a value that cannot work before the plan is sent, so
	// a wrong command line is a usage error and costs the tab nothing.
	// Its error names the flag and the value.
	check func(value any) error
	// apply does the work with the action's result.
	apply func(value any, r *protocol.ActionResult) ([]replyField, error)
}

var clientParams = map[string]clientParam{
	"out": {check: checkOut, apply: writeOut},
	// onNode: upload's files are node paths, sent as they are (see
	// stagedUpload); nothing to do with the result.
	"onNode": {check: checkOnNode, apply: func(any, *protocol.ActionResult) ([]replyField, error) { return nil, nil }},
}

// checkOut refuses an --out file that cannot be written: its directory is
// missing or not a directory, or the path is a directory.
func checkOut(value any) error {
	path, _ := value.(string)
	if path == "" {
		return errors.New("--out: the file name is empty")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("--out %s: is a directory; name a file in it", path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("--out %s: cannot write there: directory %s: %v", path, dir, osReason(err))
	case !fi.IsDir():
		return fmt.Errorf("--out %s: cannot write there: %s is not a directory", path, dir)
	}
	return nil
}

// writeOut writes the result's value, base64 data such as a screenshot's
// PNG, to the file named, and replies with the file and its size instead
// of the data.
func writeOut(value any, r *protocol.ActionResult) ([]replyField, error) {
	path, _ := value.(string)
	var text string
	if err := json.Unmarshal(r.Value, &text); err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "--out: the %s result carries no base64 data to write", r.Type)
	}
	data, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "--out: the %s result is not base64: %v", r.Type, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		// The action ran; only the local write failed (exit 1).
		return nil, protocol.Errorf(protocol.CodeBadRequest, "--out %s: could not write the %s result (%d bytes): %v", path, r.Type, len(data), osReason(err))
	}
	r.Value = nil
	return []replyField{{"file", path}, {"bytes", len(data)}}, nil
}

// osReason is the operating system's reason in err ("no such file or
// directory"), without the path the message already names.
func osReason(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}
