package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/framebus/framebus/protocol"
)

// Probes of the MCP server from the model's side and an attacker's: what
// a model may send by mistake (wrong types, missing and extra fields,
// huge and odd strings, nesting, ids that are not ids) and what a
// hostile client may try (resource URIs, subscriptions by the hundred).
// Each probe counts what answered with a clear code, what was refused as
// a protocol error, what got through, and what hung; a hole fails its
// test by name.

// probeWait bounds one probing call: bad input is refused before any
// browser work, so a call still running at this deadline hangs.
const probeWait = 30 * time.Second

// outcome is how the server answered one probing call.
type outcome struct {
	rpcErr  error          // a JSON-RPC error (protocol violation)
	isError bool           // a tool result with isError
	code    protocol.Code  // its code
	text    string         // its text
	out     map[string]any // its structured content
	hung    bool           // no answer within probeWait
}

func (o outcome) String() string {
	switch {
	case o.hung:
		return "HUNG"
	case o.rpcErr != nil:
		return "rpc error: " + clip(o.rpcErr.Error())
	case o.isError:
		return "isError " + clip(o.text)
	default:
		return "ok " + clip(o.text)
	}
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// rawCall calls a tool with arguments sent as they are (raw JSON, so an
// array, a string or null reach the server unaltered).
func (s *session) rawCall(tool string, args json.RawMessage) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), probeWait)
	defer cancel()
	params := &mcp.CallToolParams{Name: tool}
	if args != nil {
		params.Arguments = args
	}
	res, err := s.cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return outcome{hung: true}
		}
		return outcome{rpcErr: err}
	}
	o := outcome{isError: res.IsError}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			o.text += tc.Text
		}
	}
	data, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(data, &o.out)
	if code, ok := o.out["code"].(string); ok {
		o.code = protocol.Code(code)
	}
	return o
}

// tally counts outcomes by kind.
type tally map[string]int

func (t tally) add(kind string) { t[kind]++ }

func (t tally) String() string {
	var keys []string
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, t[k])
	}
	return b.String()
}

// toolSchemas are the served tools' input schemas, by name.
func (s *session) toolSchemas(t *testing.T) map[string]map[string]any {
	t.Helper()
	tools, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, tool := range tools.Tools {
		data, _ := json.Marshal(tool.InputSchema)
		var sch map[string]any
		if err := json.Unmarshal(data, &sch); err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = sch
	}
	return out
}

// wrongValues are values of another JSON type than a schema's.
func wrongValues(typ any) []string {
	switch typ {
	case "string":
		return []string{`5`, `true`, `{"a":"b"}`, `["x"]`}
	case "integer":
		return []string{`"3"`, `1.5`, `true`, `{}`, `[1]`}
	case "number":
		return []string{`"3"`, `true`, `{}`}
	case "boolean":
		return []string{`"true"`, `1`, `{}`}
	case "array":
		return []string{`"x"`, `{}`, `[1]`}
	case "object":
		return []string{`"x"`, `[]`, `{"a":1}`}
	}
	return []string{`{}`, `true`} // a duration: string or number
}

// Every tool, every parameter, a value of the wrong type (the other
// parameters absent): bad_request naming the parameter, never a panic,
// a hang, or the call running. Arguments that are not an object (an
// array, a string, a number) are bad_request too, and a parameter no
// tool takes is named.
func TestProbeWrongTypes(t *testing.T) {
	s := start(t, "both")
	schemas := s.toolSchemas(t)
	counts := tally{}
	var holes []string
	names := make([]string, 0, len(schemas))
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		props, _ := schemas[name]["properties"].(map[string]any)
		for prop, p := range props {
			typ := p.(map[string]any)["type"]
			if e, ok := p.(map[string]any)["enum"]; ok && typ == "string" {
				_ = e
			}
			for _, v := range wrongValues(typ) {
				args := json.RawMessage(fmt.Sprintf(`{%q:%s}`, prop, v))
				o := s.rawCall(name, args)
				switch {
				case o.hung:
					counts.add("hung")
					holes = append(holes, fmt.Sprintf("%s %s: hung", name, args))
				case o.rpcErr != nil:
					counts.add("rpcError")
				case o.isError && o.code == protocol.CodeBadRequest && strings.Contains(o.text, prop):
					counts.add("badRequestNamed")
				case o.isError && o.code == protocol.CodeBadRequest:
					counts.add("badRequestUnnamed")
					holes = append(holes, fmt.Sprintf("%s %s: bad_request without naming %s: %s", name, args, prop, o))
				case o.isError:
					counts.add("otherCode:" + string(o.code))
					holes = append(holes, fmt.Sprintf("%s %s: %s", name, args, o))
				default:
					counts.add("accepted")
					holes = append(holes, fmt.Sprintf("%s %s: accepted: %s", name, args, o))
				}
			}
		}
		for _, args := range []string{`[]`, `["x"]`, `"x"`, `5`, `{"noSuchParam":1}`} {
			o := s.rawCall(name, json.RawMessage(args))
			switch {
			case o.hung:
				counts.add("hung")
				holes = append(holes, fmt.Sprintf("%s %s: hung", name, args))
			case o.rpcErr != nil || (o.isError && o.code == protocol.CodeBadRequest):
				counts.add("refusedShape")
			default:
				counts.add("shapeAccepted")
				holes = append(holes, fmt.Sprintf("%s %s: %s", name, args, o))
			}
		}
	}
	t.Logf("%d tools: %s", len(names), counts)
	for _, h := range holes {
		t.Error(h)
	}
}
