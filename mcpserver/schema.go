package mcpserver

import (
	"strings"

	"github.com/framebus/framebus/protocol"
)

// schema is a JSON Schema object, as the tools' input schemas are
// written: built from the action declarations, never by hand per action.
type schema = map[string]any

// Parameters every tab action's tool takes beside its own.
const (
	tabParam     = "tab"
	basedOnParam = "basedOnSequence"
)

// ActionToolName is the tool of an action: browser_<type> for a tab's
// action (wait-for: browser_wait_for), <resource>_<type> for a
// resource's (http_fetch, search_search is search_query).
func ActionToolName(spec protocol.ActionSpec) string {
	name := strings.ReplaceAll(spec.Type, "-", "_")
	switch spec.Resource {
	case "":
		return "browser_" + name
	case protocol.ResourceSearch:
		return "search_query"
	default:
		return spec.Resource + "_" + name
	}
}

// ToolParams are the parameters an action's tool takes: those of its
// declaration sent in a plan (ClientOnly ones are the CLI's), in order.
func ToolParams(spec protocol.ActionSpec) []protocol.Param {
	var out []protocol.Param
	for _, p := range spec.Params {
		if !p.ClientOnly {
			out = append(out, p)
		}
	}
	return out
}

// actionSchema is the input schema of an action's tool.
func actionSchema(spec protocol.ActionSpec) schema {
	props := schema{}
	required := []string{}
	for _, p := range ToolParams(spec) {
		props[p.Name] = paramSchema(p)
		if p.Required && !p.MayBeEmpty {
			required = append(required, p.Name)
		}
	}
	if spec.Resource == "" {
		props[tabParam] = schema{"type": "string",
			"description": "the tab to act on (default: the one browser_tab_select chose, else the first tab listed)"}
		props[basedOnParam] = schema{"type": "integer", "minimum": 1,
			"description": "run only while this frame is the tab's current one (the sequence a result named); else stale_frame and nothing runs"}
		if spec.Mutates || spec.Type == "snapshot" {
			props[pageParam] = schema{"type": "string", "enum": PageModes,
				"description": "what the result shows of the page: delta (what changed since the page you were last shown; the whole page on a new document), full (the whole page), none; a page too long to show comes as a summary and a link to read it. browser_eval shows none unless asked"}
		}
	}
	return schema{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// paramSchema is one parameter's schema, from its kind.
func paramSchema(p protocol.Param) schema {
	help := p.Help
	var s schema
	switch p.Kind {
	case protocol.KindBool:
		s = schema{"type": "boolean"}
	case protocol.KindDuration:
		s = schema{"type": []string{"string", "number"}}
		help += ` (a duration like "500ms", "2s", or a number of milliseconds)`
	case protocol.KindStrings:
		s = schema{"type": "array", "items": schema{"type": "string"}}
	case protocol.KindInt:
		s = schema{"type": "integer", "minimum": max(p.Min, 0)}
	case protocol.KindNumber:
		s = schema{"type": "number", "minimum": 0}
	case protocol.KindMap:
		s = schema{"type": "object", "additionalProperties": schema{"type": "string"}}
	default:
		s = schema{"type": "string"}
		if len(p.Choices) > 0 {
			s["enum"] = p.Choices
		}
	}
	if strings.Contains(p.Help, "CSS selector") && !strings.Contains(p.Help, " ref") {
		help += "; or a ref from a snapshot (e5)"
	}
	s["description"] = help
	return s
}
