package main

import (
	"encoding/base64"
	"encoding/json"
	"os"

	"github.com/framebus/framebus/protocol"
)

// clientParam does the work of a parameter declared ClientOnly: it is
// never sent; the CLI applies it to the action's result and may add fields
// to the reply. Keyed by parameter name; TestActionCommands checks every
// ClientOnly parameter of every action has one.
type clientParam func(value any, r *protocol.ActionResult) ([]replyField, error)

var clientParams = map[string]clientParam{
	"out": writeOut,
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
		return nil, protocol.Errorf(protocol.CodeBadRequest, "--out: %v", err)
	}
	r.Value = nil
	return []replyField{{"file", path}, {"bytes", len(data)}}, nil
}
